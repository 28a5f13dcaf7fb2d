"""Keyboard controls for a SketchForecast: sliders at five checkpoints, a preset menu, a
NaN step and a Seal button, all editing the widget's own traits (the active series)."""

from __future__ import annotations

import math

from ...forecast.forecast import SHAPES


def _loss_at(points, step, default):
    """The drawn curve at `step`, by straight lines between points (flat past the ends)."""
    if not points:
        return default
    for (s0, l0), (s1, l1) in zip(points, points[1:]):
        if s0 <= step <= s1:
            return l0 + (l1 - l0) * (step - s0) / (s1 - s0)
    return points[0][1] if step < points[0][0] else points[-1][1]


def keyboard_controls(sketch):
    """The keyboard way to fill a SketchForecast: every control here edits its traits."""
    import ipywidgets as w

    marks = sorted({round(i * (sketch.steps - 1) / 4) for i in range(5)})
    low = min(0.01, sketch.loss_max / 10)
    start = sketch.reference or math.log(10)
    sliders = [
        w.FloatSlider(
            value=min(_loss_at(sketch.points, s, start), sketch.loss_max),
            min=low,
            max=sketch.loss_max,
            step=low,
            description=f"step {s}",
            continuous_update=False,
        )
        for s in marks
    ]
    preset = w.Dropdown(options=[("(none)", "")] + [(s, s) for s in SHAPES], description="preset")
    goes_nan = w.Checkbox(value=sketch.nan_step is not None, description="turns NaN at step")
    nan_at = w.BoundedIntText(
        value=sketch.nan_step or sketch.steps // 2,
        min=0,
        max=sketch.steps - 1,
        description="NaN step",
    )
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
