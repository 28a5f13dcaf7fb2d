"""A run seen through one of its other curves, so a sketch of that curve can be scored.

`ForecastScore` compares a sketch with ``run.table["loss_raw"]``. An exercise that asks for
a sketch of another curve of the same run (the logger's epoch mean, the end-of-epoch
evaluations, accuracy) scores it against `series_view(run, column)`: the same run (its
config hash and start time, which prove the sketch came first) whose ``loss_raw`` holds
that curve. A per-step column is taken as it is; an evaluation column, which has a value
only at its evaluation steps, is joined linearly between them, so that every step a sketch
can touch has a value; before the first evaluation it starts from `start` (e.g. the loss at
step 0, where an evaluation and the raw loss agree) or, without one, is held flat. The raw
points stay in ``run.evals``; the view only feeds the score, and `show_scores` draws the
measured points only.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.run import Run


def series_view(run: Run, column: str, start: float | None = None) -> Run:
    """`run` with ``table["loss_raw"]`` replaced by `column` (a table or an evals column)."""
    steps = list(run.table["step"])
    if column in run.table:
        values = list(run.table[column])
    elif column in run.evals:
        at, ys = list(run.evals["step"]), list(run.evals[column])
        if start is not None and at[0] > steps[0]:
            at, ys = [steps[0], *at], [start, *ys]
        values = [_interpolate(at, ys, s) for s in steps]
    else:
        names = sorted(set(run.table) | set(run.evals))
        raise ValueError(
            f"column={column!r} is neither a table nor an evals column of this run; "
            f"columns are {', '.join(names)}."
        )
    return replace(
        run, table={**run.table, "loss_raw": values}, meta={**run.meta, "series": column}
    )  # the score names what was forecast


def _interpolate(at: list, ys: list, step: int) -> float:
    if step <= at[0]:
        return ys[0]
    for (s0, y0), (s1, y1) in zip(zip(at, ys), zip(at[1:], ys[1:])):
        if s0 <= step <= s1:
            return y0 + (y1 - y0) * (step - s0) / (s1 - s0)
    return ys[-1]


def raw_points(run: Run, column: str) -> tuple[list, list]:
    """(steps, values) where `column` was really measured: every step, or each evaluation."""
    if column in run.table:
        return list(run.table["step"]), list(run.table[column])
    return list(run.evals["step"]), list(run.evals[column])


def show_scores(sketch, measured: dict, scores: dict, ylabel: str = "loss") -> None:
    """The sealed sketch over the points each series really measured, and one line per score.

    `measured` is {series name: (steps, values)}, e.g. from `raw_points`: an evaluation
    curve is drawn at its evaluation steps only, as markers, never as the joined line the
    score used between them.
    """
    import matplotlib.pyplot as plt

    forecasts = sketch.forecasts()
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for name, colour in zip(sketch.series_names, sketch.colours):
        steps, values = measured[name]
        ax.plot(
            steps,
            values,
            "o" if len(steps) < 60 else ".",
            ms=3,
            color=colour,
            alpha=0.7,
            label=f"{name}: measured",
        )
        f = forecasts[name]
        ax.plot(
            [p[0] for p in f.points],
            [p[1] for p in f.points],
            "--",
            lw=2,
            color=colour,
            label=f"{name}: your sketch",
        )
    ax.set(xlabel="step", ylabel=ylabel, title="your sealed sketch against the run")
    ax.legend(fontsize=7)
    plt.show()
    for name, s in scores.items():
        err = "n/a" if s.mean_log_error is None else f"{s.mean_log_error:.2f}"
        print(f"{name}: log error {err}. {s.verdict}")
