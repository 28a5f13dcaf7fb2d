"""torch's process-wide settings, put back as labkit found them after it runs a learner's code.

A triage calls the learner's make_model, train() and loss_fn many times on their behalf. Code
there may change settings that outlive the call: the default dtype, the thread count,
deterministic algorithms, grad mode, anomaly detection, the default device, float32 matmul
precision, and the random number generators (torch's, Python's, NumPy's). Within
``with as_found() as changes:`` they may change as the learner's code wants (a make_model that
sets float64 means it); when the block ends, every one is as it was before, and `changes`
lists each setting that the learner's code changed: (setting, value before, value after, the
first call that changed it, where `call` named it).
"""

from __future__ import annotations

import random
import sys
from contextlib import contextmanager

import torch


def _deterministic():
    return (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )


def _anomaly():
    return (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled())


def _default_device():
    """torch.get_default_device(), without its 20 us where nothing set one (the usual case:
    no torch function mode on the stack, no global device context); `call` reads it twice
    around each of the thousands of calls a triage makes into the learner's code."""
    if (
        torch._C._len_torch_function_stack()
        or getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None) is not None
    ):
        return torch.get_default_device()
    return _CPU


_CPU = torch.device("cpu")


def _set_device(device) -> None:
    torch.set_default_device(None if torch.device(device).type == "cpu" else device)


SETTINGS = {  # name: (read it, set it back); grad mode is per thread: this thread's
    "default dtype": (torch.get_default_dtype, torch.set_default_dtype),
    "threads": (torch.get_num_threads, torch.set_num_threads),
    "deterministic algorithms (on, warn only)": (
        _deterministic,
        lambda v: torch.use_deterministic_algorithms(v[0], warn_only=v[1]),
    ),
    "grad mode": (torch.is_grad_enabled, torch.set_grad_enabled),
    "anomaly detection (on, check NaN)": (_anomaly, lambda v: torch.set_anomaly_enabled(*v)),
    "default device": (_default_device, _set_device),
    "float32 matmul precision": (
        torch.get_float32_matmul_precision,
        torch.set_float32_matmul_precision,
    ),
}
_ACTIVE: list = []  # the `changes` lists of the blocks open now, innermost last


def settings() -> dict:
    """{setting: its value now}."""
    return {name: read() for name, (read, _) in SETTINGS.items()}


def _generators() -> dict:
    state = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if "numpy" in sys.modules:  # never imported here: a learner who uses it has imported it
        state["numpy"] = sys.modules["numpy"].random.get_state()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _restore_generators(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    if "numpy" in state:
        sys.modules["numpy"].random.set_state(state["numpy"])
    if "cuda" in state:
        torch.cuda.set_rng_state_all(state["cuda"])


@contextmanager
def as_found():
    """Every setting of SETTINGS, and the random generators, as they were before the block;
    yields the list of changes the block made (see the module docstring)."""
    before, generators, changes = settings(), _generators(), []
    _ACTIVE.append((changes, before))
    try:
        yield changes
    finally:
        _ACTIVE.remove((changes, before))
        after = settings()
        for name, value in before.items():
            if after[name] != value:
                if not any(c[0] == name for c in changes):
                    changes.append((name, value, after[name], None))
                SETTINGS[name][1](value)
        _restore_generators(generators)


@contextmanager
def call(what: str):
    """Around one call into the learner's code inside `as_found`: a setting it changes is
    noted with `what` (the first call that changed each setting)."""
    if not _ACTIVE:
        yield
        return
    now = settings()
    try:
        yield
    finally:
        after = settings()
        for changes, first in _ACTIVE:
            for name, value in after.items():
                if value != now[name] and not any(c[0] == name for c in changes):
                    changes.append((name, first[name], value, what))


def shown(value) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(map(str, value)) + ")"
    return str(value)


def sentence(changes: list) -> str | None:
    """One sentence for a record's notes: what the learner's code changed and that labkit put
    it back; None when nothing changed."""
    if not changes:
        return None
    said = [
        f"{name} from {shown(old)} to {shown(new)}" + (f" (in {what})" if what else "")
        for name, old, new, what in changes
    ]
    return (
        "Your code changed torch's global settings during the triage: "
        + "; ".join(said)
        + "; labkit set each back as it was before the triage when the triage ended."
    )
