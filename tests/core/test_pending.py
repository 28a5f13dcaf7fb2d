"""`labkit.core.learner.pending`: an open forecast holds every run of its kernel (the notebook walk in
tests/notebooks/test_exercise_gate.py checks it end to end)."""

import pytest

import labkit
from labkit.core.learner import pending
from labkit.forecast.gate import SketchNotSealed


class Form:
    """A forecast widget as the gate sees one: `sealed`, `require()`, `refusal()`."""

    def __init__(self):
        self.sealed, self.asked = False, 0

    def refusal(self):
        return SketchNotSealed("Draw your forecast and press Seal.")

    def require(self):
        self.asked += 1
        if not self.sealed:
            raise self.refusal()


@pytest.fixture
def in_a_shell(monkeypatch):
    monkeypatch.setattr(pending, "_SLOTS", {})
    monkeypatch.setattr(pending, "_shell", lambda: None)  # hold() installs no handler here
    yield lambda: monkeypatch.setattr(pending, "_shell", lambda: object())


def test_an_open_forecast_refuses_a_run_and_a_sealed_one_lets_it_go(in_a_shell):
    form = Form()
    pending.hold(("sketch", "t"), form)
    in_a_shell()
    with pytest.raises(SketchNotSealed, match="press Seal"):
        labkit.train(steps=2)
    assert form.asked == 1
    form.sealed = True
    assert len(labkit.train(steps=2)) == 2
    assert form.asked == 1  # a sealed forecast is not asked again


def test_a_widget_made_again_for_its_slot_takes_it_over(in_a_shell):
    old, new = Form(), Form()
    pending.hold(("sketch", "t"), old)
    pending.hold(("sketch", "t"), new)
    new.sealed = True
    assert pending.open_forecasts() == []  # the old, never sealed, holds nothing any more


def test_outside_a_shell_nothing_is_held(in_a_shell):
    pending.hold(("sketch", "t"), Form())
    assert len(labkit.train(steps=2)) == 2  # a script or a test process: nobody could draw


def test_a_drill_sketch_holds_no_run():
    from labkit.widgets.drill import DrillSketch
    from labkit.widgets.sketch import SketchForecast

    assert SketchForecast.gates_runs and not DrillSketch.gates_runs
