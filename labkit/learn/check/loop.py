"""The "write the loop from memory" check: run the learner's `train_step` on a reference
model and compare what it did with the reference step, from behaviour alone.

The model starts with a stale gradient already in every ``.grad`` (from another batch,
as after a previous step), and ``optimizer.step`` is watched: the gradient it sees tells
a missing ``zero_grad`` (stale + fresh), a step before ``backward`` (stale, or nothing)
and a loss cut from its graph (backward never reaches the weights) apart.

`observe` runs the learner's function and reports what it did as plain numbers; `decide`
judges them against a reference step it makes itself. In a notebook the two run one after
the other; `labkit grade` runs `observe` alone in a process of its own and `decide` in its
own, so nothing the function does there (printing a verdict, writing to any file it finds
open) can say more than what it did to the weights.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from ..lessons.mechanism import reference_batch, reference_setup, reference_step
from ._base import CheckFailed, answer_check

TOL = dict(rtol=1e-4, atol=1e-6)


def _grads(model) -> list:
    return [None if p.grad is None else p.grad.detach().clone() for p in model.parameters()]


def _state(grads, stale, fresh) -> str:
    """Which gradient `grads` holds: none, zero, stale, fresh, sum (stale + fresh) or other."""
    if all(g is None for g in grads):
        return "none"
    if any(g is None for g in grads):
        return "other"
    if all(float(g.abs().max()) == 0.0 for g in grads):
        return "zero"
    for name, want in (
        ("fresh", fresh),
        ("stale", stale),
        ("sum", [a + b for a, b in zip(stale, fresh)]),
    ):
        if all(torch.allclose(g, w, **TOL) for g, w in zip(grads, want)):
            return name
    return "other"


def _watch(optimizer, model, seen: list) -> None:
    """Record the gradients optimizer.step() finds each time it is called."""
    original = optimizer.step

    def step(*args, **kwargs):
        seen.append(_grads(model))
        return original(*args, **kwargs)

    optimizer.step = step


def _fresh_gradient(model, batch) -> list:
    twin = copy.deepcopy(model)
    twin.zero_grad(set_to_none=True)
    F.cross_entropy(twin(batch[0]), batch[1]).backward()
    return _grads(twin)


def _setup():
    """The reference model, its optimizer and batch, with the previous batch's gradient
    already in every ``.grad``; and that stale gradient."""
    model, optimizer, batch = reference_setup(seed=0)
    old = reference_batch(seed=0, offset=64)  # the batch before: its gradient is left in .grad
    F.cross_entropy(model(old[0]), old[1]).backward()
    return model, optimizer, batch, _grads(model)


def _plain(tensors) -> list:
    return [None if t is None else t.tolist() for t in tensors]


def observe(train_step) -> dict:
    """What `train_step` did to the reference model, as plain data (lists of numbers): the
    gradients the first ``optimizer.step()`` found and how many steps ran, the gradients and
    weights it left, the error it raised. `labkit grade` runs this alone in a process of its
    own (what it sends stays well inside a pipe's 64 KB); `decide` judges."""
    if not callable(train_step):
        raise CheckFailed(
            f"Pass your function itself, train_step, not {type(train_step).__name__}."
        )
    model, optimizer, batch, _ = _setup()
    seen: list = []
    _watch(optimizer, model, seen)
    error = None
    try:
        train_step(model, optimizer, batch)
    except Exception as exc:  # noqa: BLE001 -- any error in the learner's code is the answer
        error = [type(exc).__name__, str(exc)]
    return {
        "error": error,
        "steps": len(seen),
        "seen": [_plain(g) for g in seen[:1]],  # the first step's: all `decide` reads
        "grads": _plain(_grads(model)),
        "weights": _plain(p.detach() for p in model.parameters()),
    }


def _tensors(values, like) -> list:
    """`values` (lists of numbers, or None) as tensors shaped as `like`; ValueError if not."""
    if not isinstance(values, list) or len(values) != len(like):
        raise ValueError("not one entry per parameter")
    out = []
    for v, t in zip(values, like):
        if v is None:
            out.append(None)
            continue
        x = torch.tensor(v, dtype=t.dtype)
        if x.shape != t.shape:
            raise ValueError(f"shape {tuple(x.shape)}, not {tuple(t.shape)}")
        out.append(x)
    return out


def _raised(error) -> None:
    """The teaching sentence for the error train_step raised, as CheckFailed."""
    name, text = (list(error) + ["", ""])[:2] if isinstance(error, list) else ("Exception", "")
    name, text = str(name), str(text)
    if name == "AttributeError" and "'float'" in text and "backward" in text:
        raise CheckFailed(
            "Your train_step calls backward() on a Python float: .item() turns "
            "the loss into a plain number with no graph, so keep the tensor for "
            "backward() and use .item() only for the value you log."
        )
    if name == "RuntimeError" and "modified by an inplace operation" in text:
        raise CheckFailed(
            "optimizer.step() changed the weights before loss.backward() ran, "
            "and autograd needs the weights the forward pass used: call "
            "backward() first, then step()."
        )
    first = (text.splitlines() or [""])[0] if name == "RuntimeError" else text
    raise CheckFailed(
        f"Your train_step raised {name} ({first}); it is called as "
        "train_step(model, optimizer, (inputs, targets))."
    )


def decide(observed: dict) -> str:
    """The verdict on what `observe` saw, against the reference step made here: a gradient
    or weights that are not exactly the reference's never pass, however they were reported."""
    model, optimizer, batch, stale = _setup()
    params = list(model.parameters())
    fresh = _fresh_gradient(model, batch)
    before = [p.detach().clone() for p in params]
    try:
        if observed["error"] is not None:
            _raised(observed["error"])
        seen = [_tensors(g, params) for g in observed["seen"][:1]]
        steps = observed["steps"]
        if type(steps) is not int or steps < len(seen) or (steps and not seen):
            raise ValueError(f"{steps!r} steps with {len(seen)} seen")
        grads, weights = _tensors(observed["grads"], params), _tensors(observed["weights"], params)
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise CheckFailed(
            f"What your train_step did could not be read ({type(exc).__name__}: "
            f"{str(exc)[:120]}); it is called as train_step(model, optimizer, (inputs, targets))."
        ) from None
    after = _state(grads, stale, fresh)
    moved = any(w is None or not torch.equal(w, b) for w, b in zip(weights, before))
    if after in ("none", "stale", "zero"):
        raise CheckFailed(
            "backward() never reached the weights (their .grad is not this batch's "
            "gradient): call loss.backward() on the tensor the model produced, not "
            "on a loss rebuilt from .item(), detached, or made under torch.no_grad()."
        )
    if not steps:
        raise CheckFailed(
            "optimizer.step() never ran: the gradients were computed, but nothing "
            "moved the weights, so the loss cannot change."
        )
    if steps > 1:
        raise CheckFailed(
            f"optimizer.step() ran {steps} times in one train_step; one batch "
            "should give exactly one step."
        )
    at_step = _state(seen[0], stale, fresh)
    if at_step == "sum":
        raise CheckFailed(
            "optimizer.step() used the old gradient plus the new one: zero_grad() is "
            "missing, so .grad keeps adding up from batch to batch."
        )
    if at_step in ("none", "zero", "stale"):
        held = "the previous batch's gradient" if at_step == "stale" else "no gradient"
        raise CheckFailed(
            f"optimizer.step() ran before loss.backward(): at that moment .grad held "
            f"{held}, so the step did not use this batch; call backward() first, "
            "then step()."
        )
    reference = copy.deepcopy(model)
    reference_step(reference, torch.optim.SGD(reference.parameters(), lr=0.1), batch)
    same = all(
        w is not None and torch.allclose(w, r, **TOL)
        for w, r in zip(weights, reference.parameters())
    )
    if at_step != "fresh" or not moved or not same:
        raise CheckFailed(
            "The step used a gradient or moved the weights differently from the "
            "reference step: use F.cross_entropy on the model's logits and the "
            "optimizer you were given, unchanged."
        )
    return "ok: zero_grad, forward, loss, backward, step: your step matches the reference step"


@answer_check
def loop_train_step(train_step) -> str:
    """Does train_step(model, optimizer, batch) do one correct training step?"""
    return decide(observe(train_step))


loop_train_step.observe, loop_train_step.decide = observe, decide  # `labkit grade` runs the
# learner's function in `observe` alone, in a process of its own, and `decide` in its own
