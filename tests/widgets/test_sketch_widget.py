"""SketchForecast without a browser: traits, presets, the seal path and the text repr."""

import math

import pytest
import traitlets

import labkit
from labkit.forecast import Forecast
from labkit.forecast.history import ForecastHistory
from labkit.core.train import config_hash
from labkit.widgets import SketchForecast

STEPS = 40


@pytest.fixture
def sketch(tmp_path):
    return SketchForecast(
        config=labkit.Config(steps=STEPS), bug="zero_lr", history_path=tmp_path / "labkit.sqlite3"
    )


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"config": {"lr": 0.1}}, TypeError, "config must be a labkit Config"),
        ({"steps": 1}, ValueError, "steps=1 is out of range"),
        ({"steps": 20.5}, TypeError, "steps must be a whole number"),
        ({"shape": "flt"}, ValueError, "Did you mean 'flat'"),
        ({"nan_step": 500}, ValueError, "nan_step=500 is out of range; it must be at most 199"),
        ({"loss_max": 0}, ValueError, "loss_max=0 is out of range"),
        ({"log_scale": "yes"}, TypeError, "log_scale must be True or False"),
        ({"points": [[0, 2.3], [0, 1.0]]}, ValueError, "repeats step 0"),
        ({"bug": "zero_rl"}, ValueError, "did you mean 'zero_lr'"),
    ],
)
def test_bad_arguments_are_refused_with_a_sentence(kwargs, error, match):
    with pytest.raises(error, match=match):
        SketchForecast(**kwargs)


def test_axes_follow_the_config(sketch):
    assert sketch.steps == STEPS
    assert (
        sketch.reference == pytest.approx(math.log(10)) and sketch.reference_label == "ln C = 2.303"
    )
    assert sketch.loss_max > sketch.reference and sketch.points == []
    lm = SketchForecast(config=labkit.Config(task="lm"))
    assert lm.reference_label == "ln V = 3.912" and lm.steps == 200
    assert "export default" in sketch._esm and ".labkit-sketch" in sketch._css  # shipped files


def test_preset_fills_the_points_forecast_would_make(sketch):
    sketch.shape = "descending"  # what the front end's preset menu does
    expected = Forecast.from_shape("descending", STEPS, start=math.log(10))
    assert sketch.points == [list(p) for p in expected.points]
    sketch.shape = "nan"
    assert sketch.nan_step == STEPS // 2 and all(s < STEPS // 2 for s, _ in sketch.points)
    sketch.shape = "diverging"
    assert sketch.nan_step is None and sketch.loss_max >= max(v for _, v in sketch.points)


def test_forecast_is_the_plain_forecast_of_the_drawing(sketch):
    sketch.points = [[0, 2.3], [10, 1.5], [30, 0.9]]
    assert sketch.forecast() == Forecast([[0, 2.3], [10, 1.5], [30, 0.9]])
    with pytest.raises(ValueError, match="nan_step=40 is out of range"):
        sketch.nan_step = 40  # the x axis ends at step 39
    sketch.nan_step = 20  # the learner marks a NaN step on the chart
    f = sketch.forecast()
    assert f == Forecast([[0, 2.3], [10, 1.5]], shape="nan", nan_step=20)
    with pytest.raises(ValueError, match="comes before step 10"):
        sketch.points = [[10, 2.3], [0, 1.5]]  # drawn points are checked like any forecast
    made = SketchForecast(points="[[0, 2.3], [39, 0.4]]", config=labkit.Config(steps=STEPS))
    assert made.forecast().points == ((0, 2.3), (39, 0.4))  # a papermill parameter works too


def test_seal_button_seals_saves_and_locks(sketch, tmp_path):
    sketch.points = [[0, 2.3], [20, 2.3], [39, 2.3]]
    sketch.seal_requested += 1  # what pressing Seal in the browser does
    assert sketch.sealed and sketch.sealed_forecast.is_intact()
    assert sketch.sealed_hash == sketch.sealed_forecast.content_hash[:12]
    assert sketch.sealed_hash in sketch.message
    assert str(tmp_path / "labkit.sqlite3") in sketch.message
    entries = ForecastHistory(tmp_path / "labkit.sqlite3").entries()
    assert [e["forecast"]["points"] for e in entries] == [[[0, 2.3], [20, 2.3], [39, 2.3]]]
    assert entries[0]["forecast"]["config_hash"] == config_hash(
        labkit.Config(steps=STEPS), "zero_lr"
    )
    with pytest.raises(traitlets.TraitError, match="sealed"):
        sketch.points = [[0, 1.0]]
    with pytest.raises(traitlets.TraitError, match="sealed"):
        sketch.nan_step = 5
    assert sketch.seal() is sketch.sealed_forecast  # sealing again hands back the same forecast
    assert len(ForecastHistory(tmp_path / "labkit.sqlite3")) == 1
    run = labkit.train(bug="zero_lr", steps=STEPS)
    assert sketch.sealed_forecast.score(run).shape_match


def test_seal_problems_show_in_the_widget_not_as_a_crash(tmp_path):
    unbound = SketchForecast(points=[[0, 2.3]], history_path=tmp_path / "h.sqlite3")
    unbound.seal_requested += 1
    assert not unbound.sealed and "without config or bug" in unbound.message
    empty = SketchForecast(config=labkit.Config(), history_path=tmp_path / "h.sqlite3")
    empty.seal_requested += 1
    assert not empty.sealed and "at least one" in empty.message
    with pytest.raises(traitlets.TraitError, match="set it by sealing"):
        empty.sealed = True
    assert not (tmp_path / "h.sqlite3").exists()


def test_text_repr_is_deterministic_and_has_no_address(tmp_path):
    def make():
        return SketchForecast(
            points=[[0, 2.3], [39, 2.3]],
            config=labkit.Config(steps=STEPS),
            history_path=tmp_path / "h.sqlite3",
        )

    a, b = make(), make()
    text = a._repr_mimebundle_()[0]["text/plain"]
    assert (
        text
        == repr(b)
        == ("SketchForecast(2 points over 40 steps, shape=None, nan_step=None, not sealed)")
    )
    a.seal()
    assert repr(a).endswith("sealed)") and "0x" not in repr(a)


def test_keyboard_controls_edit_the_same_state(sketch):
    box = sketch.keyboard_controls()
    preset, *sliders = box.children[:6]
    goes_nan, nan_at = box.children[6].children
    seal_button = box.children[7]
    assert [s.description for s in sliders] == [
        "step 0",
        "step 10",
        "step 20",
        "step 29",
        "step 39",
    ]
    preset.value = "flat"
    assert sketch.points == [[s, pytest.approx(math.log(10))] for s in (0, 10, 20, 29, 39)]
    sliders[-1].value = 0.5
    assert sketch.points[-1] == [39, 0.5] and len(sketch.points) == 5
    sketch.points = [[0, 2.0], [39, 1.0]]  # a drawing moves the sliders
    assert sliders[2].value == pytest.approx(1.49, abs=0.01)
    nan_at.value, goes_nan.value = 30, True
    assert sketch.nan_step == 30
    sketch.nan_step = None
    assert goes_nan.value is False
    seal_button.click()
    assert sketch.sealed and all(c.disabled for c in (preset, *sliders, seal_button))


# ---- several named curves in one sketch, the run cell's gate, and the score ----
from labkit.forecast.gate import SketchNotSealed  # noqa: E402


def two(tmp_path, **kw):
    return SketchForecast(
        config=labkit.Config(steps=STEPS),
        key="ex_t",
        series={"healthy": None, "zero LR": "zero_lr"},
        history_path=tmp_path / "labkit.sqlite3",
        **kw,
    )


def test_each_curve_keeps_its_drawing_while_another_is_drawn(tmp_path):
    w = two(tmp_path)
    assert w.series_names == ["healthy", "zero LR"] and len(set(w.colours)) == 2
    w.points = [[0, 2.3], [39, 0.3]]
    w.active = 1  # what clicking "zero LR" in the legend does
    assert w.points == [] and w.others == [
        {"index": 0, "points": [[0, 2.3], [39, 0.3]], "nan_step": None}
    ]
    w.points = [[0, 2.3], [39, 2.3]]
    w.select("healthy")
    assert w.points == [[0, 2.3], [39, 0.3]] and w.others[0]["points"] == [[0, 2.3], [39, 2.3]]
    assert w.forecast("zero LR").points == ((0, 2.3), (39, 2.3))
    with pytest.raises(ValueError, match="Did you mean 'zero LR'"):
        w.select("zero lr ")


def test_the_run_cell_waits_for_every_curve_to_be_sealed(tmp_path):
    w = two(tmp_path)
    with pytest.raises(SketchNotSealed, match="press Seal"):
        w.require()
    w.points = [[0, 2.3], [39, 0.3]]
    w.seal_requested += 1  # only one of two curves drawn: refused in the widget, not a crash
    assert not w.sealed and "Draw 'zero LR' as well" in w.message
    w.select("zero LR").points = [[0, 2.3], [39, 2.3]]
    w.seal_requested += 1
    assert w.sealed and w.require() is w
    assert sorted(w.forecasts()) == ["healthy", "zero LR"]
    hashes = {f.config_hash for f in w.forecasts().values()}
    assert hashes == {
        config_hash(labkit.Config(steps=STEPS), None),
        config_hash(labkit.Config(steps=STEPS), "zero_lr"),
    }  # one setup per curve


def test_points_from_code_are_sealed_by_require_and_scored(tmp_path):
    pts = {"healthy": [[0, 2.3], [39, 0.3]], "zero LR": [[0, 2.3], [39, 2.3]]}
    w = two(tmp_path, points=pts)
    assert not w.sealed  # code gave the curves, but nothing is sealed until the run cell asks
    w.require()
    runs = {
        "healthy": labkit.train(steps=STEPS),
        "zero LR": labkit.train(bug="zero_lr", steps=STEPS),
    }
    scores = w.score(runs, show=False)
    assert scores["zero LR"].shape_actual == scores["zero LR"].shape_predicted == "flat"
    assert scores["healthy"].shape_actual == "descending"
    kept = {
        e["forecast"]["note"]: e["score"]
        for e in ForecastHistory(tmp_path / "labkit.sqlite3").entries()
    }
    assert kept["ex_t/zero LR"]["mean_log_error"] == pytest.approx(scores["zero LR"].mean_log_error)
    with pytest.raises(ValueError, match="no run for 'zero LR'"):
        w.score({"healthy": runs["healthy"]}, show=False)
    with pytest.raises(TypeError, match="pass runs as a dict"):
        w.score(runs["healthy"], show=False)


def test_a_gradient_norm_sketch_is_scored_against_the_gradient_norm(tmp_path):
    w = SketchForecast(
        config=labkit.Config(steps=STEPS),
        key="lab",
        quantity="grad_norm",
        series={"H1": "zero_lr", "H2": "zero_lr"},
        history_path=tmp_path / "h.sqlite3",
        points={"H1": [[0, 1e-9], [39, 1e-9]], "H2": [[0, 1.0], [39, 1.0]]},
    )
    assert w.y_label == "gradient norm" and w.reference is None
    w.require()
    run = labkit.train(bug="zero_lr", steps=STEPS)  # the gradient flows; only the step is zero
    scores = w.score({"H1": run, "H2": run}, show=False)
    assert scores["H1"].mean_log_error > 5 > scores["H2"].mean_log_error


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"series": ["a", "b"]}, TypeError, "series must be a dict"),
        ({"series": {"a": 3}}, TypeError, "must map to None, a bug name"),
        ({"series": {"a": "detatch"}}, ValueError, "did you mean 'detach'"),
        ({"series": {"a": None, "b": None}, "points": [[0, 1.0]]}, TypeError, "must be a dict"),
        ({"series": {"a": None}, "points": {"b": [[0, 1.0]]}}, ValueError, "points key"),
        ({"quantity": "accuracy"}, ValueError, "quantity='accuracy'"),
    ],
)
def test_bad_series_arguments_get_a_sentence(kwargs, error, match):
    with pytest.raises(error, match=match):
        SketchForecast(config=labkit.Config(steps=STEPS), **kwargs)


def test_the_refusal_names_which_sketch_it_waits_for(tmp_path):
    said = {}
    for quantity in ("loss", "grad_norm"):
        with pytest.raises(SketchNotSealed) as info:
            two(tmp_path, quantity=quantity).require()
        said[quantity] = str(info.value)
    assert "forecast of the loss above ('healthy' and 'zero LR')" in said["loss"]
    assert "forecast of the gradient norm above ('healthy' and 'zero LR')" in said["grad_norm"]
