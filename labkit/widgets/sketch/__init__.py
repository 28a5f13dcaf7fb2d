"""`SketchForecast`: draw the curves you expect, then seal them before the run.

    >>> w = SketchForecast(config=labkit.Config(), bug="zero_lr")            # one curve
    >>> w = SketchForecast(config=cfg, series={"healthy": None, "detached": "detach"}, key="ex_a")
    >>> w                          # draw with mouse, touch, pen or keys; click a name to switch
    >>> w.require()                # first line of the run cell: refuses until sealed
    >>> w.score({"healthy": run_h, "detached": run_d})   # the sketch over the real raw points

State: the synced traits (the active series) and `_drawn` (the others). Curves given in code
(`points`, or carried for a grader: `labkit.forecast.carry`) are sealed by `require()`.
"""

from __future__ import annotations

import math
from pathlib import Path

import anywidget
import traitlets as t

from ...core.config import Config
from ...diagnosis.record.strict import ZERO_NORM
from ...errors import check_choice, check_number
from ...forecast.forecast import SHAPES, Forecast, check_points
from ...forecast.carry import carried
from ...forecast.history import ForecastHistory
from . import gate as sketch_gate
from .keys import keyboard_controls
from .series import QUANTITIES, as_dict, label, note_for, resolve_series, score_series, seal_series

HERE = Path(__file__).parent
COLOURS = ["#e8710a", "#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"]


class SketchForecast(anywidget.AnyWidget):
    _esm = HERE / "sketch.js"
    _css = HERE / "sketch.css"

    points = t.List().tag(sync=True)  # the active series: [[step, value], ...], increasing in step
    steps = t.Int(200).tag(sync=True)  # the x axis covers steps 0 .. steps-1
    loss_max = t.Float(4.0).tag(sync=True)  # top of the y axis
    log_scale = t.Bool(False).tag(sync=True)
    reference = t.Float(None, allow_none=True).tag(sync=True)  # e.g. ln C, drawn dashed
    reference_label = t.Unicode("").tag(sync=True)
    shape = t.Unicode("").tag(sync=True)  # the preset picked ("" = none); it fills `points`
    nan_step = t.Int(None, allow_none=True).tag(sync=True)  # first step you expect NaN at
    series_names = t.List().tag(sync=True)  # one name per curve, in legend order
    colours = t.List().tag(sync=True)
    active = t.Int(0).tag(sync=True)  # index of the series being drawn
    others = t.List().tag(sync=True)  # [{"index", "points", "nan_step"}] of the other series
    y_label = t.Unicode("loss").tag(sync=True)
    zero_below = t.Float(None, allow_none=True).tag(sync=True)  # a band read as zero (norms)
    sealed = t.Bool(False).tag(sync=True)
    sealed_hash = t.Unicode("").tag(sync=True)  # first 12 hex of the (first) sealed content hash
    seal_requested = t.Int(0).tag(sync=True)  # the Seal button adds 1; Python seals
    message = t.Unicode("").tag(sync=True)  # status or error line shown under the chart
    redraw_requested = t.Int(0).tag(sync=True)  # the Draw again button adds 1; Python unseals
    rendered = t.Int(0).tag(sync=True)  # views a front end drew: a kernel that can wait
    gates_runs = True  # until sealed, every run of this kernel waits (labkit.core.learner.pending)

    def __init__(
        self,
        points=None,
        *,
        config=None,
        bug=None,
        series=None,
        key="",
        shape=None,
        nan_step=None,
        steps=None,
        loss_max=None,
        log_scale=False,
        quantity="loss",
        history_path=None,
        note="",
    ):
        self._ready, self._sealed, self._shown, self.restored = False, None, False, False
        if config is not None and not isinstance(config, (Config, str)):
            raise TypeError(
                f"config must be a labkit Config or a config hash; got {type(config).__name__}."
            )
        check_choice("quantity", quantity, QUANTITIES)
        if not isinstance(key, str):
            raise TypeError(f"key must be text naming the exercise, e.g. 'ex_a'; got {key!r}.")
        self._setups = resolve_series(config, bug, series)  # {name: (config or hash, bug)}
        names = list(self._setups)
        cfg = None
        c0, b0 = next(iter(self._setups.values()))
        if isinstance(c0, Config) or (c0 is None and b0 is not None):
            from ...bugs.inject import resolve

            cfg = resolve(c0, b0, None, {})[0]  # the bug's own setup (e.g. the LM task) counts
        steps = cfg.steps if steps is None and cfg is not None else steps or 200
        check_number("steps", steps, minimum=2, integer=True)
        if shape is not None:
            check_choice("shape", shape, SHAPES)
        if not isinstance(log_scale, bool):
            raise TypeError(f"log_scale must be True or False; got {log_scale!r}.")
        ref, ref_label = None, ""
        if cfg is not None and quantity == "loss":
            size, letter = (cfg.vocab_size, "V") if cfg.task == "lm" else (cfg.n_classes, "C")
            ref, ref_label = math.log(size), f"ln {letter} = {math.log(size):.3f}"
        given, nans = as_dict("points", points, names), as_dict("nan_step", nan_step, names)
        self._from_code = points is not None
        handed = None if points is not None else carried(key, quantity, names)
        if handed:  # a grader re-running a learner's notebook: the curves they sealed
            given = {n: d["points"] for n, d in handed.items()}
            nans = {n: d["nan_step"] for n, d in handed.items()}
            self._from_code = True
        self._drawn = {}
        for name in names:
            nan = nans.get(name)
            check_number(
                "nan_step", nan, minimum=0, maximum=steps - 1, integer=True, allow_none=True
            )
            pts = given.get(name)
            if pts is None and shape is not None:
                preset = Forecast.from_shape(shape, steps, start=ref or math.log(10), nan_step=nan)
                pts, nan = preset.points, preset.nan_step
            pts = [list(p) for p in check_points(pts, None)] if pts else []
            self._drawn[name] = {"points": pts, "nan_step": nan, "shape": shape or ""}
        tops = [p[1] for d in self._drawn.values() for p in d["points"]] + [ref or 1.0]
        loss_max = max(tops) * 1.5 if loss_max is None else loss_max
        check_number("loss_max", loss_max, minimum=0, strict_min=True)
        self._config, self._bug, self.note, self.key, self.quantity = (
            config,
            bug,
            note,
            key,
            quantity,
        )
        self.history = ForecastHistory(history_path)
        first = self._drawn[names[0]]
        super().__init__(
            points=first["points"],
            steps=steps,
            loss_max=float(loss_max),
            log_scale=log_scale,
            reference=ref,
            reference_label=ref_label,
            shape=first["shape"],
            nan_step=first["nan_step"],
            series_names=names,
            colours=[COLOURS[i % len(COLOURS)] for i in range(len(names))],
            y_label=label(quantity),
            others=self._others(0),
            zero_below=ZERO_NORM if quantity == "grad_norm" else None,
        )
        self._ready = True
        sketch_gate.watch(self)  # its view drawn: the last seal comes back; Draw again

    def __repr__(self) -> str:
        state = "sealed" if self.sealed else "not sealed"
        if len(self.series_names) > 1:
            drawn = ", ".join(
                f"{n}: {len(self._current(n)['points'])} points" for n in self.series_names
            )
            return f"SketchForecast({drawn}; over {self.steps} steps, {state})"
        return (
            f"SketchForecast({len(self.points)} points over {self.steps} steps, "
            f"shape={self.shape or None!r}, nan_step={self.nan_step}, {state})"
        )

    # ---- the series being drawn, and the others ----
    def _current(self, name) -> dict:
        if name == self.series_names[self.active]:
            return {"points": self.points, "nan_step": self.nan_step, "shape": self.shape}
        return self._drawn[name]

    def _others(self, active) -> list:
        names = list(self._setups)
        return [
            {"index": i, "points": self._drawn[n]["points"], "nan_step": self._drawn[n]["nan_step"]}
            for i, n in enumerate(names)
            if i != active
        ]

    @t.validate("active")
    def _check_active(self, proposal):
        check_number(
            "active", proposal["value"], minimum=0, maximum=len(self.series_names) - 1, integer=True
        )
        return proposal["value"]

    @t.observe("active")
    def _switch(self, change):
        """Put the drawn series away and bring up the chosen one (an observer: the front end
        sets `active` inside ipywidgets' held notifications, where validators run late)."""
        old, new = change["old"], change["new"]
        if not self._ready or old == new:
            return
        self._drawn[self.series_names[old]] = {
            "points": self.points,
            "nan_step": self.nan_step,
            "shape": self.shape,
        }
        nxt = self._drawn[self.series_names[new]]
        self._ready = False  # loading a series is not picking a preset
        self.shape, self.points, self.nan_step = nxt["shape"], nxt["points"], nxt["nan_step"]
        self._ready = True
        self.others = self._others(new)

    def select(self, name: str) -> SketchForecast:
        """Draw series `name` next (what clicking its name in the legend does)."""
        check_choice("series", name, self.series_names)
        self.active = self.series_names.index(name)
        return self

    @t.validate("points")
    def _check_new_points(self, proposal):
        if self.sealed:
            raise t.TraitError("This forecast is sealed; its points can no longer change.")
        return [list(p) for p in check_points(proposal["value"], None)] if proposal["value"] else []

    @t.validate("nan_step")
    def _check_nan_step(self, proposal):
        if self.sealed:
            raise t.TraitError("This forecast is sealed; its NaN step can no longer change.")
        check_number(
            "nan_step",
            proposal["value"],
            minimum=0,
            maximum=self.steps - 1,
            integer=True,
            allow_none=True,
        )
        return proposal["value"]

    @t.validate("sealed")
    def _only_python_seals(self, proposal):
        if proposal["value"] != (self._sealed is not None):
            raise t.TraitError("sealed follows seal(); set it by sealing, not by hand.")
        return proposal["value"]

    @t.observe("shape")
    def _fill_preset(self, change):
        if self._ready and change["new"] and not self.sealed:
            nan = (self.nan_step or self.steps // 2) if change["new"] == "nan" else None
            start = self.reference or (self.points[0][1] if self.points else math.log(10))
            preset = Forecast.from_shape(change["new"], self.steps, start=start, nan_step=nan)
            self.nan_step = preset.nan_step
            self.loss_max = max(self.loss_max, 1.2 * max((p[1] for p in preset.points), default=0))
            self.points = [list(p) for p in preset.points]

    @t.observe("seal_requested")
    def _seal_from_button(self, change):
        if self._ready:
            try:
                self.seal()
            except (ValueError, TypeError) as exc:  # shown under the chart, not lost in a log
                self.message = str(exc)

    # ---- forecasts, sealing, the gate and the score ----
    def forecast(self, name: str | None = None) -> Forecast:
        """A series' drawing as a Forecast (the active one by default); points at or after
        its NaN step are dropped."""
        name = self.series_names[self.active] if name is None else name
        check_choice("series", name, self.series_names)
        d = self._current(name)
        nan = d["nan_step"]
        pts = [p for p in d["points"] if nan is None or p[0] < nan]
        shape = "nan" if nan is not None else (d["shape"] or None)
        return Forecast(pts, shape=shape, nan_step=nan, note=note_for(self, name))

    @property
    def sealed_forecast(self) -> Forecast | None:
        """The (first) sealed Forecast; `forecasts()` gives every curve's."""
        return None if self._sealed is None else self._sealed[self.series_names[0]]

    def forecasts(self) -> dict:
        """{series name: sealed Forecast}; empty before Seal."""
        return dict(self._sealed or {})

    def seal(self):
        """Seal every series for its setup and record it; sealing again returns the same.

        Returns the Forecast for a one-series sketch, else the {name: Forecast} dict.
        """
        if self._sealed is None:
            self._sealed = seal_series(self)
            self.sealed_hash = next(iter(self._sealed.values())).content_hash[:12]
            self.message = (
                f"Sealed {self.sealed_hash} ({len(self._sealed)} curve(s)); saved "
                f"to {self.history.path}."
            )
            self.sealed = True
        return self.sealed_forecast if len(self.series_names) == 1 else self.forecasts()

    def require(self) -> SketchForecast:
        """Refuse to go on until the sketch is sealed: in a kernel showing the widget, wait
        for the Seal; headless, seal curves passed in code (`points=`) or refuse at once."""
        return sketch_gate.require(self)

    def refusal(self):
        """The one sentence (a `SketchNotSealed`) of a cell refused before the Seal."""
        return sketch_gate.refusal(self)

    def score(self, runs, *, show: bool = True) -> dict:
        """Score every sealed series against its run and keep the scores in the history.

        `runs` is one Run (a one-series sketch) or {series name: Run}. Shows the sketch over
        each run's raw points and a table of scores (unless show=False); returns
        {name: ForecastScore}.
        """
        return score_series(self.require(), runs, show=show)

    def keyboard_controls(self):  # sliders at 5 checkpoints, a preset menu, a NaN step, Seal
        return keyboard_controls(self)
