"""Setups whose module was loaded from a file path (``labkit triage --setup FILE.py:CLASS``),
brought to the ranks the same way.

A rank is a fresh Python process that imports each setup's class by its module's name; a
module loaded from a path has a name no other process can import. `by_path` lists such
modules with their files, and `load_by_path`, in the rank, loads each file under the same
name before the setups are unpickled, as labkit loaded it here (its folder on the path, so
that it may import its neighbours).
"""

from __future__ import annotations

import sys
from importlib.machinery import PathFinder


def importable(module: str) -> bool:
    """True when a fresh process finds `module` by name (built in, or on sys.path)."""
    top = module.split(".")[0]
    return top in sys.builtin_module_names or PathFinder.find_spec(top, sys.path) is not None


def by_path(setups) -> list[tuple[str, str]]:
    """[(module name, file)] for each setup class whose module cannot be imported by name
    but was loaded from a Python file (and is registered under its name)."""
    found = {}
    for setup in setups:
        name = type(setup).__module__
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if name != "__main__" and not importable(name) and path and path.endswith(".py"):
            found[name] = path
    return sorted(found.items())


def load_by_path(modules) -> None:
    """In a rank: each (name, file) of `by_path` loaded under its name, as labkit loaded it."""
    import importlib.util
    import os

    for name, path in modules:
        if name in sys.modules:
            continue
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
        try:
            spec.loader.exec_module(module)
        finally:
            sys.path.pop(0)
