"""Import paths that moved when labkit was grouped into subpackages.

`SHORT` are short names kept for good: ``labkit.probes`` is ``labkit.diagnosis.probes``,
``labkit.check`` is ``labkit.learn.check`` and ``labkit.checklist`` is
``labkit.learn.checklist``, the very same module objects.
`OLD` are the flat module paths of labkit 0.1; they still import, with a
DeprecationWarning naming the new path, until labkit 0.3.

Two old paths are not here: ``labkit.train`` and ``labkit.diagnose`` are the public
functions of those names, and importing a module under either name would replace
the function on the package.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

SHORT = {"labkit.probes": "labkit.diagnosis.probes", "labkit.check": "labkit.learn.check",
         "labkit.checklist": "labkit.learn.checklist"}
OLD = {
    "labkit.config": "labkit.core.config", "labkit.data": "labkit.core.data",
    "labkit.models": "labkit.core.models", "labkit.seams": "labkit.core.seams",
    "labkit.run": "labkit.core.run", "labkit.record": "labkit.core.record",
    "labkit.metrics": "labkit.core.metrics", "labkit.guards": "labkit.core.guards",
    "labkit._hash": "labkit.core.hashing", "labkit.triage": "labkit.diagnosis.record.triage",
    "labkit.explorer": "labkit.diagnosis.zoo.explorer", "labkit.lab15": "labkit.diagnosis.lab15",
    "labkit.forecast_score": "labkit.forecast.score",
    "labkit.forecast_history": "labkit.forecast.history",
    "labkit.gallery": "labkit.learn.gallery", "labkit.plots": "labkit.core.plots",
}


def target(name: str) -> str | None:
    """The module that `name` stands for now, or None when `name` did not move."""
    for table in (SHORT, OLD):
        for old, new in table.items():
            if name == old or name.startswith(old + "."):
                return new + name[len(old):]
    return None


class MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers an import of a moved path with the module at its new path."""

    def find_spec(self, fullname, path=None, target_=None):
        if fullname.startswith("labkit.") and target(fullname):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return None  # a placeholder; exec_module swaps the real module in

    def exec_module(self, module):
        name = module.__name__
        new = target(name)
        old = next((o for o in OLD if name == o or name.startswith(o + ".")), None)
        if old is not None and name == old:
            warnings.warn(f"{name} moved to {new}; import it from there (the old path works "
                          "until labkit 0.3).", DeprecationWarning, stacklevel=_user_frame())
        # The import system returns whatever sys.modules holds under the name after this
        # call, so both names end up bound to one module object.
        sys.modules[name] = importlib.import_module(new)


def _user_frame() -> int:
    """The stacklevel of the frame that wrote the import. `warnings` itself steps over
    importlib's frames, so only this module's own frames are counted."""
    frame, level = sys._getframe(1), 1
    while frame is not None:
        name = frame.f_code.co_filename
        if name == __file__:
            level += 1
        elif not (name.startswith("<frozen importlib") or "importlib" in name):
            break
        frame = frame.f_back
    return level


def install() -> None:
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedFinder())
