"""The bug zoo: training bugs people really ship, each replacing exactly one seam.

    >>> from labkit.bugs import BUGS, get_bug
    >>> get_bug("detach").symptom
    >>> labkit.train(bug="detach")

Each bug lives in its own module with a `BUG` object; its module docstring
gives Symptom, Mechanism, Fix, the stage of the diagnostic stack, the triage
system (H1 optimizer/loss, H2 data, H3 instrumentation) and where it is taught.
A module is registered by adding its name to `_MODULES` below.
"""

from __future__ import annotations

import importlib

from ._base import STAGES, SYSTEMS, Bug
from ..errors import suggest

_MODULES = ()

BUGS: dict[str, Bug] = {}
for _name in _MODULES:
    _bug = importlib.import_module(f"{__name__}.{_name}").BUG
    if _bug.name != _name:
        raise RuntimeError(f"bug module {_name!r} registers a bug named {_bug.name!r}")
    BUGS[_name] = _bug


def get_bug(name: str) -> Bug:
    """The registered bug called `name`; an unknown name gets a suggestion."""
    if isinstance(name, Bug):
        return name
    if name not in BUGS:
        listed = ", ".join(BUGS) or "(none registered)"
        raise ValueError(f"unknown bug {name!r};{suggest(name, BUGS).replace(' Did you mean', ' did you mean')}"
                         f" available: {listed}.")
    return BUGS[name]


__all__ = ["BUGS", "Bug", "STAGES", "SYSTEMS", "get_bug"]
