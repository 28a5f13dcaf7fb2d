"""Two optional shapes of a learner's setup, seen by labkit's own loops as the plain protocol.

**A carried state** (truncated BPTT, as PyTorch's word_language_model trains its RNN):

    def init_state(self, model, batch): ...       # the state an epoch's first batch starts from
    def loss_fn(self, model, batch, state): ...   # -> (scalar loss, the next state)

labkit's loops (the plain arms, the probes, the audits) then carry the state as the learner's
loop does: from one batch to the *next batch of the same epoch*, detached in between
(``repackage_hidden``); any other batch (an epoch's first one, one batch repeated by the
overfit probe, a changed copy in an audit) starts from ``init_state(model, batch)``.

**A loop without torch.optim** (``p.data.add_(p.grad, alpha=-lr)`` after ``clip_grad_norm_``):

    def make_optimizer(self, model): return None  # there is no optimizer
    def update(self, model): ...                  # the learner's own update, gradients given

labkit wraps ``update`` in `LoopUpdate`, an optimizer whose ``step()`` calls it, so the
plain arms run the learner's own update rule; an arm that divides the learning rate
scales the update the rule made.
"""

from __future__ import annotations

import math
import weakref

import torch

from . import setup as proto


def detached(state):
    """The state cut from its graph, whatever its structure (a tensor, tuples of them)."""
    if torch.is_tensor(state):
        return state.detach()
    if isinstance(state, (tuple, list)):
        return type(state)(detached(s) for s in state)
    if isinstance(state, dict):
        return {k: detached(v) for k, v in state.items()}
    return state


class LoopUpdate(torch.optim.Optimizer):
    """The learner's ``update(model)`` as an optimizer: ``step()`` applies it, and a group's
    lr (1.0 as built) scales the change it made."""

    def __init__(self, model, update):
        params = [p for p in model.parameters() if p.requires_grad]
        if not params:
            raise ValueError(
                f"{type(model).__name__} has no trainable parameter for update() to move."
            )
        super().__init__(params, {"lr": 1.0})
        self._model, self._update = model, update

    @torch.no_grad()
    def step(self, closure=None):
        scale = [g["lr"] for g in self.param_groups]
        before = [
            [p.detach().clone() for p in g["params"]] if s != 1.0 else None
            for g, s in zip(self.param_groups, scale)
        ]
        with torch.enable_grad():
            self._update(self._model)
        for g, s, kept in zip(self.param_groups, scale, before):
            if kept is not None:
                for p, b in zip(g["params"], kept):
                    p.copy_(b + s * (p - b))


class Adapted:
    """The learner's setup with ``init_state`` and/or ``update``, speaking the plain
    five-method protocol; anything else is the learner's own object."""

    def __init__(self, setup):
        object.__setattr__(self, "setup", setup)
        object.__setattr__(self, "_states", weakref.WeakKeyDictionary())  # model -> (inputs, state)
        object.__setattr__(self, "_next", {})  # id(inputs) -> the next batch's inputs in its epoch
        object.__setattr__(self, "_kept", [])  # the epochs whose order is known (ids stay valid)
        object.__setattr__(
            self, "_batches", setup.batches
        )  # as built: a wrapper set later calls us

    def __getattr__(self, name):
        value = getattr(self.setup, name)
        if name == "val_batches" and callable(value):  # only where the learner has it
            return lambda seed: self._learn(value(seed))
        return value

    def __setattr__(self, name, value):  # e.g. the replay's wrapper of batches()
        setattr(self.setup, name, value)

    def __delattr__(self, name):
        delattr(self.setup, name)

    def batches(self, seed):
        return self._learn(self._batches(seed))

    def _learn(self, out):
        if isinstance(out, (list, tuple)):
            try:
                xs = [proto.inputs_of(b) for b in out]
            except (TypeError, ValueError):
                return out
            self._kept.append(xs)
            self._next.update({id(a): b for a, b in zip(xs, xs[1:])})
        return out

    def make_optimizer(self, model):
        opt = self.setup.make_optimizer(model)
        if opt is not None:
            return opt
        update = getattr(self.setup, "update", None)
        return (
            LoopUpdate(model, update) if callable(update) else None
        )  # None: refused, with a sentence

    def loss_fn(self, model, batch):
        if not callable(getattr(self.setup, "init_state", None)):
            return self.setup.loss_fn(model, batch)
        x = proto.inputs_of(batch)
        last = self._states.get(model)
        if last is not None and self._next.get(id(last[0])) is x:
            state = last[1]
        else:
            state = self.setup.init_state(model, batch)
        out = self.setup.loss_fn(model, batch, state)
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise TypeError(
                f"{type(self.setup).__name__}.loss_fn(model, batch, state) returned "
                f"{type(out).__name__}; with init_state() it must return (loss, next_state)."
            )
        self._states[model] = (x, detached(out[1]))
        return out[0]


def adapt(setup):
    """`setup` as the plain protocol: wrapped when it has ``init_state`` or ``update``, else
    itself. The wrapper's class carries the learner's class name, for the sentences."""
    if isinstance(setup, Adapted) or not any(
        callable(getattr(setup, m, None)) for m in ("init_state", "update")
    ):
        return setup
    return type(type(setup).__name__, (Adapted,), {})(setup)


def effective_lr(update: float | None, grad: float | None) -> float:
    """A step without an optimizer has no lr to read: update norm / gradient norm is the
    step size plain SGD would have taken (nan where either is unknown or 0)."""
    if not update or not grad or not math.isfinite(grad):
        return math.nan
    return update / grad
