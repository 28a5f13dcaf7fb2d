"""matplotlib figures of a `Run`. Raw per-step points are always drawn, never only a smoothed line.

Each function takes an optional ``ax`` and returns it, so figures compose.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt

from .run import Run


def _ax(ax, title: str):
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    ax.set_title(title)
    return ax


def _finite(xs, ys):
    pts = [(x, y) for x, y in zip(xs, ys) if y is not None and math.isfinite(y)]
    return [p[0] for p in pts], [p[1] for p in pts]


def _mark_nonfinite(ax, run: Run, column: str = "loss_raw"):
    step = run.first_nonfinite_step(column)
    if step is not None:
        ax.axvline(
            step, color="crimson", ls=":", lw=1.2, label=f"first non-finite {column} @ {step}"
        )


def plot_loss(
    run: Run,
    ax=None,
    *,
    baseline: float | None = None,
    label: str | None = None,
    log: bool = False,
    reported: bool = True,
):
    """Raw per-step loss as points; the logger's reported loss as a line beside it."""
    ax = _ax(ax, f"loss per step ({label or run.meta.get('bug') or 'healthy'})")
    steps = run.table["step"]
    x, y = _finite(steps, run.table["loss_raw"])
    ax.plot(
        x, y, ".", ms=3, alpha=0.6, label=f"{label + ': ' if label else ''}loss_raw (each batch)"
    )
    if reported:
        x, y = _finite(steps, run.table["loss_reported"])
        ax.plot(x, y, "-", lw=1.2, label="loss_reported (what the logger shows)")
    if baseline is not None:
        ax.axhline(baseline, color="grey", ls="--", lw=1, label=f"ln C = {baseline:.3f}")
    _mark_nonfinite(ax, run)
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.legend(fontsize=7)
    return ax


def plot_train_val(run: Run, ax=None):
    """Per-step raw training loss as points; periodic train-eval and val loss as markers."""
    ax = _ax(ax, "train vs val")
    x, y = _finite(run.table["step"], run.table["loss_raw"])
    ax.plot(x, y, ".", ms=2, alpha=0.35, color="tab:blue", label="loss_raw (each batch)")
    x, y = _finite(run.table["step"], run.table["loss_reported"])
    ax.plot(x, y, "-", lw=1, color="tab:blue", label="online train loss (logger's epoch mean)")
    for name, style in (("train_eval_loss", "s-"), ("val_loss", "o-")):
        if name in run.evals:
            x, y = _finite(run.evals["step"], run.evals[name])
            ax.plot(x, y, style, ms=4, label=name)
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.legend(fontsize=7)
    return ax


def plot_norms(run: Run, axes=None):
    """Gradient norm and update norm per layer group, log scale; a None gradient is a gap."""
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    steps = run.table["step"]
    for ax, kind in zip(axes, ("grad_norm", "update_norm")):
        for group in run.groups:
            x, y = _finite(steps, run.table[f"{kind}/{group}"])
            pos = [(a, b) for a, b in zip(x, y) if b > 0]
            zeros = len(y) - len(pos)
            nulls = sum(v is None for v in run.table[f"{kind}/{group}"])
            note = (f" ({nulls} null)" if nulls else "") + (f" ({zeros} exact 0)" if zeros else "")
            bound = run.table.get(f"{kind}_bound/{group}")  # an estimate: its band, shaded
            if bound is not None and any(bound):
                note += " (estimated: band shaded)"
            (dots,) = ax.plot(
                [a for a, _ in pos], [b for _, b in pos], ".", ms=2, label=f"{group}{note}"
            )
            if bound is not None and any(bound):
                band = [(a, b, h) for a, b, h in zip(steps, run.table[f"{kind}/{group}"], bound)]
                band = [(a, b, h) for a, b, h in band if b is not None and b > 0 and h]
                ax.fill_between(
                    [a for a, _, _ in band],
                    [max(b - h, b * 1e-3) for _, b, h in band],
                    [b + h for _, b, h in band],
                    color=dots.get_color(),
                    alpha=0.2,
                    lw=0,
                )
        ax.set_yscale("log")
        ax.set_title(f"{kind} per layer group")
        ax.set_xlabel("step")
        ax.legend(fontsize=7)
    return axes


def plot_compare(runs: dict[str, Run], ax=None, column: str = "loss_raw", log: bool = False):
    """Several runs' raw per-step values on one axis, as points."""
    ax = _ax(ax, column)
    for name, run in runs.items():
        steps = run.table["step"] if column in run.table else run.evals["step"]  # eval columns
        x, y = _finite(steps, run.column(column))
        ax.plot(x, y, ".", ms=2.5, alpha=0.7, label=name)
        step = run.first_nonfinite_step(column)
        if step is not None:
            ax.axvline(step, ls=":", lw=1, color=ax.lines[-1].get_color())
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.legend(fontsize=7)
    return ax
