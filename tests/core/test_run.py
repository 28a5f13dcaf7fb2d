import json
import math

import pytest

from labkit import Run, train


def test_round_trip_is_exact_including_nonfinite_values(tmp_path):
    run = train(steps=12, eval_every=4)
    run.table["loss_raw"][3] = math.nan
    run.table["grad_norm"][4] = math.inf
    text = run.to_json()
    json.loads(text)  # strict JSON: no bare NaN/Infinity tokens
    assert "NaN" in text and "Infinity" in text
    back = Run.from_json(text)
    assert back.to_json() == text
    assert math.isnan(back.table["loss_raw"][3]) and back.table["grad_norm"][4] == math.inf
    path = tmp_path / "run.json"
    run.to_json(path)
    assert Run.from_json(path).to_json() == text
    assert back.first_nonfinite_step() == 3


def test_metadata_names_everything_needed_to_reproduce():
    run = train(steps=3)
    for key in (
        "config",
        "seed",
        "data_hash",
        "init_hash",
        "config_hash",
        "labkit_version",
        "torch_version",
    ):
        assert run.meta[key] is not None, key
    assert run.meta["torch_version"].startswith("2.")


def test_bad_json_and_unknown_columns_are_explained(tmp_path):
    with pytest.raises(ValueError, match="could not parse"):
        Run.from_json("{not json")
    with pytest.raises(ValueError, match="expected format='labkit.run/1'"):
        Run.from_json('{"format": "other"}')
    with pytest.raises(FileNotFoundError, match="No run at"):
        Run.from_json(tmp_path / "missing.json")
    with pytest.raises(KeyError, match="Did you mean 'loss_raw'"):
        train(steps=2).column("loss_rae")


def test_rows_and_summary():
    run = train(steps=4)
    rows = list(run.rows())
    assert len(rows) == 4 and rows[2]["step"] == 2
    assert "loss 2.302 ->" in run.summary()
