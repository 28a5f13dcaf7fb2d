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


def _kill_self_while_writing(path):
    """In a forked child: start an atomic write and die by SIGKILL before the rename."""
    import os
    import signal

    os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)
    atomic_write_json(path, {"v": "never finished"})


def test_a_killed_write_leaves_a_tmp_file_that_the_next_write_removes(tmp_path):
    import multiprocessing
    import os
    import time

    path = tmp_path / "forecasts.json"
    atomic_write_json(path, {"v": 1})
    child = multiprocessing.get_context("fork").Process(
        target=_kill_self_while_writing, args=(path,)
    )
    child.start()
    child.join(30)
    assert child.exitcode == -9
    left = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert len(left) == 1 and f".labkit{child.pid}." in left[0]  # what kill -9 leaves behind
    old = tmp_path / ".forecasts.json.k3j_x9a2.tmp"  # the name labkit used before the pid tag
    old.write_text("{")
    os.utime(old, (time.time() - 3600,) * 2)
    fresh = tmp_path / ".run.json.abcd1234.tmp"  # as if another process were writing right now
    fresh.write_text("{")
    mine = tmp_path / ".notes.tmp"  # not a labkit name: never touched
    mine.write_text("mine")
    atomic_write_json(tmp_path / "other.json", {"v": 2})  # any later write in the folder
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == [
        ".notes.tmp",
        ".run.json.abcd1234.tmp",
    ]
    assert read_json(path) == {"v": 1}


def _rewrite(path, n):
    for i in range(n):
        atomic_write_json(path, {"v": i})


def test_a_reader_never_finds_the_file_missing_while_others_write(tmp_path):
    import multiprocessing

    path = tmp_path / "notes.json"
    atomic_write_json(path, {"v": -1})
    ctx = multiprocessing.get_context("fork")
    writers = [ctx.Process(target=_rewrite, args=(path, 150)) for _ in range(2)]
    for w in writers:
        w.start()
    reads = 0
    while any(w.is_alive() for w in writers):
        assert "v" in read_json(path)  # FileNotFoundError here was the old backup step's gap
        reads += 1
    for w in writers:
        w.join()
        assert w.exitcode == 0
    assert reads > 10 and "v" in read_json(path.with_name("notes.json.bak"))


def _write_under_a_file_size_limit(path, limit, out):
    import resource
    import signal

    signal.signal(
        signal.SIGXFSZ, signal.SIG_IGN
    )  # let write() fail with EFBIG, as a full disk would
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    try:
        atomic_write_json(path, {"v": "x" * 10_000})
    except OSError as exc:
        out.put(str(exc))
    else:
        out.put("no error")


def test_a_failed_write_says_so_in_a_sentence_and_keeps_the_old_file(tmp_path):
    import multiprocessing

    path = tmp_path / "notes.json"
    atomic_write_json(path, {"v": 1})
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_write_under_a_file_size_limit, args=(path, 4096, out))
    child.start()
    message = out.get(timeout=30)
    child.join(30)
    assert message.startswith(f"Could not write {str(path)!r} (File too large)")
    assert message.endswith("the file there before, if any, is unchanged.")
    assert read_json(path) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
