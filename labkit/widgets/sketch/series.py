"""The named series of a SketchForecast: which setup each predicts, and scoring them.

A series maps a name to the run it predicts: ``None`` (the healthy setup of `config`), a
bug name, a `Config`, or a ``(Config, bug)`` pair. Several names may share one setup,
as Lab 15's three hypotheses about the same baseline do.
"""

from __future__ import annotations

import math

from ...core.config import Config
from ...errors import check_choice

QUANTITIES = ("loss", "grad_norm")
COLUMN = {"loss": "loss_raw", "grad_norm": "grad_norm"}


def label(quantity: str) -> str:
    return {"loss": "loss", "grad_norm": "gradient norm"}[quantity]


def resolve_series(config, bug, series) -> dict:
    """{name: (config, bug)} for every series; one series named "loss" without `series`."""
    out = {"loss": (config, bug)} if series is None else _named(config, bug, series)
    if any(isinstance(b, str) for _, b in out.values()):
        from ...bugs.inject import resolve

        for cfg, b in out.values():  # an unknown bug name fails here, with a suggestion
            resolve(cfg if isinstance(cfg, Config) else None, b, None, {})
    return out


def _named(config, bug, series) -> dict:
    if not isinstance(series, dict) or not series:
        raise TypeError(
            "series must be a dict naming each curve, e.g. {'healthy': None, "
            f"'detached': 'detach'}}; got {series!r}."
        )
    if bug is not None:
        raise ValueError(
            "Give the bug of each curve in series={name: bug}, not bug=, when "
            "the sketch has several curves."
        )
    out = {}
    for name, setup in series.items():
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"series names must be non-empty text; got {name!r}.")
        if isinstance(setup, tuple) and len(setup) == 2 and isinstance(setup[0], Config):
            out[name] = setup
        elif isinstance(setup, Config):
            out[name] = (setup, None)
        elif setup is None or isinstance(setup, str):
            if config is None and setup is None:
                raise ValueError(
                    f"series {name!r} is the healthy setup, but no config= was "
                    "given to say which one; pass config=labkit.Config(...)."
                )
            out[name] = (config, setup)
        else:
            raise TypeError(
                f"series {name!r} must map to None, a bug name, a Config or a "
                f"(Config, bug) pair; got {type(setup).__name__}."
            )
    return out


def as_dict(param: str, value, names: list) -> dict:
    """`points`/`nan_step` given for one series (a plain value) or per series (a dict)."""
    if value is None:
        return {}
    if isinstance(value, dict):
        for name in value:
            check_choice(f"{param} key", name, names)
        return dict(value)
    if len(names) > 1:
        raise TypeError(
            f"{param} must be a dict {{series name: ...}} when the sketch has "
            f"several curves ({', '.join(names)}); got {type(value).__name__}."
        )
    return {names[0]: value}


def note_for(sketch, name) -> str:
    """A forecast's note: ``key/series[/quantity]``, then the sketch's own note."""
    parts = [sketch.key or "", name if len(sketch.series_names) > 1 or sketch.key else ""]
    parts += [sketch.quantity] if sketch.quantity != "loss" else []
    tag = "/".join(p for p in parts if p)
    return " | ".join(p for p in (tag, sketch.note) if p)


def seal_series(sketch) -> dict:
    """Seal every series of `sketch` for its own setup and add each to its history."""
    if all(c is None and b is None for c, b in sketch._setups.values()):
        raise ValueError(
            "This sketch was made without config or bug, so there is no setup to "
            "seal it for; make it with SketchForecast(config=..., bug=...)."
        )
    names = sketch.series_names
    empty = [
        n for n in names if not sketch._current(n)["points"] and sketch._current(n)["nan_step"] != 0
    ]
    if empty and len(names) > 1:
        raise ValueError(
            f"Draw {', '.join(repr(n) for n in empty)} as well before sealing: "
            "click a name above the chart to switch curves."
        )
    made = {n: sketch.forecast(n).seal(*sketch._setups[n]) for n in names}
    for f in made.values():
        sketch.history.add(f, drawn=not sketch._from_code)
    return made


def score_series(sketch, runs, *, show: bool = True) -> dict:
    """{name: ForecastScore} for every sealed series, each kept in the sketch's history."""
    names = sketch.series_names
    if not isinstance(runs, dict):
        if len(names) > 1:
            raise TypeError(
                f"This sketch has {len(names)} curves; pass runs as a dict "
                f"{{{', '.join(repr(n) + ': run' for n in names)}}}."
            )
        runs = {names[0]: runs}
    missing = [n for n in names if n not in runs]
    for name in runs:
        check_choice("runs key", name, names)
    if missing:
        raise ValueError(
            f"runs has no run for {', '.join(map(repr, missing))}; score every curve you sealed."
        )
    forecasts = sketch.forecasts()
    scores = {n: forecasts[n].score(runs[n], COLUMN[sketch.quantity]) for n in names}
    from ...store.sqlite import StoreConflict

    for n in names:
        try:
            sketch.history.add(forecasts[n], scores[n])
        except StoreConflict:
            if not getattr(sketch, "restored", False):
                raise  # a restored seal keeps the score it got first: it counts once
    if show:
        _show(sketch, forecasts, runs, scores)
    return scores


def _show(sketch, forecasts, runs, scores) -> None:
    """The sketch over the runs' raw points, then one line per series."""
    import matplotlib.pyplot as plt

    try:
        from IPython.display import display
    except ImportError:  # no IPython: print the lines only
        display = None
    column = COLUMN[sketch.quantity]
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for i, name in enumerate(sketch.series_names):
        colour = sketch.colours[i]
        run = runs[name]
        pts = [
            (s, v)
            for s, v in zip(run.table["step"], run.table[column])
            if v is not None and math.isfinite(v)
        ]
        ax.plot(
            [p[0] for p in pts],
            [p[1] for p in pts],
            ".",
            ms=3,
            alpha=0.5,
            color=colour,
            label=f"{name}: actual (raw, every step)",
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
        if f.nan_step is not None:
            ax.axvline(f.nan_step, color=colour, ls=":", lw=1)
    if sketch.log_scale:
        ax.set_yscale("log")
    ax.set(
        xlabel="step",
        ylabel=label(sketch.quantity) + (" (log)" if sketch.log_scale else ""),
        title="your sealed sketch against the run",
    )
    ax.legend(fontsize=7)
    if display is not None:
        display(fig)
    plt.close(fig)
    for name in sketch.series_names:
        s = scores[name]
        err = "n/a" if s.mean_log_error is None else f"{s.mean_log_error:.2f}"
        print(
            f"{name}: log error {err}, shape {s.shape_predicted} vs {s.shape_actual}, "
            f"NaN step {s.nan_predicted} vs {s.nan_actual}. {s.verdict}"
        )
