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

from .budget import within

METHODS = ("make_model", "make_optimizer", "batches", "val_batches", "loss_fn", "train",
           "init_state", "update")
_ABSENT = object()


def shown(args) -> str:
    """A call's arguments in a sentence: a model, a batch, or the value itself."""
    return ", ".join("model" if isinstance(a, nn.Module) else "batch" if isinstance(a, (dict, list, tuple))
                     else repr(a) for a in args)


def _timed(setup, name: str, fn):
    def timed(*args, **kwargs):
        return within(lambda: fn(*args, **kwargs), f"{type(setup).__name__}.{name}({shown(args)})")
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
            try:
                object.__setattr__(setup, name, _timed(setup, name, fn))
            except (AttributeError, TypeError):  # __slots__, a built-in type
                continue
            undo.append((setup, name, before))
    try:
        yield
    finally:
        for setup, name, before in reversed(undo):
            if before is _ABSENT:
                object.__delattr__(setup, name)
            else:
                object.__setattr__(setup, name, before)
