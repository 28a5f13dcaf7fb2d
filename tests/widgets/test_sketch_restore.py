"""Sealed work survives: a sketch made again (its cell re-run, or a restarted kernel) comes
back sealed from the learner store; "Draw again" opens a new attempt; a restored seal counts
once in the calibration record; a typed prediction keeps its first seal."""

import labkit
from labkit.learn.check import _predict
from labkit.widgets import SketchForecast

CFG = labkit.Config(steps=40)
SERIES = {"healthy": None, "zero LR": "zero_lr"}


def _sketch(store, **kw):
    sketch = SketchForecast(config=CFG, series=SERIES, key="restore_t", history_path=store, **kw)
    sketch.rendered += 1  # what the front end says when it draws the widget
    return sketch


def _draw_and_seal(sketch, healthy=0.5):
    sketch.points = [[0, 2.3], [39, healthy]]
    sketch.select("zero LR").points = [[0, 2.3], [39, 2.3]]
    sketch.seal_requested += 1  # the Seal button
    assert sketch.sealed


def test_a_sketch_made_again_comes_back_sealed_with_the_same_curves(tmp_path):
    store = tmp_path / "labkit.sqlite3"
    first = _sketch(store)
    _draw_and_seal(first)
    again = _sketch(store)  # the cell re-run, or the same cell in a new kernel
    assert again.sealed and again.restored
    assert again.forecasts() == first.forecasts()  # the same seals: same hashes and times
    assert again.message.startswith("Sealed at ") and "Draw again" in again.message
    assert again.require() is again  # Run All goes on with no redraw
    assert len(again.history) == 2  # nothing added: two curves, sealed once


def test_restore_matches_key_and_setup_and_never_overrides_curves_in_code(tmp_path):
    store = tmp_path / "labkit.sqlite3"
    _draw_and_seal(_sketch(store))
    other_key = SketchForecast(config=CFG, series=SERIES, key="restore_u", history_path=store)
    other_setup = SketchForecast(
        config=labkit.Config(steps=40, seed=1), series=SERIES, key="restore_t", history_path=store
    )
    headless = SketchForecast(config=CFG, series=SERIES, key="restore_t", history_path=store)
    for sketch in (other_key, other_setup):
        sketch.rendered += 1
    assert not other_key.sealed and not other_setup.sealed
    assert not headless.sealed  # no front end drew it: a headless run restores nothing
    given = _sketch(store, points={"healthy": [[0, 2.3], [39, 1.0]], "zero LR": [[0, 2.3]]})
    assert not given.sealed and not given.restored  # a headless run seals its own curves


def test_draw_again_starts_a_new_attempt_and_the_latest_seal_is_restored(tmp_path):
    store = tmp_path / "labkit.sqlite3"
    first = _sketch(store)
    _draw_and_seal(first)
    again = _sketch(store)
    again.redraw_requested += 1  # the Draw again button
    assert not again.sealed and again.forecasts() == {}
    assert again._current("healthy")["points"] == [[0, 2.3], [39, 0.5]]  # a starting point
    _draw_and_seal(again, healthy=1.0)
    third = _sketch(store)
    assert third.forecasts()["healthy"].points[-1] == (39, 1.0)
    assert len(third.history) == 4  # the first attempt stays kept


def test_a_restored_seal_is_scored_once(tmp_path):
    store = tmp_path / "labkit.sqlite3"
    first = _sketch(store)
    _draw_and_seal(first)
    runs = {"healthy": labkit.train(config=CFG), "zero LR": labkit.train(config=CFG, bug="zero_lr")}
    first.score(runs, show=False)
    again = _sketch(store)  # after a restart: the same seals, runs made again
    runs = {"healthy": labkit.train(config=CFG), "zero LR": labkit.train(config=CFG, bug="zero_lr")}
    again.score(runs, show=False)
    entries = again.history.entries()
    assert len(entries) == 2 and all(e["score"] is not None for e in entries)


def test_a_typed_prediction_keeps_its_first_seal_across_a_restart(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_HOME", str(tmp_path))
    forms = {"worse": ("choice", ("a", "b"))}
    _predict.seal("restore_p", {"worse": "a"}, forms)
    first = _predict._SEALED["restore_p"][1]
    monkeypatch.setattr(_predict, "_SEALED", {})  # what a restart leaves
    _predict.seal("restore_p", {"worse": "a"}, forms)
    assert _predict._SEALED["restore_p"][1] == first
    _predict.seal("restore_p", {"worse": "b"}, forms)  # a changed answer is a new seal
    assert _predict._SEALED["restore_p"][1] > first


def test_curves_sealed_from_code_never_come_back_in_a_drawn_sketch(tmp_path):
    store = tmp_path / "labkit.sqlite3"
    headless = _sketch(store, points={"healthy": [[0, 2.3], [39, 1.0]], "zero LR": [[0, 2.3]]})
    headless.require()  # a papermill or nbval run sealed the instructor's curves
    assert headless.sealed
    learner = _sketch(store)
    assert not learner.sealed  # the learner draws their own
