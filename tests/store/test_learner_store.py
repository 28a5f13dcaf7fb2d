"""The learner store: one SQLite file for every record a learner writes.

The concurrency and kill tests use real processes (os.fork), as two notebooks, the CLI or
a kernel restarted mid-write would be.
"""

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from helpers import one_sentence
from labkit.cli import main
from labkit.forecast import Forecast
from labkit.forecast.history import HISTORY_FORMAT, ForecastHistory
from labkit.forecast.score import ForecastScore
from labkit.store.learner import LearnerStore, StoreConflict, StoreError, default_store
from labkit.store import atomic_write_json
from labkit.diagnosis.record.triage import TriageRecord

CONFIG = "0123456789ab"  # a config hash: sealing with it needs no training


def forecast(i: int, who: str = "") -> Forecast:
    return Forecast([[0, 2.3], [10, 1.0 + i / 1000]], note=f"{who} guess {i}").seal(CONFIG)


def score(i: int) -> ForecastScore:
    return ForecastScore(
        steps=[0, 10],
        predicted=[2.3, 1.0],
        actual=[2.3, 1.1 + i],
        log_errors=[0.0, 0.1],
        mean_log_error=0.05,
        misses=0,
        nan_predicted=None,
        nan_actual=None,
        nan_hit=True,
        shape_predicted="descending",
        shape_actual="descending",
        verdict=f"score {i}",
    )


def triage(i: int, who: str = "") -> TriageRecord:
    rec = TriageRecord(f"{who} run {i}")
    rec.set_row("baseline", f"loss {i}", loss=[float("nan"), 1.0])  # NaN must survive the store
    return rec


def write(path, who: str, i: int, made: dict) -> str:
    """One of four kinds of write, by i; returns the line the writer acknowledges."""
    history = ForecastHistory(path)
    if i % 4 == 0:
        made[i] = forecast(i, who)
        history.add(made[i])
        return f"forecast {made[i].content_hash}"
    if i % 4 == 1:
        f = made.get(i - 1) or forecast(i, who)
        history.add(f, score(i))
        return f"score {f.content_hash} {i}"
    if i % 4 == 2:
        return f"triage {triage(i, who).keep(default_store(path))}"
    kind = ("drill", "flashcard", "grade")[i % 3]
    default_store(path).add(kind, f"{who}-{i}", {"who": who, "i": i})
    return f"{kind} {who}-{i} {i}"


def check_acknowledged(path, lines) -> int:
    """Every acknowledged write is in a freshly opened store; returns how many were checked."""
    store = LearnerStore(path)
    for line in lines:
        what, key, *rest = line.split()
        if what == "forecast":
            assert store.get("forecast", key) is not None, line
        elif what == "score":
            got = store.get("forecast", key)["body"]["score"]
            assert got == score(int(rest[0])).to_dict(), line
        elif what == "triage":
            assert store.get("triage", key) is not None, line
        else:
            assert store.get(what, key)["body"]["i"] == int(rest[0]), line
    store.close()
    return len(lines)


def fork(job):
    """Run job(write_fd) in a forked child; return (pid, read end of its pipe)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        os.close(r)
        code = 1
        try:
            job(w)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    return pid, r


def read_all(fd) -> list[str]:
    with os.fdopen(fd, "rb") as f:
        text = f.read().decode()
    return [line for line in text.split("\n")[:-1] if line]  # a cut-off last line does not count


# ---- the API -----------------------------------------------------------------------------


def test_records_are_added_once_and_changed_only_on_purpose(tmp_path):
    store = LearnerStore(tmp_path / "s.sqlite3")
    first = store.add("drill", "q1", {"answer": 3})
    assert store.add("drill", "q1", {"answer": 3}) == first  # the same again: no-op
    with pytest.raises(
        StoreConflict,
        match="already holds a different drill record under key 'q1'.*never overwrites",
    ) as err:
        store.add("drill", "q1", {"answer": 4})
    assert one_sentence(str(err.value))
    assert store.get("drill", "q1")["body"] == {"answer": 3} and store.get("drill", "q2") is None
    moved = store.update("flashcard", "warmup", lambda old: {"box": (old or {"box": 0})["box"] + 1})
    moved = store.update("flashcard", "warmup", lambda old: {"box": old["box"] + 1})
    assert moved["body"] == {"box": 2} and moved["updated_at"] >= moved["created_at"]

    def refuse(old):
        raise ValueError("not now")

    with pytest.raises(ValueError, match="not now"):
        store.update("flashcard", "warmup", refuse)
    assert store.get("flashcard", "warmup")["body"] == {"box": 2}
    assert [r["kind"] for r in store.records()] == ["drill", "flashcard"]
    assert (store.count(), store.count("grade"), store.records("grade")) == (2, 0, [])
    with pytest.raises(ValueError, match="kind='flashcards' is not allowed.*mean 'flashcard'"):
        store.add("flashcards", "x", {})
    with pytest.raises(ValueError, match="cannot be kept as JSON.*encode_nonfinite"):
        store.add("grade", "g", {"score": float("nan")})
    with pytest.raises(TypeError, match="key must be a non-empty string"):
        store.get("grade", 3)


def test_forecasts_and_triage_records_round_trip_through_the_store(tmp_path):
    path = tmp_path / "s.sqlite3"
    f, rec = forecast(1), triage(1)
    ForecastHistory(path).add(f, score(1))
    key = rec.keep(default_store(path))
    assert rec.keep(default_store(path)) == key  # keeping it unchanged again adds nothing
    rec.notes.append("a second look")
    assert rec.keep(default_store(path)) != key  # after an edit, a second snapshot
    fresh = LearnerStore(path)
    entry = fresh.records("forecast")[0]["body"]
    back = Forecast.from_dict(entry["forecast"])
    assert back == f and back.is_intact()
    assert ForecastScore.from_dict(entry["score"]) == score(1)
    kept = TriageRecord.kept(fresh)
    assert [r.notes for r in kept] == [[], ["a second look"]]
    assert (
        kept[0].to_dict()["rows"]["baseline"]["data"]["loss"][0]
        != kept[0].to_dict()["rows"]["baseline"]["data"]["loss"][0]
    )  # NaN came back as NaN
    assert TriageRecord.from_dict(rec.to_dict()).to_dict()["notes"] == ["a second look"]


def test_import_labkit_does_not_open_the_store(tmp_path):
    code = (
        "import sys, os, labkit\n"
        "print('labkit.store.learner' in sys.modules, 'sqlite3' in sys.modules)\n"
        "labkit.ForecastHistory()\n"
        "print(os.listdir(os.environ['LABKIT_HOME']))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "LABKIT_HOME": str(tmp_path)},
        check=True,
    ).stdout
    assert out.split("\n")[:2] == ["False False", "[]"]


# ---- several writers, and kills ------------------------------------------------------------


def test_four_processes_writing_at_once_lose_nothing(tmp_path):
    path = tmp_path / "home" / "labkit.sqlite3"  # a fresh home: the store is created in the race
    start = time.time() + 1.0  # every writer starts at the same moment

    def writer(who):
        def job(fd):
            time.sleep(max(0.0, start - time.time()))
            made = {}
            for i in range(100):
                os.write(fd, (write(path, who, i, made) + "\n").encode())

        return job

    children = [fork(writer(f"w{n}")) for n in range(4)]
    lines = []
    for pid, fd in children:
        lines += read_all(fd)
        assert os.waitpid(pid, 0)[1] == 0
    assert len(lines) == 400
    assert check_acknowledged(path, lines) == 400
    store = LearnerStore(path)
    assert (store.count("forecast"), store.count("triage")) == (100, 100)
    assert sum(r["body"]["score"] is not None for r in store.records("forecast")) == 100
    assert store.count() == 300  # 100 forecasts (each scored once), 100 triage, 100 drills etc.


def test_opening_a_new_store_waits_for_another_writer_starting_it(tmp_path):
    # Another connection holds a write lock on the new file before it is switched to WAL.
    # SQLite answers the WAL switch with SQLITE_BUSY at once there (no busy timeout), which
    # made one of two notebooks opening a new store together fail; the opening must wait.
    import sqlite3
    import threading

    path = tmp_path / "labkit.sqlite3"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    threading.Timer(0.5, lambda: other.execute("COMMIT")).start()
    began = time.monotonic()
    store = LearnerStore(path)
    store.add("grade", "g/1", {"points": 3})
    assert time.monotonic() - began >= 0.4  # it did wait for the other writer
    assert LearnerStore(path).get("grade", "g/1")["body"] == {"points": 3}
    other.close()


@pytest.mark.slow
def test_a_writer_killed_at_random_moments_loses_no_acknowledged_write(tmp_path):
    path = tmp_path / "labkit.sqlite3"
    rng = random.Random(16)
    acknowledged = []
    for kill in range(20):

        def job(fd, kill=kill):
            made = {}
            for i in range(10_000):
                os.write(fd, (write(path, f"k{kill}", i, made) + "\n").encode())

        pid, fd = fork(job)
        time.sleep(rng.uniform(0.0, 0.25))  # from before the store is open to many writes in
        os.kill(pid, signal.SIGKILL)
        assert os.waitpid(pid, 0)[1] == signal.SIGKILL
        lines = read_all(fd)
        acknowledged += lines
        check_acknowledged(path, lines)  # the store opens, and every returned write is there
    assert len(acknowledged) > 20
    assert check_acknowledged(path, acknowledged) == len(acknowledged)
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


# ---- old files, export and import -----------------------------------------------------------


def old_history(folder):
    """forecasts.json and .bak as the JSON ForecastHistory wrote them, one entry only in .bak."""
    f1, f2, f3 = forecast(1), forecast(2), forecast(3)
    entry = lambda f, s=None: {
        "forecast": f.to_dict(),
        "score": s and s.to_dict(),  # noqa: E731
        "added_at": f.sealed_at,
    }
    path = folder / "forecasts.json"
    atomic_write_json(path, {"format": HISTORY_FORMAT, "entries": [entry(f1), entry(f3)]})
    atomic_write_json(path, {"format": HISTORY_FORMAT, "entries": [entry(f1, score(1)), entry(f2)]})
    return path, [(f1, score(1)), (f2, None), (f3, None)]


def test_an_old_forecasts_json_is_imported_once_and_export_gives_it_back(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("LABKIT_HOME", str(tmp_path))
    old, expected = old_history(tmp_path)
    left = tmp_path / ".forecasts.json.k3j_x9a2.tmp"  # what kill -9 left behind before
    left.write_text("{")
    os.utime(left, (time.time() - 3600,) * 2)
    assert len(ForecastHistory()) == 3  # f3 was only in the .bak (lost from the main file)
    assert sorted(p.name for p in tmp_path.iterdir() if "forecasts" in p.name) == [
        "forecasts.json.bak.imported",
        "forecasts.json.imported",
    ]
    assert main(["export", "--json", str(tmp_path / "out.json")]) == 0
    doc = json.loads((tmp_path / "out.json").read_text())
    got = [
        (
            Forecast.from_dict(r["body"]["forecast"]),
            r["body"]["score"] and ForecastScore.from_dict(r["body"]["score"]),
        )
        for r in doc["records"]
    ]
    assert got == expected and all(f.is_intact() for f, _ in got)
    assert doc["counts"] == {"forecast": 3}
    ForecastHistory().add(forecast(4))  # later use does not read the renamed files again
    assert len(ForecastHistory()) == 4 and not left.exists()


def test_a_half_written_old_history_is_left_in_place_and_its_backup_imported(tmp_path):
    old, expected = old_history(tmp_path)
    old.write_text(old.read_text()[:100])  # what a crash of the old code could leave
    with pytest.warns(UserWarning, match="not valid JSON.*tried again each time the store opens"):
        entries = ForecastHistory(tmp_path / "labkit.sqlite3").entries()
    assert [Forecast.from_dict(e["forecast"]) for e in entries] == [expected[0][0], expected[2][0]]
    assert old.exists() and (tmp_path / "forecasts.json.bak.imported").exists()


def test_export_then_import_elsewhere_merges_without_duplicates(tmp_path, monkeypatch, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    monkeypatch.setenv("LABKIT_HOME", str(a))
    made = {}
    for i in range(8):  # 2 forecasts, both scored; 2 triage records; 2 drill/flashcard/grade
        write(a / "labkit.sqlite3", "a", i, made)
    assert main(["export", "--json", str(tmp_path / "a.json")]) == 0
    monkeypatch.setenv("LABKIT_HOME", str(b))
    ForecastHistory().add(made[0])  # b already has one of a's forecasts, not yet scored
    assert main(["import", str(tmp_path / "a.json")]) == 0
    assert "5 new record(s), 1 updated (a score added), 0 already there." in capsys.readouterr().out
    assert main(["import", str(tmp_path / "a.json")]) == 0
    assert "0 new record(s), 0 updated (a score added), 6 already there." in capsys.readouterr().out
    capsys.readouterr()
    assert main(["export"]) == 0
    back = json.loads(capsys.readouterr().out)["records"]
    mine = json.loads((tmp_path / "a.json").read_text())["records"]

    def same(records):  # b's own copy of forecast 0 keeps the time b added it
        return sorted(
            (
                r["kind"],
                r["key"],
                json.dumps({k: v for k, v in r["body"].items() if k != "added_at"}, sort_keys=True),
            )
            for r in records
        )

    assert same(back) == same(mine)


def test_an_import_that_conflicts_changes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LABKIT_HOME", str(tmp_path))
    f = forecast(5)
    ForecastHistory().add(f, score(5))
    doc = {
        "format": HISTORY_FORMAT,
        "entries": [
            {"forecast": forecast(6).to_dict(), "score": None, "added_at": 1.0},
            {"forecast": f.to_dict(), "score": score(99).to_dict(), "added_at": 1.0},
        ],
    }
    atomic_write_json(tmp_path / "other.json", doc)
    assert main(["import", str(tmp_path / "other.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("labkit: error: Nothing from ") and "different score" in err
    assert len(err.strip().splitlines()) == 1
    assert len(ForecastHistory()) == 1  # forecast 6 was not imported either


# ---- faults --------------------------------------------------------------------------------


def export_fails(home, capsys) -> str:
    assert main(["export"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    message = err.removeprefix("labkit: error: ")
    assert one_sentence(message), message
    return message


def test_a_foreign_or_damaged_store_is_named_and_never_written(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LABKIT_HOME", str(tmp_path))
    path = tmp_path / "labkit.sqlite3"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(200))  # someone else's file under that name
    message = export_fails(tmp_path, capsys)
    assert message.startswith(
        f"The file {str(path)!r} is not a labkit store (not SQLite), so labkit left it untouched"
    )
    assert path.read_bytes() == b"\x89PNG\r\n\x1a\n" + bytes(200)

    path.unlink()
    for i in range(200):  # a real store, several pages long, closed cleanly
        default_store(path).add("drill", f"q{i}", {"text": "x" * 200})
    default_store(path).close()
    data = bytearray(path.read_bytes())
    data[4096 * 2 : 4096 * 3] = b"\xde\xad" * 2048  # one page overwritten, as a bad disk might
    path.write_bytes(bytes(data))
    message = export_fails(tmp_path, capsys)
    assert message.startswith(f"The labkit store {str(path)!r} is damaged")
    assert ".recover" in message
    assert path.read_bytes() == bytes(data)
    with pytest.raises(StoreError, match="is damaged"):
        ForecastHistory(path).add(forecast(1))
    assert path.read_bytes() == bytes(data)


def without_permission_override():
    """In a child about to exec: give up root's power to write where permissions say no.

    Tests run as root, whom chmod alone does not stop. Dropping CAP_DAC_OVERRIDE and
    CAP_DAC_READ_SEARCH from the bounding set makes the exec'd program obey file modes like
    any other user, while it stays root (so it can still run the venv under /root).
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # 24 = PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) was refused")


def test_a_read_only_home_gives_a_sentence_and_loses_nothing(tmp_path):
    home = tmp_path / "home"
    store = LearnerStore(home / "labkit.sqlite3")
    for i in range(5):
        store.add("grade", f"g{i}", {"points": i})
    store.close()
    before = (home / "labkit.sqlite3").read_bytes()
    os.chmod(home, 0o555)
    env = {**os.environ, "LABKIT_HOME": str(home)}
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "labkit.cli", "export"],
            env=env,
            timeout=120,
            capture_output=True,
            text=True,
            preexec_fn=without_permission_override if os.getuid() == 0 else None,
        )
    except subprocess.SubprocessError as exc:
        pytest.skip(f"cannot make the folder read-only for root here ({exc})")
    finally:
        os.chmod(home, 0o755)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    message = proc.stderr.strip().removeprefix("labkit: error: ")
    assert len(proc.stderr.strip().splitlines()) == 1 and one_sentence(message), message
    assert (
        message.startswith(f"The labkit store {str(home / 'labkit.sqlite3')!r} cannot be written")
        and "nothing stored before was changed or lost" in message
    )
    assert (home / "labkit.sqlite3").read_bytes() == before
    assert [r["body"]["points"] for r in LearnerStore(home / "labkit.sqlite3").records()] == [
        0,
        1,
        2,
        3,
        4,
    ]


def test_a_full_disk_gives_a_sentence_and_loses_nothing(tmp_path):
    """A file-size limit (RLIMIT_FSIZE) makes every write past it fail, as a full disk would."""
    import resource

    path = tmp_path / "labkit.sqlite3"
    for i in range(5):
        default_store(path).add("grade", f"g{i}", {"points": i})
    default_store(path).close()

    def job(fd):
        store = LearnerStore(path)
        store.count()  # open it while writes still work
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1, 1))
        try:
            store.add("grade", "big", {"text": "x" * 100_000})
            os.write(fd, b"no error")
        except StoreError as exc:
            os.write(fd, str(exc).encode())

    pid, fd = fork(job)
    with os.fdopen(fd, "rb") as f:
        message = f.read().decode()
    os.waitpid(pid, 0)
    assert (
        message.startswith(f"The labkit store {str(path)!r} could not be written")
        and "everything stored before is intact" in message
        and one_sentence(message)
    ), message
    store = LearnerStore(path)
    assert [r["key"] for r in store.records()] == ["g0", "g1", "g2", "g3", "g4"]
    store.add("grade", "after", {"points": 9})  # and it still takes writes
    assert store.count() == 6
