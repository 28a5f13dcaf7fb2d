"""Figures for the curve gallery and its quiz: loss, accuracy and update norm, raw points.

Every panel draws what the run logged: training loss per step as points, validation
loss and accuracy at each evaluation, the total update norm per step. A step whose
loss is NaN is marked with a dotted line; nothing is smoothed.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt

from ...core.run import Run

ROWS = ("loss", "val accuracy", "update norm")


def _finite(xs, ys):
    pts = [(x, y) for x, y in zip(xs, ys) if y is not None and math.isfinite(y)]
    return [p[0] for p in pts], [p[1] for p in pts]


def draw_run(run: Run, axes, color: str = "tab:blue", label: str = "", faint: bool = False) -> None:
    """Draw one run into three axes: loss (train points, val line), val accuracy, update norm."""
    alpha = 0.35 if faint else 0.8
    loss_ax, acc_ax, upd_ax = axes
    loss_ax.plot(
        *_finite(run.table["step"], run.table["loss_raw"]),
        ".",
        ms=2,
        color=color,
        alpha=alpha,
        label=f"{label}train (each batch)".strip(),
    )
    loss_ax.plot(
        *_finite(run.evals["step"], run.evals["val_loss"]),
        "-o",
        ms=2,
        lw=1,
        color=color if faint else "tab:orange",
        alpha=alpha + 0.2 * (not faint),
        label=f"{label}val".strip(),
    )
    nan_at = run.first_nonfinite_step()
    if nan_at is not None:
        loss_ax.axvline(nan_at, color="crimson", ls=":", lw=1.2, label=f"NaN from step {nan_at}")
    acc_ax.plot(
        *_finite(run.evals["step"], run.evals["val_acc"]),
        "-o",
        ms=2,
        lw=1,
        color=color,
        alpha=alpha,
    )
    upd_ax.plot(
        *_finite(run.table["step"], run.table["update_norm"]), ".", ms=2, color=color, alpha=alpha
    )
    for ax, name in zip(axes, ROWS):
        ax.set_ylabel(name, fontsize=7)
        ax.tick_params(labelsize=6)
        ax.set_xlim(-2, len(run) + 1)
    acc_ax.set_ylim(-0.05, 1.05)
    upd_ax.set_xlabel("step", fontsize=7)


def plot_case(shown):
    """The case's run on its seed (colour) and the run with the one change (grey), side by side."""
    fig, axes = plt.subplots(1, 3, figsize=(11, 2.6), dpi=72)
    seed = shown.seed
    draw_run(shown.fixed[seed], axes, color="grey", label="after the change: ", faint=True)
    draw_run(shown.run, axes, label="")
    axes[0].legend(fontsize=6)
    fig.suptitle(
        f"case {shown.case.number}: {shown.case.title} (seed {seed}; grey: "
        f"{shown.case.intervention})",
        fontsize=8,
    )
    fig.tight_layout()
    return fig


def plot_quiz(quiz, ncols: int = 4):
    """The quiz's curves, lettered, with no title that gives the answer away."""
    nrows = math.ceil(len(quiz.items) / ncols)
    fig = plt.figure(figsize=(3.1 * ncols, 4.8 * nrows), dpi=72)
    grid = fig.add_gridspec(3 * nrows, ncols, hspace=0.7, wspace=0.4)
    for k, item in enumerate(quiz.items):
        row, col = divmod(k, ncols)
        axes = [fig.add_subplot(grid[3 * row + i, col]) for i in range(3)]
        draw_run(item.run, axes)
        axes[0].set_title(f"curve {item.letter}", fontsize=9)
    return fig
