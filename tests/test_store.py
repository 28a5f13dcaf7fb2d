import json

import pytest

from labkit.store import atomic_write_json, read_json


def test_atomic_write_keeps_last_good_copy(tmp_path):
    path = tmp_path / "notes.json"
    atomic_write_json(path, {"v": 1})
    atomic_write_json(path, {"v": 2})
    assert read_json(path) == {"v": 2}
    assert json.loads((tmp_path / "notes.json.bak").read_text()) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_corrupt_file_is_reported_and_left_untouched(tmp_path):
    path = tmp_path / "notes.json"
    atomic_write_json(path, {"v": 1})
    atomic_write_json(path, {"v": 2})
    path.write_text('{"v": 3')  # a crash of some other writer
    with pytest.raises(ValueError, match="not valid JSON.*left untouched.*last good copy"):
        read_json(path, what="forecast history")
    assert path.read_text() == '{"v": 3'
    assert read_json(tmp_path / "notes.json.bak") == {"v": 1}


def test_nan_is_refused_rather_than_written_as_invalid_json(tmp_path):
    with pytest.raises(ValueError):
        atomic_write_json(tmp_path / "x.json", {"v": float("nan")})
    assert not (tmp_path / "x.json").exists()
