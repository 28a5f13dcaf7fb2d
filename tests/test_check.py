"""Lab 15's checks teach on wrong answers, and the solution solves all three mysteries."""


import pytest

from labkit import check
from labkit.diagnosis import lab15
from labkit.diagnosis.triage import TriageRecord
from helpers import run_solution

pytestmark = pytest.mark.lab15


def test_predictions_need_three_distinct_shapes():
    good = {"H1": "nan: diverges", "H2": "flat", "H3": "descending raw batches"}
    assert check.lab15_predictions(good).startswith("ok")
    with pytest.raises(check.CheckFailed, match="no run could tell them apart"):
        check.lab15_predictions({"H1": "flat", "H2": "flat", "H3": "descending"})
    with pytest.raises(check.CheckFailed, match="one prediction per hypothesis"):
        check.lab15_predictions({"H1": "flat"})
    with pytest.raises(check.CheckFailed, match="these do not"):
        check.lab15_predictions({"H1": "bumpy", "H2": "flat", "H3": "descending"})


def test_forecast_must_be_checkable():
    assert check.lab15_forecast("loss < 1.5 by step 100").startswith("ok")
    with pytest.raises(check.CheckFailed, match="name a number and a step"):
        check.lab15_forecast("it will get better")


def test_conviction_of_the_wrong_system_gets_a_hint_not_the_answer():
    rec = TriageRecord("x")
    with pytest.raises(check.NotYetAnswered, match="no conviction yet"):
        check.lab15_conviction("A", rec)
    rec.convict("H1", "a guess with no rows behind it")
    with pytest.raises(check.CheckFailed, match="refuses a verdict"):
        check.lab15_conviction("A", rec)
    assert lab15.truth("C") == "H1"
    with pytest.raises(ValueError, match="mystery='D' is not allowed"):
        lab15.run_mystery("D")
    with pytest.raises(ValueError, match="Did you mean 'logger'"):
        lab15.run_mystery("A", fix="loger")


@pytest.mark.parametrize("mystery", ["B", "C"])
def test_solution_solves_every_mystery(tmp_path, mystery):
    text = run_solution("lab15_one_variable_intervention", tmp_path, mystery=mystery)
    assert f"ok: CONVICTION: {lab15.truth(mystery)} — " in text
    assert "forecast 'loss < 1.0 by step 150' MET" in text
