"""Every call into the learner's setup under the triage's deadline (`budget.within`).

``with bounded(setup): ...`` shadows the setup's methods on the instance itself with timed
calls, so each call labkit makes anywhere in the triage (``setup.loss_fn(model, batch)`` in
a probe, ``setup.batches(seed)`` in a check) is stopped when the budget runs out, with a
sentence naming the call. The class is left alone (the one-change check reads its code),
and the instance is put back as it was when the block ends. An object that takes no
attributes (``__slots__``) keeps only the deadline on train() (`setup.call`).
"""

from __future__ import annotations

from contextlib import contextmanager

import torch.nn as nn

from ....core.process import torch_state
from .budget import GRACE_S, within

METHODS = (
    "make_model",
    "make_optimizer",
    "batches",
    "val_batches",
    "loss_fn",
    "train",
    "init_state",
    "update",
)
_ABSENT = object()


def shown(args) -> str:
    """A call's arguments in a sentence: a model, a batch, or the value itself."""
    return ", ".join(
        "model"
        if isinstance(a, nn.Module)
        else "batch"
        if isinstance(a, (dict, list, tuple))
        else repr(a)
        for a in args
    )


def _timed(setup, name: str, fn):
    def timed(*args, **kwargs):
        what = f"{type(setup).__name__}.{name}({shown(args)})"
        with torch_state.call(what):  # a global setting it changes is noted (`as_found`)
            return within(
                lambda: fn(*args, **kwargs), what, grace=0.0 if name == "train" else GRACE_S
            )

    timed.labkit_bounded = True  # labkit's, not the learner's own (the replay wraps it too)
    return timed


@contextmanager
def bounded(*setups):
    """Within the block, every method of `setups` (METHODS) runs under `within`."""
    undo = []
    for setup in setups:
        for name in METHODS:
            fn = getattr(setup, name, None)
            if not callable(fn):
                continue
            before = getattr(setup, "__dict__", {}).get(name, _ABSENT)
            ours = _timed(setup, name, fn)
            try:
                object.__setattr__(setup, name, ours)
            except (AttributeError, TypeError):  # __slots__, a built-in type
                continue
            undo.append((setup, name, before, ours))
    try:
        yield
    finally:
        for setup, name, before, ours in reversed(undo):
            now = getattr(setup, "__dict__", {}).get(name, _ABSENT)
            if now is not ours and now is not _ABSENT:
                continue  # the setup put a value of its own there during the block: it stays
            if before is not _ABSENT:
                object.__setattr__(setup, name, before)
            elif (
                now is not _ABSENT
            ):  # a wrapper inside the triage (the replay's) may have removed it
                object.__delattr__(setup, name)
