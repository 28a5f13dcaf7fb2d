"""`SketchForecast`: draw the loss curve you expect, then seal it before the run.

    >>> w = SketchForecast(config=labkit.Config(), bug="zero_lr")
    >>> w                          # draw with mouse, touch or pen; press Seal
    >>> w.forecast()               # the drawing as a labkit Forecast
    >>> VBox([w, w.keyboard_controls()])   # sliders for keyboard users

The widget holds state only: points, axes, the chosen preset and NaN step.
Checking, sealing and saving are `labkit.forecast`; the Seal button only asks
Python (through the `seal_requested` counter) to call `seal()`.
"""

from __future__ import annotations

import math
from pathlib import Path

import anywidget
import traitlets as t

from ..core.config import Config
from ..errors import check_choice, check_number
from ..forecast.forecast import SHAPES, Forecast, check_points
from ..forecast.history import ForecastHistory

HERE = Path(__file__).parent


class SketchForecast(anywidget.AnyWidget):
    _esm = HERE / "sketch.js"
    _css = HERE / "sketch.css"

    points = t.List().tag(sync=True)  # [[step, loss], ...], increasing in step
    steps = t.Int(200).tag(sync=True)  # the x axis covers steps 0 .. steps-1
    loss_max = t.Float(4.0).tag(sync=True)  # top of the y axis
    log_scale = t.Bool(False).tag(sync=True)
    reference = t.Float(None, allow_none=True).tag(sync=True)  # e.g. ln C, drawn dashed
    reference_label = t.Unicode("").tag(sync=True)
    shape = t.Unicode("").tag(sync=True)  # the preset picked ("" = none); it fills `points`
    nan_step = t.Int(None, allow_none=True).tag(sync=True)  # first step you expect NaN at
    sealed = t.Bool(False).tag(sync=True)
    sealed_hash = t.Unicode("").tag(sync=True)  # first 12 hex of the sealed content hash
    seal_requested = t.Int(0).tag(sync=True)  # the Seal button adds 1; Python seals
    message = t.Unicode("").tag(sync=True)  # status or error line shown under the chart

    def __init__(self, points=None, *, config=None, bug=None, shape=None, nan_step=None,
                 steps=None, loss_max=None, log_scale=False, history_path=None, note=""):
        self._ready, self._sealed = False, None
        if config is not None and not isinstance(config, (Config, str)):
            raise TypeError(f"config must be a labkit Config or a config hash; got "
                            f"{type(config).__name__}.")
        cfg = None
        if isinstance(config, Config) or (config is None and bug is not None):
            from ..bugs.inject import resolve
            cfg = resolve(config, bug, None, {})[0]
        steps = cfg.steps if steps is None and cfg is not None else steps or 200
        check_number("steps", steps, minimum=2, integer=True)
        if shape is not None:
            check_choice("shape", shape, SHAPES)
        check_number("nan_step", nan_step, minimum=0, maximum=steps - 1, integer=True, allow_none=True)
        if not isinstance(log_scale, bool):
            raise TypeError(f"log_scale must be True or False; got {log_scale!r}.")
        ref, label = None, ""
        if cfg is not None:
            size, letter = (cfg.vocab_size, "V") if cfg.task == "lm" else (cfg.n_classes, "C")
            ref, label = math.log(size), f"ln {letter} = {math.log(size):.3f}"
        if points is None and shape is not None:
            preset = Forecast.from_shape(shape, steps, start=ref or math.log(10), nan_step=nan_step)
            points, nan_step = preset.points, preset.nan_step
        pts = [list(p) for p in check_points(points, None)] if points else []
        top = max([p[1] for p in pts] + [ref or 1.0]) * 1.5
        loss_max = top if loss_max is None else loss_max
        check_number("loss_max", loss_max, minimum=0, strict_min=True)
        self._config, self._bug, self.note = config, bug, note
        self.history = ForecastHistory(history_path)
        super().__init__(points=pts, steps=steps, loss_max=float(loss_max), log_scale=log_scale,
                         reference=ref, reference_label=label, shape=shape or "", nan_step=nan_step)
        self._ready = True

    def __repr__(self) -> str:
        state = "sealed" if self.sealed else "not sealed"
        return (f"SketchForecast({len(self.points)} points over {self.steps} steps, "
                f"shape={self.shape or None!r}, nan_step={self.nan_step}, {state})")

    @t.validate("points")
    def _check_new_points(self, proposal):
        if self.sealed:
            raise t.TraitError("This forecast is sealed; its points can no longer change.")
        return [list(p) for p in check_points(proposal["value"], None)] if proposal["value"] else []

    @t.validate("nan_step")
    def _check_nan_step(self, proposal):
        if self.sealed:
            raise t.TraitError("This forecast is sealed; its NaN step can no longer change.")
        check_number("nan_step", proposal["value"], minimum=0, maximum=self.steps - 1,
                     integer=True, allow_none=True)
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

    def forecast(self) -> Forecast:
        """The current drawing as a Forecast; points at or after the NaN step are dropped."""
        nan = self.nan_step
        pts = [p for p in self.points if nan is None or p[0] < nan]
        shape = "nan" if nan is not None else (self.shape or None)
        return Forecast(pts, shape=shape, nan_step=nan, note=self.note)

    @property
    def sealed_forecast(self) -> Forecast | None:
        return self._sealed

    def seal(self) -> Forecast:
        """Seal the drawing for this widget's config and record it; sealing again returns it."""
        if self._sealed is not None:
            return self._sealed
        if self._config is None and self._bug is None:
            raise ValueError("This sketch was made without config or bug, so there is no setup "
                             "to seal it for; make it with SketchForecast(config=..., bug=...).")
        forecast = self.forecast().seal(self._config, bug=self._bug)
        self.history.add(forecast)
        self._sealed = forecast
        self.sealed_hash = forecast.content_hash[:12]
        self.message = (f"Sealed {self.sealed_hash} for config {forecast.config_hash}; "
                        f"saved to {self.history.path}.")
        self.sealed = True
        return forecast

    def keyboard_controls(self):
        """Sliders for the loss at 5 checkpoints, a preset menu, a NaN step and a Seal button."""
        return keyboard_controls(self)


def _loss_at(points, step, default):
    """The drawn curve at `step`, by straight lines between points (flat past the ends)."""
    if not points:
        return default
    for (s0, l0), (s1, l1) in zip(points, points[1:]):
        if s0 <= step <= s1:
            return l0 + (l1 - l0) * (step - s0) / (s1 - s0)
    return points[0][1] if step < points[0][0] else points[-1][1]


def keyboard_controls(sketch: SketchForecast):
    """The keyboard way to fill a SketchForecast: every control here edits its traits."""
    import ipywidgets as w
    marks = sorted({round(i * (sketch.steps - 1) / 4) for i in range(5)})
    low = min(0.01, sketch.loss_max / 10)
    start = sketch.reference or math.log(10)
    sliders = [w.FloatSlider(value=min(_loss_at(sketch.points, s, start), sketch.loss_max),
                             min=low, max=sketch.loss_max, step=low, description=f"step {s}",
                             continuous_update=False) for s in marks]
    preset = w.Dropdown(options=[("(none)", "")] + [(s, s) for s in SHAPES], description="preset")
    goes_nan = w.Checkbox(value=sketch.nan_step is not None, description="turns NaN at step")
    nan_at = w.BoundedIntText(value=sketch.nan_step or sketch.steps // 2, min=0,
                              max=sketch.steps - 1, description="NaN step")
    seal = w.Button(description="Seal", button_style="warning", icon="lock")
    status = w.Label()
    w.link((sketch, "shape"), (preset, "value"))
    w.dlink((sketch, "message"), (status, "value"))
    busy = []  # set while one side updates the other, so they do not echo forever

    def sliders_to_points(_):
        if not busy and not sketch.sealed:
            busy.append(1)
            sketch.points = [[s, sl.value] for s, sl in zip(marks, sliders)]
            busy.pop()

    def points_to_sliders(_):
        if not busy:
            busy.append(1)
            for s, sl in zip(marks, sliders):
                sl.value = min(_loss_at(sketch.points, s, start), sketch.loss_max)
            busy.pop()

    def nan_changed(_):
        if not busy and not sketch.sealed:
            sketch.nan_step = nan_at.value if goes_nan.value else None

    def nan_from_sketch(_):
        busy.append(1)
        goes_nan.value = sketch.nan_step is not None
        nan_at.value = sketch.nan_step if sketch.nan_step is not None else nan_at.value
        busy.pop()

    def lock(_):
        for control in (*sliders, preset, goes_nan, nan_at, seal):
            control.disabled = sketch.sealed

    for sl in sliders:
        sl.observe(sliders_to_points, "value")
    sketch.observe(points_to_sliders, "points")
    goes_nan.observe(nan_changed, "value")
    nan_at.observe(nan_changed, "value")
    sketch.observe(nan_from_sketch, "nan_step")
    sketch.observe(lock, "sealed")
    seal.on_click(lambda _: setattr(sketch, "seal_requested", sketch.seal_requested + 1))
    lock(None)
    return w.VBox([preset, *sliders, w.HBox([goes_nan, nan_at]), seal, status])
