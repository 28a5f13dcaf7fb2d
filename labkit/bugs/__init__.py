"""The bug zoo: training bugs people really ship, each replacing exactly one seam.

    >>> from labkit.bugs import BUGS, get_bug
    >>> get_bug("detach").symptom
    >>> labkit.train(bug="detach")

Each bug lives in its own module with a `BUG` object, in the folder of its triage system:
`h1/` (optimizer and loss), `h2/` (data), `h3/` (instrumentation). Its module docstring
gives Symptom, Mechanism, Fix, the stage of the diagnostic stack, the system and where it
is taught. A module is registered by adding its bug's name and path to `_MODULES` below.
"""

from __future__ import annotations

import importlib

from ._base import STAGES, SYSTEMS, Bug
from ..errors import suggest

_MODULES = {
    # the eight named in the course
    "detach": "h1.detach",
    "missing_optimizer_params": "h1.missing.optimizer_params",
    "zero_lr": "h1.zero_lr",
    "double_shift": "h2.double_shift",
    "padding_in_loss": "h1.padding_in_loss",
    "all_masked_labels": "h2.all_masked_labels",
    "fp16_overflow": "h1.fp16_overflow",
    "wrong_logging_divisor": "h3.wrong_logging_divisor",
    # more that people ship
    "lr_too_high": "h1.lr_too_high",
    "missing_step": "h1.missing.step",
    "loss_from_item": "h1.loss_from_item",
    "double_softmax": "h1.double_softmax",
    "missing_zero_grad": "h1.missing.zero_grad",
    "shuffled_labels": "h2.shuffled_labels",
    "constant_inputs": "h2.constant_inputs",
    "nan_in_inputs": "h2.nan_in_inputs",
    "stale_log": "h3.stale_log",
}

BUGS: dict[str, Bug] = {}
for _name, _path in _MODULES.items():
    _bug = importlib.import_module(f"{__name__}.{_path}").BUG
    if _bug.name != _name:
        raise RuntimeError(f"bug module {_name!r} registers a bug named {_bug.name!r}")
    BUGS[_name] = _bug


def get_bug(name: str) -> Bug:
    """The registered bug called `name` ("name:variant" for a variant); unknown names get a suggestion."""
    if isinstance(name, Bug):
        return name
    if not isinstance(name, str):
        raise TypeError(f"bug must be a bug name (str); got {type(name).__name__}.")
    base, _, variant = name.partition(":")
    if base not in BUGS:
        close = suggest(base, BUGS).replace(" Did you mean", " did you mean")
        raise ValueError(f"unknown bug {base!r};{close} available: {', '.join(BUGS)}.")
    return BUGS[base].variant(variant) if variant else BUGS[base]


__all__ = ["BUGS", "Bug", "STAGES", "SYSTEMS", "get_bug"]
