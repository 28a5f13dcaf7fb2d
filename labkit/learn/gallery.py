"""Run the whole bug zoo next to the healthy runs and measure each signature in numbers."""

from __future__ import annotations

import math
import statistics

import matplotlib.pyplot as plt

from ..bugs import BUGS, SYSTEMS
from ..core.run import Run
from ..bugs.inject import train


def run_zoo(seed: int = 0, names=None) -> tuple[dict[str, Run], dict[str, Run]]:
    """(bug name -> Run, task -> healthy Run), all on the same seed."""
    names = list(names or BUGS)
    runs = {name: train(bug=name, seed=seed) for name in names}
    tasks = {r.config["task"] for r in runs.values()}
    return runs, {task: train(task=task, seed=seed) for task in sorted(tasks)}


def _fmt(v, digits=2):
    return (
        "-"
        if v is None
        else ("nan" if isinstance(v, float) and math.isnan(v) else f"{v:.{digits}f}")
    )


def signature(run: Run) -> dict:
    """The numbers that tell bugs apart: loss start/end, NaN step, null and frozen groups."""
    loss = run.table["loss_raw"]
    tail = [v for v in loss[-20:] if math.isfinite(v)]
    reported = run.table["loss_reported"]
    return {
        "loss_first": loss[0],
        "loss_last20": statistics.fmean(tail) if tail else math.nan,
        "reported_last": reported[-1],
        "first_nonfinite": run.first_nonfinite_step(),
        "null_grad_groups": [
            g for g in run.groups if all(v is None for v in run.table[f"grad_norm/{g}"])
        ],
        "zero_update_groups": [
            g for g in run.groups if all(v == 0 for v in run.table[f"update_norm/{g}"])
        ],
        "grad_norm_max": max(
            (v for v in run.table["grad_norm"] if v is not None and math.isfinite(v)), default=None
        ),
    }


def signature_table(
    runs: dict[str, Run], system: str | None = None, healthy: dict[str, Run] | None = None
) -> str:
    """A fixed-width text table of signatures, rounded so notebooks can compare it.

    With `healthy` (task -> Run), the healthy run of each task shown comes first, as the
    yardstick for every row below it."""
    lines = [
        (
            f"{'bug':26s} {'loss0':>6s} {'last20':>7s} {'reported':>8s} {'lr':>6s} {'NaN@':>5s} "
            f"{'max|g|':>8s}  null grads / zero updates"
        )
    ]
    shown = {
        name: run
        for name, run in runs.items()
        if not system or BUGS[name.split(":")[0]].system == system
    }
    tasks = {run.config["task"] for run in shown.values()}
    rows = {f"healthy ({task})": run for task, run in (healthy or {}).items() if task in tasks}
    rows.update(shown)
    for name, run in rows.items():
        s = signature(run)
        nan_at = "-" if s["first_nonfinite"] is None else str(s["first_nonfinite"])
        gmax = "-" if s["grad_norm_max"] is None else f"{s['grad_norm_max']:.2g}"
        groups = (
            f"{len(s['null_grad_groups'])}/{len(run.groups)} null, "
            f"{len(s['zero_update_groups'])}/{len(run.groups)} frozen"
        )
        lr = f"{run.table['lr'][-1]:.2g}"
        lines.append(
            f"{name:26s} {_fmt(s['loss_first']):>6s} {_fmt(s['loss_last20']):>7s} "
            f"{_fmt(s['reported_last'], 3):>8s} {lr:>6s} {nan_at:>5s} {gmax:>8s}  {groups}"
        )
    return "\n".join(lines)


def plot_system(runs: dict[str, Run], healthy: dict[str, Run], system: str, ncols: int = 3):
    """One panel per bug of `system`: its raw loss points beside the healthy run's."""
    names = [n for n in runs if BUGS[n.split(":")[0]].system == system]
    nrows = math.ceil(len(names) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 2.8 * nrows), squeeze=False)
    for ax, name in zip(axes.flat, names):
        run, ok = runs[name], healthy[runs[name].config["task"]]
        ax.plot(ok.table["step"], ok.table["loss_raw"], ".", ms=2, color="grey", label="healthy")
        steps = [s for s, v in zip(run.table["step"], run.table["loss_raw"]) if math.isfinite(v)]
        vals = [v for v in run.table["loss_raw"] if math.isfinite(v)]
        ax.plot(steps, vals, ".", ms=2, color="crimson", label="loss_raw")
        if run.table["loss_reported"] != run.table["loss_raw"] and system == "H3":
            ax.plot(run.table["step"], run.table["loss_reported"], "-", lw=1, label="reported")
        if vals and max(vals) > 20 * max(ok.table["loss_raw"]):
            ax.set_yscale("log")  # a diverging run would flatten the healthy curve
            ax.set_title(f"{name} (log scale)", fontsize=9)
        nan_at = run.first_nonfinite_step()
        if nan_at is not None:
            ax.axvline(nan_at, ls=":", color="crimson", label=f"NaN from step {nan_at}")
        if not ax.get_title():
            ax.set_title(name, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(names) :]:
        ax.axis("off")
    fig.suptitle(f"{system}: {SYSTEMS[system]}", fontsize=11)
    fig.tight_layout()
    return fig
