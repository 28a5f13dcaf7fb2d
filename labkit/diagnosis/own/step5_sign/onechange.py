"""Is a fixed setup ONE change away from the setup that was diagnosed? As far as labkit can tell.

`changes(before, after, seeds)` compares the two setups method by method and returns
{method: what differs}:
- the source of each method (``inspect``), where both can be read and they are not the same
  function;
- by behaviour, where the source cannot tell (a flag passed to the constructor, a notebook):
  the data hash of ``batches(seed)`` and the init hash of ``make_model(seed)`` on both seeds;
  the optimizer's class, settings and the model's parameters it holds; the loss of the same
  model on the same batch. ``train()`` is compared by its source alone.
"""

from __future__ import annotations

import inspect
import math
import textwrap

import torch

from ....core.hashing import hash_module
from ..step1_capture import setup as proto
from ..step6_decide.evidence import SeedEvidence

METHODS = proto.METHODS + ("val_batches",)


def _source(setup, name: str) -> str | None:
    fn = getattr(type(setup), name, None)
    try:
        return textwrap.dedent(inspect.getsource(fn)) if fn is not None else None
    except (OSError, TypeError):
        return None


def _optimizer(setup, seed: int, models) -> tuple[str, dict, list, str]:
    torch.manual_seed(seed)
    model = proto.make_model(models, seed)  # the same model for both: only the optimizer differs
    opt = proto.make_optimizer(setup, model)
    index = {id(p): i for i, p in enumerate(model.parameters())}
    settings = {k: v for k, v in opt.param_groups[0].items() if k != "params"}
    held = [[index.get(id(p), -1) for p in g["params"]] for g in opt.param_groups]
    return type(opt).__name__, settings, held, hash_module(model)


def _optimizer_change(before, after, seed: int) -> str | None:
    a, b = _optimizer(before, seed, before), _optimizer(after, seed, before)
    if a[0] != b[0]:
        return f"the optimizer is {b[0]} instead of {a[0]}"
    diff = [
        f"{k} {a[1].get(k)!r} -> {b[1].get(k)!r}"
        for k in sorted(set(a[1]) | set(b[1]))
        if repr(a[1].get(k)) != repr(b[1].get(k))
    ]
    if diff:
        return "its settings differ: " + ", ".join(diff[:4])
    if a[2] != b[2] or a[3] != b[3]:
        return "it holds other parameters of the model, or changes the model"
    return None


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b or abs(a - b) <= 1e-6 * max(abs(a), abs(b))


def _loss_value(setup, model, batch):
    try:
        with torch.no_grad():
            return float(proto.loss(setup, model, batch))
    except ValueError as exc:  # the same refusal on both sides is no change
        return str(exc).split(":", 1)[-1]


def _loss_change(before, after, seed: int, batch) -> str | None:
    values = []
    for setup in (before, after):
        if setup is after:  # its own state beside the model (a table, a temperature) for this seed
            torch.manual_seed(seed)
            proto.make_model(after, seed)
        torch.manual_seed(seed)
        model = proto.make_model(before, seed)
        proto.make_optimizer(before, model)  # it may change the model, as the loop sees it
        torch.manual_seed(seed)
        values.append(_loss_value(setup, model, batch))
    if all(isinstance(v, float) for v in values) and _same(*values) or values[0] == values[1]:
        return None
    shown = [f"{v:.4g}" if isinstance(v, float) else "an error" for v in values]
    return f"on the same model and batch it gives {shown[1]} instead of {shown[0]}"


def changes(before, after, evs) -> dict[str, str]:
    """{method: what differs} between the diagnosed setup and the fixed one (see above)."""
    out = {}
    for ev in evs:  # behaviour first: it says what differs, the code only that it does
        fixed = SeedEvidence(after, ev.seed)
        (data0, init0), (data1, init1) = ev.hashes(), fixed.hashes()
        if data0 != data1:
            out.setdefault("batches", f"its data hash on seed {ev.seed} is {data1}, not {data0}")
        if init0 != init1:
            out.setdefault("make_model", f"its init hash on seed {ev.seed} is {init1}, not {init0}")
        if "make_optimizer" not in out:
            found = _optimizer_change(before, after, ev.seed)
            if found:
                out["make_optimizer"] = found
    found = _loss_change(before, after, evs[0].seed, evs[0].batches[0])
    if found:
        out["loss_fn"] = found
    for name in METHODS:
        fa, fb = getattr(type(before), name, None), getattr(type(after), name, None)
        if fa is not fb and _source(before, name) != _source(after, name):
            out.setdefault(name, "its code differs")
    return {name: out[name] for name in METHODS if name in out}


def describe(found: dict) -> str:
    return "; ".join(f"{name}() ({why})" for name, why in found.items())
