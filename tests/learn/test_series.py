"""series_view scores a sketch of another curve of a run; raw_points keeps what was measured."""

import pytest

import labkit
from labkit.learn.series import raw_points, series_view


@pytest.fixture(scope="module")
def run():
    return labkit.train(steps=60, eval_every=20)


def test_a_table_column_is_taken_as_it_is(run):
    view = series_view(run, "loss_reported")
    assert view.table["loss_raw"] == run.table["loss_reported"]
    assert view.meta["config_hash"] == run.meta["config_hash"]
    assert view.timing["started_at"] == run.timing["started_at"]
    assert run.table["loss_raw"] != run.table["loss_reported"]  # the run itself is untouched


def test_an_eval_column_is_joined_between_evaluations_and_anchored_at_start(run):
    at, ys = run.evals["step"], run.evals["val_loss"]
    view = series_view(run, "val_loss", start=2.3)
    values = view.table["loss_raw"]
    assert len(values) == len(run)
    assert values[0] == 2.3 and [values[s] for s in at] == pytest.approx(ys)
    mid = (at[0] + at[1]) // 2
    assert min(ys[0], ys[1]) <= values[mid] <= max(ys[0], ys[1])
    assert series_view(run, "val_loss").table["loss_raw"][0] == ys[0]  # held flat without start


def test_raw_points_are_only_the_measured_ones(run):
    assert raw_points(run, "val_loss") == (run.evals["step"], run.evals["val_loss"])
    assert len(raw_points(run, "loss_raw")[0]) == len(run)


def test_an_unknown_column_is_refused_with_the_columns(run):
    with pytest.raises(ValueError, match="column='val_los' is neither .* val_loss"):
        series_view(run, "val_los")
