"""From `labkit.watch`'s per-step rows to a table and a `Run`.

The rows hold 0-d tensors on the device; `columns` reads them back once, in one transfer,
and sums squares per layer group in float64 (the arithmetic `labkit.train` has always used,
so its tables are unchanged). `to_run` lines the learner's logged losses up with the
optimizer steps, gradient accumulation included.
"""

from __future__ import annotations

import math

import torch

from ...errors import choice_error
from . import follow as watch_follow
from .budget import Z, band
from ..run import Run


def columns(w) -> dict[str, list]:
    """Total and per-group norms, the lr, and (with a scaler) amp_scale and skipped."""
    S, P = w.steps, len(w.params)
    out: dict[str, list] = {"grad_norm": [], "update_norm": []}
    if S:
        parts = [
            (plan, torch.cat(blocks).cpu().double(), n)  # (steps, n + updates): one
            for plan, blocks, n in watch_follow.segments(w)
            if blocks
        ]  # read a segment
        pad = torch.nn.functional.pad  # tensors that joined later: 0 in earlier segments
        grads = torch.cat([pad(both[:, :n], (0, P - n)) for _, both, n in parts])
        # (S, P) squared update norms and their variances (0 where exact), each segment by
        # the plan that measured it; not held: 0
        combined = [plan.combine(both[:, n:], n) for plan, both, n in parts]
        updates, variances, rounding = (
            torch.cat([pad(c[k], (0, P - n)) for c, (_, _, n) in zip(combined, parts)])
            for k in range(3)
        )  # rounding: as bounds, summed in squares like the tensors' rounding errors
        present = torch.tensor(
            [row + (False,) * (P - len(row)) for row in w._present], dtype=torch.bool
        )  # (S, P)

        def norms(idx: list[int], key: str) -> None:
            g = (grads[:, idx] ** 2).sum(1).sqrt().tolist()
            out[f"grad_norm{key}"] = [
                v if ok else None for v, ok in zip(g, present[:, idx].any(1).tolist())
            ]
            norm, half = band(
                updates[:, idx].sum(1), variances[:, idx].sum(1), (rounding[:, idx] ** 2).sum(1)
            )
            out[f"update_norm{key}"] = norm.tolist()
            halves[key] = half.tolist()

        halves: dict[str, list] = {}
        norms(list(range(P)), "")
        for name, idx in w.groups.items():
            norms(idx, f"/{name}")
        if any(h for col in halves.values() for h in col):  # beside the values it bounds
            for key, col in halves.items():
                out[f"update_norm_bound{key}"] = col
    else:
        for name in w.groups:
            out[f"grad_norm/{name}"], out[f"update_norm/{name}"] = [], []
    lrs = [[_float(v) for v in (row if isinstance(row, tuple) else (row,))] for row in w._lrs]
    out["lr"] = [row[0] for row in lrs]
    if len(w.optimizer.param_groups) > 1:
        for i in range(len(w.optimizer.param_groups)):
            out[f"lr/{i}"] = [row[i] if i < len(row) else None for row in lrs]
    if w.scaler is not None:
        out["amp_scale"] = [_float(s) for s in w._scales]
        out["skipped"] = list(w._skipped)
    return out


def describe(w) -> dict:
    """What `run.meta["watch"]` says: the budget, and which groups are estimated, how."""
    estimated, computed = {}, {}
    covered = set() if w.plan.formula is None else set(w.plan.formula.index)
    for name, idx in w.groups.items():
        hows = [f"{w.names[i]}: {w.plan.samples[i].how}" for i in idx if i in w.plan.samples]
        if hows:
            estimated[name] = "; ".join(hows) + (
                f" (unbiased at every step; update_norm_bound is the half-width of its band of "
                f"{Z} standard errors; gradient norms are exact)"
            )
        if any(i in covered for i in idx):
            computed[name] = w.plan.formula.how
    return {
        "budget_bytes": w.budget,
        "param_bytes": w.param_bytes,
        "kept_bytes": kept_bytes(w),
        "exact": not estimated,
        "estimated": estimated,
        "exact_groups": [g for g in w.groups if g not in estimated],
        "from_optimizer": computed,
        "steps": w.steps,
        "skipped_steps": sum(w._skipped),
        "findings": list(w.findings),
        **({"ranks": w._ranks.describe()} if w._ranks is not None else {}),
    }


def kept_bytes(w) -> int:
    """What the watch keeps beside the parameters: the plan's copies, and a small model's
    rows of gradients and updates not yet normed (`labkit.core.watch.ring`)."""
    return w.plan.kept_bytes + (w._ring.bytes if w._ring is not None else 0)


def text(w) -> str:
    """`repr(watch)`: what is hooked, how many steps, and the findings."""
    how = "estimated where sampled (update_norm_bound beside them)" if w.plan.estimated else "exact"
    state = "hooked" if w._handles else "closed"
    head = (
        f"Watch({w.model_name}, {type(w.optimizer).__name__}: {len(w.params)} "
        f"tensors in {len(w.groups)} groups, {w.steps} steps, update norms {how}, "
        f"{kept_bytes(w):,} bytes kept, {state})"
    )
    return head + "".join(f"\n  finding: {f}" for f in w.findings)


def to_run(
    w,
    loss_raw,
    *,
    loss_reported=None,
    batch_id=None,
    per_step: str = "mean",
    seed: int | None = None,
    started_at: float | None = None,
    config: dict | None = None,
    data_hash: str | None = None,
    init_hash: str | None = None,
) -> Run:
    """`Watch.run`: the losses lined up with the steps, the norms, and the watch's meta.

    `loss_raw` holds the loss the loop logged, one per optimizer step, or k per step under
    gradient accumulation (k micro-batches per ``optimizer.step()``): then each step's raw
    loss is the mean of its k losses (``per_step="mean"``, the loss of the accumulated
    gradient when each micro-batch loss is divided by k) or the last one
    (``per_step="last"``); counts that do not divide are refused. `loss_reported` (what the
    progress bar showed) may be given per step or per loss; per loss, each step keeps the
    last value shown. `batch_id` is the step's index within its epoch, one per step.
    ``seed``, ``started_at`` (default: when the watch was made; seal forecasts before it),
    ``config``, ``data_hash`` and ``init_hash`` are as in `Run.from_log`.
    """
    raw = _numbers("loss_raw", loss_raw)
    S = w.steps
    if per_step not in ("mean", "last"):
        raise choice_error("per_step", per_step, ("mean", "last"))
    if S == 0:
        raise ValueError(
            f"the watch saw no optimizer step while {len(raw)} losses were "
            "logged: is optimizer.step() called, on the optimizer given to "
            "labkit.watch, after the watch was made?"
        )
    if len(raw) < S or len(raw) % S:
        raise ValueError(
            f"loss_raw has {len(raw)} values for {S} optimizer steps; give one loss per "
            "step, or k per step under gradient accumulation (a multiple of the steps). "
            "A GradScaler that skips steps leaves no step behind unless you pass "
            "labkit.watch(..., scaler=scaler)."
        )
    k = len(raw) // S
    table = {"step": list(range(S)), "loss_raw": _per_step(raw, k, per_step)}
    if loss_reported is not None:
        rep = _numbers("loss_reported", loss_reported)
        if len(rep) not in (S, len(raw)):
            raise ValueError(
                f"loss_reported has {len(rep)} values; give one per step "
                f"({S}) or one per loss ({len(raw)})."
            )
        table["loss_reported"] = rep if len(rep) == S else _per_step(rep, k, "last")
    if batch_id is not None:
        if len(batch_id) != S:
            raise ValueError(
                f"batch_id has {len(batch_id)} values; give one per optimizer step ({S})."
            )
        table["batch_id"] = list(batch_id)
    table.update(columns(w))
    meta = {
        "groups": list(w.groups),
        "findings": list(w.findings),
        "watch": {**describe(w), "losses_per_step": k, "per_step": per_step},
    }
    return Run.from_log(
        table,
        seed=seed,
        started_at=started_at or w.started_at,
        config=config,
        data_hash=data_hash,
        init_hash=init_hash,
        meta=meta,
    )


def lr_value(value):
    """A param group's lr as the watch keeps it: a tensor lr is copied, on its device."""
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


def _float(value):
    if value is None:
        return None
    return float(value)


def _numbers(name: str, values) -> list[float]:
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().tolist()
    try:
        out = [float(v) for v in values]
    except (TypeError, ValueError):
        raise TypeError(
            f"{name} must be a list of numbers (e.g. loss.item() per step); got "
            f"{type(values).__name__}."
        ) from None
    if not out:
        raise ValueError(f"{name} is empty; log loss.item() at every step of your loop.")
    return out


def _per_step(values: list[float], k: int, how: str) -> list[float]:
    if k == 1:
        return list(values)
    groups = [values[i : i + k] for i in range(0, len(values), k)]
    return [g[-1] for g in groups] if how == "last" else [math.fsum(g) / k for g in groups]
