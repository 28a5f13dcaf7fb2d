import json
import math
import time
from pathlib import Path

import matplotlib
import nbformat
import pytest

import labkit
from labkit.forecast import SHAPES, Forecast, classify_shape
from labkit.forecast.history import ForecastHistory
from labkit.forecast.score import ForecastScore
from labkit.core.train import config_hash
from helpers import printed

STEPS = 40  # short runs keep the file fast; the rules do not depend on length


@pytest.fixture(scope="module")
def zero_lr_setup():
    """A forecast sealed before a zero_lr run, and the run."""
    f = Forecast([[0, 2.3], [20, 2.3], [39, 2.3]], shape="flat")
    f.seal(labkit.Config(steps=STEPS), bug="zero_lr")
    return f, labkit.train(bug="zero_lr", steps=STEPS)


def sealed(points=((0, 2.3), (39, 0.5)), **kw):
    return Forecast(list(points), **kw).seal(labkit.Config(steps=STEPS))


# ---- making a forecast ----------------------------------------------------------------


@pytest.mark.parametrize(
    "given",
    [
        [[0, 2.3], [100, 1.0], [199, 0.5]],
        [(0, 2.3), (100, 1.0), (199, 0.5)],
        "[[0, 2.3], [100, 1.0], [199, 0.5]]",  # how a papermill parameter may arrive
        {0: 2.3, 100: 1.0, 199: 0.5},
        [[0.0, 2.3], [100.0, 1], [199, 0.5]],
    ],
)
def test_points_accepted_in_every_plain_form(given):
    assert Forecast(given).points == ((0, 2.3), (100, 1.0), (199, 0.5))


@pytest.mark.parametrize(
    "points, error, match",
    [
        ([], ValueError, "at least one"),
        ([[0, 2.3], [0, 2.0]], ValueError, "repeats step 0"),
        ([[50, 2.3], [10, 2.0]], ValueError, "comes before step 50"),
        ([[0, -1.0]], ValueError, "positive, finite"),
        ([[0, 0.0]], ValueError, "positive, finite"),
        ([[0, math.inf]], ValueError, "set nan_step instead"),
        (
            [[0, math.nan]],
            ValueError,
            r"must be a positive, finite number; got nan. To predict a blow-up",
        ),
        ([[0, "low"]], TypeError, r"points\[0\]\[1\] \(the loss\) must be a number; got 'low'"),
        ([[1.5, 2.0]], TypeError, r"points\[0\]\[0\] \(the step\) must be a whole number"),
        ([[-1, 2.0]], ValueError, "at least 0"),
        ([2.3, 1.0], TypeError, r"points\[0\] must be a \(step, loss\) pair"),
        ("[[0, 2.3", ValueError, "not valid JSON"),
    ],
)
def test_bad_points_are_refused_with_a_sentence(points, error, match):
    with pytest.raises(error, match=match):
        Forecast(points)


def test_shape_and_nan_step_are_checked():
    with pytest.raises(ValueError, match="Did you mean 'diverging'"):
        Forecast([[0, 2.3]], shape="divergent")
    with pytest.raises(ValueError, match="needs nan_step"):
        Forecast([[0, 2.3]], shape="nan")
    with pytest.raises(ValueError, match="contradicts nan_step=10"):
        Forecast([[0, 2.3]], shape="flat", nan_step=10)
    with pytest.raises(ValueError, match="already NaN there"):
        Forecast([[0, 2.3], [10, 2.0]], nan_step=10)
    assert Forecast([], nan_step=0).expected_shape == "nan"  # NaN from the first step: no points
    assert Forecast([[0, 2.3]], nan_step=5).expected_shape == "nan"


@pytest.mark.parametrize("shape", SHAPES)
def test_each_preset_reads_as_its_own_shape(shape):
    f = Forecast.from_shape(shape, steps=200, start=math.log(10))
    assert f.shape == shape and f.points[0] == (0, pytest.approx(math.log(10)))
    assert classify_shape([p[1] for p in f.points], f.nan_step) == shape
    if shape == "nan":
        assert f.nan_step == 100 and f.points[-1][0] < 100
    else:
        assert f.points[-1][0] == 199


@pytest.mark.parametrize(
    "losses, shape",
    [
        ([2.3] * 50, "flat"),
        ([2.3 * 0.95**i for i in range(50)], "descending"),
        ([2.3 * 1.05**i for i in range(50)], "diverging"),
        ([1.0] * 20 + [5.0] + [1.0] * 20, "spiky"),
        ([2.3, 2.0, math.nan, 1.0], "nan"),
        ([2.3, 2.0, math.inf], "nan"),
    ],
)
def test_shape_rule_on_plain_sequences(losses, shape):
    assert classify_shape(losses) == shape


@pytest.mark.chaotic  # lr_too_high
def test_shape_rule_on_real_runs():
    assert classify_shape(labkit.train(steps=60).table["loss_raw"]) == "descending"
    assert classify_shape(labkit.train(bug="zero_lr", steps=STEPS).table["loss_raw"]) == "flat"
    assert classify_shape(labkit.train(bug="lr_too_high", steps=20).table["loss_raw"]) == "nan"


# ---- sealing ----------------------------------------------------------------------------


def test_seal_records_setup_time_and_content_hash():
    config = labkit.Config(steps=STEPS)
    before = time.time()
    f = Forecast([[0, 2.3]]).seal(config, bug="zero_lr")
    assert f.sealed and before <= f.sealed_at <= time.time()
    assert f.config_hash == config_hash(config, "zero_lr")
    assert len(f.content_hash) == 64 and f.is_intact()
    assert Forecast([[0, 2.3]]).seal(f.config_hash).config_hash == f.config_hash
    assert Forecast([[0, 2.3]]).seal(bug="zero_lr").config_hash == config_hash(
        labkit.Config(), "zero_lr"
    )


def test_sealing_twice_or_with_a_bad_hash_is_refused():
    f = sealed()
    with pytest.raises(ValueError, match="already sealed"):
        f.seal(labkit.Config())
    with pytest.raises(ValueError, match="is not a config hash"):
        Forecast([[0, 2.3]]).seal("not-a-hash")
    with pytest.raises(ValueError, match="unknown bug 'zero_rl'.*did you mean 'zero_lr'"):
        Forecast([[0, 2.3]]).seal(labkit.Config(), bug="zero_rl")


def test_editable_before_sealing_frozen_after():
    f = Forecast([[0, 2.3]])
    f.points = [[0, 2.3], [10, 1.0]]
    f.note = "falls by half"
    assert f.points == ((0, 2.3), (10, 1.0))
    with pytest.raises(ValueError, match="repeats"):
        f.points = [[0, 2.3], [0, 1.0]]
    with pytest.raises(AttributeError, match="no setting 'pionts'"):
        f.pionts = []
    f.seal(labkit.Config())
    for name, value in (("points", [[0, 1.0]]), ("shape", "flat"), ("nan_step", 3), ("note", "x")):
        with pytest.raises(AttributeError, match="sealed, so it can no longer be edited"):
            setattr(f, name, value)
    assert f.is_intact()


def test_round_trip_keeps_the_seal(tmp_path):
    f = sealed(note="a guess", shape="descending")
    assert Forecast.from_dict(f.to_dict()) == f
    assert Forecast.from_json(f.to_json()) == f
    f.to_json(tmp_path / "f.json")
    again = Forecast.from_json(tmp_path / "f.json")
    assert again == f and again.is_intact() and again.sealed_at == f.sealed_at


def test_editing_a_saved_forecast_is_detected(tmp_path, zero_lr_setup):
    f, run = zero_lr_setup
    path = tmp_path / "f.json"
    f.to_json(path)
    d = json.loads(path.read_text())
    d["points"][1][1] = 2.31  # nudge the forecast toward what happened
    path.write_text(json.dumps(d))
    tampered = Forecast.from_json(path)
    assert not tampered.is_intact()
    with pytest.raises(ValueError, match="changed after it was sealed"):
        tampered.score(run)
    d["sealed_at"] = 0.0  # ... or back-date it
    assert not Forecast.from_dict(d).is_intact()
    with pytest.raises(ValueError, match="half sealed"):
        Forecast.from_dict({**f.to_dict(), "content_hash": None})
    with pytest.raises(ValueError, match="expected format"):
        Forecast.from_dict({"points": [[0, 1.0]]})


# ---- scoring -------------------------------------------------------------------------------


def test_score_against_its_own_run(zero_lr_setup):
    f, run = zero_lr_setup
    s = f.score(run)
    raw = run.table["loss_raw"]
    expected = [abs(math.log(2.3) - math.log(raw[k])) for k in (0, 20, 39)]
    assert s.steps == [0, 20, 39] and s.actual == [raw[0], raw[20], raw[39]]
    assert s.log_errors == pytest.approx(expected)
    assert s.mean_log_error == pytest.approx(sum(expected) / 3)
    assert (s.misses, s.nan_predicted, s.nan_actual, s.nan_hit) == (0, None, None, True)
    assert s.shape_match and s.shape_actual == "flat"
    assert s.verdict.startswith("A good forecast") and "both stayed finite" in s.verdict
    assert "mean_log_error=0.00" in repr(s) and "0x" not in repr(s)
    assert ForecastScore.from_dict(json.loads(json.dumps(s.to_dict()))) == s


@pytest.mark.parametrize(
    "mean, size",
    [(0.099, "close"), (0.101, "roughly right"), (0.499, "roughly right"), (0.501, "far off")],
)
@pytest.mark.parametrize("what", ["the loss", "the gradient norm", "the accuracy"])
def test_a_score_names_the_quantity_and_its_size_agrees_with_the_error(mean, size, what):
    verdict = ForecastScore._verdict(mean, 0, None, None, True, "flat", "flat", what)
    assert f"{what} was {size} (off by x{math.exp(mean):.2f} on average)" in verdict
    assert verdict.startswith("A good forecast" if size == "close" else "Partly right")


def test_a_score_of_another_curve_names_that_curve(zero_lr_setup):
    from labkit.learn.series import series_view

    f, run = zero_lr_setup
    assert "the gradient norm was" in f.score(run, "grad_norm").verdict
    assert "the gradient norm was" in f.score(series_view(run, "grad_norm")).verdict
    assert "the loss was" in f.score(run).verdict


@pytest.mark.chaotic  # lr_too_high: only the step range of its first NaN is asserted
def test_nan_checkpoints_are_misses_and_nan_step_is_scored():
    missed = Forecast([[0, 2.3], [5, 2.0], [15, 1.0]]).seal(
        labkit.Config(steps=20), bug="lr_too_high"
    )
    warned = Forecast([[0, 2.3]], nan_step=9).seal(labkit.Config(steps=20), bug="lr_too_high")
    run = labkit.train(bug="lr_too_high", steps=20)
    nan_at = run.first_nonfinite_step()
    assert nan_at is not None and 5 < nan_at < 15
    s = missed.score(run)
    assert s.misses == 1 and s.log_errors[2] is None and s.actual[2] is None
    assert not s.nan_hit and s.shape_actual == "nan"
    assert f"went NaN at step {nan_at}, which you did not predict" in s.verdict
    w = warned.score(run)
    assert w.nan_predicted == 9 and w.nan_actual == nan_at and w.shape_match
    assert w.nan_hit == (abs(9 - nan_at) <= 2)


def test_score_refuses_unsealed_other_setup_and_late_seals(zero_lr_setup):
    f, run = zero_lr_setup
    with pytest.raises(ValueError, match="not sealed"):
        Forecast([[0, 2.3]]).score(run)
    other = Forecast([[0, 2.3]]).seal(labkit.Config(steps=STEPS))  # healthy setup, not zero_lr
    with pytest.raises(
        ValueError,
        match=f"sealed for config {other.config_hash}.*run has config {run.meta['config_hash']}",
    ):
        other.score(run)
    late = Forecast([[0, 2.3]]).seal(labkit.Config(steps=STEPS), bug="zero_lr")  # after the run
    with pytest.raises(ValueError, match=r"sealed at \d\d:\d\d:\d\d, after the run started at "):
        late.score(run)
    undated = labkit.Run(table=run.table, evals=run.evals, meta=run.meta, timing={})
    with pytest.raises(ValueError, match="no start time"):
        f.score(undated)
    early = Forecast([[0, 2.3], [500, 2.3]]).seal(labkit.Config(steps=STEPS), bug="zero_lr")
    with pytest.raises(ValueError, match="point at step 500, but the run has steps 0 to 39"):
        early.score(labkit.train(bug="zero_lr", steps=STEPS))


def test_plot_overlays_forecast_and_raw_points(zero_lr_setup):
    matplotlib.use("Agg")
    f, run = zero_lr_setup
    ax = f.plot(run)
    labels = [line.get_label() for line in ax.get_lines()]
    assert "actual loss_raw (each step)" in labels and "forecast (sealed)" in labels
    actual = ax.get_lines()[labels.index("actual loss_raw (each step)")]
    assert len(actual.get_xdata()) == STEPS and actual.get_linestyle() == "None"
    assert ax.get_xlabel() == "step"
    assert Forecast.from_shape("nan").plot().get_lines()[-1].get_label() == "forecast NaN @ 100"


# ---- history -------------------------------------------------------------------------------


def test_history_survives_a_restart_and_never_overwrites(tmp_path, zero_lr_setup):
    f, run = zero_lr_setup
    path = tmp_path / "labkit.sqlite3"
    a, b = ForecastHistory(path), ForecastHistory(path)  # two notebooks, one store
    a.add(f)
    other = sealed()
    b.add(other)
    assert len(ForecastHistory(path)) == 2
    a.add(f, f.score(run))  # the score joins the existing entry
    entries = ForecastHistory(path).entries()
    assert [e["forecast"]["content_hash"] for e in entries] == [f.content_hash, other.content_hash]
    assert entries[0]["score"]["shape_actual"] == "flat" and entries[1]["score"] is None
    assert ForecastHistory(path).forecasts()[0] == f
    with pytest.raises(ValueError, match="different score"):
        a.add(f, ForecastScore.from_dict({**f.score(run).to_dict(), "misses": 3}))
    assert (
        ForecastHistory(path).entries()[0]["score"] == f.score(run).to_dict()
    )  # kept, not replaced
    with pytest.raises(ValueError, match="not sealed"):
        a.add(Forecast([[0, 1.0]]))


def test_a_file_that_is_not_a_store_is_reported_and_left_untouched(tmp_path):
    path = tmp_path / "labkit.sqlite3"
    path.write_text('{"format": "labkit.forecast_history/1", "entries": [')  # half a JSON file
    broken = path.read_bytes()
    with pytest.raises(
        ValueError,
        match=r"is not a labkit store \(an old JSON forecast history\), "
        "so labkit left it untouched.*labkit import",
    ):
        ForecastHistory(path).add(sealed())
    assert path.read_bytes() == broken
    with pytest.raises(ValueError, match="names a JSON file.*labkit import PATH"):
        ForecastHistory(tmp_path / "forecasts.json")  # the pre-store way to name a history


def test_default_path_is_under_labkit_home(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_HOME", str(tmp_path))
    assert ForecastHistory().path == tmp_path / "labkit.sqlite3"
    assert not (tmp_path / "labkit.sqlite3").exists()  # nothing opened until first use
    with pytest.raises(TypeError, match="path must be a file path"):
        ForecastHistory(3)


def test_calibration_summarises_error_over_time(tmp_path):
    history = ForecastHistory(tmp_path / "h.sqlite3")
    assert history.calibration()["summary"] == "0 forecast(s) recorded, none scored yet."
    run = None
    for loss in (9.0, 4.0, 2.4):  # three forecasts of the same flat run, each closer
        f = Forecast([[0, loss], [39, loss]]).seal(labkit.Config(steps=STEPS), bug="zero_lr")
        run = labkit.train(bug="zero_lr", steps=STEPS)
        history.add(f, f.score(run))
    history.add(sealed())  # recorded, not scored yet
    c = history.calibration()
    errors = c["mean_log_error"]
    assert (c["n_entries"], c["n_scored"]) == (4, 3)
    assert errors[0] > errors[1] > errors[2] and c["trend_per_forecast"] < 0
    assert c["shape_hit_rate"] == 1.0 and c["nan_hit_rate"] == 1.0
    assert c["summary"].startswith("3 of 4 forecast(s) scored; mean log-error")
    assert "improving" in c["summary"]
    json.dumps(c)  # plain data


@pytest.mark.slow
def test_forecast_notebook_takes_its_forecast_from_papermill(tmp_path):
    papermill = pytest.importorskip("papermill")
    notebooks = Path(__file__).resolve().parents[2] / "notebooks"
    out = tmp_path / "forecast_falling.ipynb"
    papermill.execute_notebook(  # a wrong forecast, given as JSON text the way `-p` passes it
        str(notebooks / "02_forecast_first.ipynb"),
        str(out),
        kernel_name="python3",
        parameters={"forecast_points": "[[0, 2.3], [100, 1.0], [199, 0.4]]", "seed": 1},
        cwd=str(notebooks),
        progress_bar=False,
    )
    text = printed(nbformat.read(out, as_version=4))
    assert "step 100: forecast loss 1.000" in text
    assert "shape: forecast 'descending', run 'flat'" in text
    assert "you expected 'descending' but the run was 'flat'" in text
