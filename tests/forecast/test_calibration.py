"""The calibration record: scores by exercise and real shape, and the learner's habits."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import labkit
from labkit.forecast.calibration import calibration_report, habits
from labkit.widgets import SketchForecast

ROOT = Path(__file__).resolve().parents[2]


def score(pred, actual, *, nan_pred=None, nan_actual=None, shape_pred="flat", shape_actual="flat"):
    errs = [abs(__import__("math").log(p / a)) for p, a in zip(pred, actual)]
    return {
        "predicted": pred,
        "actual": actual,
        "mean_log_error": sum(errs) / len(errs),
        "nan_predicted": nan_pred,
        "nan_actual": nan_actual,
        "nan_hit": (nan_pred is None) == (nan_actual is None),
        "shape_predicted": shape_pred,
        "shape_actual": shape_actual,
    }


def entry(note, s):
    return {"forecast": {"note": note}, "score": s}


def test_nan_forecast_late_is_named_with_its_size():
    scored = [
        score([2.0], [2.0], nan_pred=120, nan_actual=80, shape_pred="nan", shape_actual="nan"),
        score([2.0], [2.0], nan_pred=100, nan_actual=62, shape_pred="nan", shape_actual="nan"),
    ]
    assert habits(scored) == ["you forecast NaN too late by about 39 steps (2 NaN runs)"]


def test_plateaus_drawn_low_are_named_and_an_even_spread_is_not_a_habit():
    low = [score([1.9, 1.9], [2.3, 2.3]), score([1.8, 2.0], [2.3, 2.3])]
    assert "your plateaus sit 0.4 too low" in habits(low)
    mixed = [score([2.0, 2.0], [2.3, 2.3]), score([2.6, 2.6], [2.3, 2.3])]
    assert habits(mixed) == []


def test_report_groups_by_exercise_and_real_shape():
    entries = [
        entry(
            "ex_a/healthy", score([1.0], [1.0], shape_pred="descending", shape_actual="descending")
        ),
        entry("ex_a/detached", score([2.0], [1.0], shape_actual="descending")),
        entry(
            "ex_c/lr=30",
            score([2.0], [2.0], shape_pred="nan", shape_actual="nan", nan_pred=10, nan_actual=12),
        ),
        {"forecast": {"note": ""}, "score": None},
    ]
    r = calibration_report(entries)
    assert r["n_entries"] == 4 and r["n_scored"] == 3
    assert r["by_exercise"]["ex_a"]["n"] == 2 and r["by_exercise"]["ex_a"]["shape_right"] == 1
    assert r["by_shape"]["descending"]["n"] == 2 and r["by_shape"]["nan"]["nan_right"] == 1
    assert "ex_c " in r["text"] and "real shape" in r["text"]


def test_labkit_forecasts_prints_the_record_from_the_store(tmp_path):
    env = {**os.environ, "LABKIT_HOME": str(tmp_path), "OMP_NUM_THREADS": "1"}
    cfg = labkit.Config(steps=40)
    sketch = SketchForecast(
        config=cfg,
        series={"healthy": None, "zero LR": "zero_lr"},
        key="ex_z",
        points={"healthy": [[0, 2.3], [39, 0.5]], "zero LR": [[0, 2.0], [39, 2.0]]},
        history_path=tmp_path / "labkit.sqlite3",
    )
    sketch.require()
    sketch.score(
        {"healthy": labkit.train(cfg), "zero LR": labkit.train(cfg, bug="zero_lr")}, show=False
    )
    out = subprocess.run(
        [sys.executable, "-m", "labkit.cli", "forecasts", "--json", str(tmp_path / "cal.json")],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("2 scored forecast(s) of 2 sealed.")
    assert "ex_z" in out.stdout
    assert "Sealed predictions in the exercises:\nNo prediction reviewed yet." in out.stdout
    saved = json.loads((tmp_path / "cal.json").read_text())
    assert saved["by_exercise"]["ex_z"]["n"] == 2


def test_an_empty_history_says_how_to_start(tmp_path):
    r = calibration_report([])
    assert r["text"].startswith("0 forecast(s) sealed, none scored yet")


def test_plot_draws_one_point_per_scored_forecast():
    pytest.importorskip("matplotlib")
    from labkit.forecast.calibration import plot_calibration

    ax = plot_calibration(
        [entry("ex_a/x", score([1.0], [2.0])), entry("ex_b/y", score([1.0], [1.0]))]
    )
    assert sum(len(line.get_xdata()) for line in ax.lines if line.get_marker() == "o") == 2


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_the_forecast_axis_counts_in_whole_numbers_from_one(n):
    pytest.importorskip("matplotlib")
    from labkit.forecast.calibration import plot_calibration

    ax = plot_calibration([entry(f"ex_a/{i}", score([1.0], [2.0])) for i in range(n)])
    ax.figure.canvas.draw()
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(t == int(t) for t in ticks), ticks
    xs = [x for line in ax.lines if line.get_marker() == "o" for x in line.get_xdata()]
    assert sorted(xs) == list(range(1, n + 1))
