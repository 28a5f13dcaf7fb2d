"""The fault suite: output paths onto the store, a damaged store, malformed imports and
records, closed stdin, bad logs, a train() that never ends. Every case runs in-process
with its own $LABKIT_HOME and takes well under a second or two.
"""

import hashlib
import json
import sys
import threading
import time

import pytest
import torch
import torch.nn.functional as F

from helpers import one_sentence
from labkit import Run
from labkit.cli import main
from labkit.errors import OutputPathError
from labkit.forecast import Forecast
from labkit.store import atomic_write_json
from labkit.store.outputs import check_output as check_output_path
from labkit.store.learner import StoreError, default_store
from labkit.diagnosis.record.triage import TriageRecord


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A $LABKIT_HOME whose store holds three records, closed cleanly."""
    monkeypatch.setenv("LABKIT_HOME", str(tmp_path))
    store = default_store()
    for i in range(3):
        store.add("grade", f"nb/{i}", {"notebook": f"nb{i}.ipynb", "rows": [], "summary": {}})
    store.close()
    return tmp_path


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cli_error(capsys, *argv) -> str:
    """Run the command; it must exit 2 with one line and no traceback. Returns the line."""
    assert main(list(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err.removeprefix("labkit: error: ")


# ---- output paths -------------------------------------------------------------------------

STORE_TARGETS = [
    "labkit.sqlite3",
    "labkit.sqlite3-wal",
    "labkit.sqlite3-shm",
    "labkit.sqlite3-journal",
    "other.db",
    "link.json",
]
COMMANDS = [
    ["run", "--steps", "2"],
    ["export"],
    ["forecasts"],
    ["triage"],
    ["grade", "exercises/ex_a_break_the_graph.ipynb"],
]


@pytest.mark.parametrize("target", STORE_TARGETS)
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_no_command_writes_its_output_over_the_store(home, capsys, command, target):
    store = home / "labkit.sqlite3"
    (home / "other.db").write_bytes(store.read_bytes())  # another SQLite database
    (home / "link.json").symlink_to(store)  # a harmless name that resolves to the store
    before = digest(store), digest(home / "other.db")
    message = cli_error(capsys, *command, "--json", str(home / target))
    assert message.startswith(f"--json={str(home / target)!r} was refused") and one_sentence(
        message
    )
    assert (digest(store), digest(home / "other.db")) == before
    assert default_store().count() == 3
    assert not (home / "labkit.sqlite3-journal").exists() or target != "labkit.sqlite3-journal"


def test_every_api_that_writes_a_file_refuses_the_store(home):
    store = home / "labkit.sqlite3"
    before = digest(store)
    run = Run.from_log({"step": [0, 1], "loss_raw": [2.3, 2.0]}, seed=0, started_at=1.0)
    forecast = Forecast([[0, 2.3], [10, 1.0]]).seal("0123456789ab")
    writes = [
        lambda p: run.to_json(p),
        lambda p: forecast.to_json(p),
        lambda p: TriageRecord("x").save(p),
        lambda p: atomic_write_json(p, {}),
    ]
    for write in writes:
        for path in (store, str(store) + "-wal", home / "." / "labkit.sqlite3"):
            with pytest.raises(OutputPathError, match="was refused"):
                write(path)
    assert digest(store) == before and default_store().count() == 3
    assert check_output_path(home / "fine.json", "--json") == (home / "fine.json").resolve()


# ---- a damaged store ----------------------------------------------------------------------


def damage(home):
    """Overwrite one page of the store in the middle, as a bad disk might."""
    store = default_store()
    for i in range(60):  # a few pages of records
        store.add("drill", f"attempt/{i}", {"kind": "drill", "text": "x" * 300})
    store.close()
    path = home / "labkit.sqlite3"
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[page * 3 : page * 4] = b"\xde\xad" * (page // 2)
    fresh = path.with_name("fresh")  # a new file, as a new process meets it (quick_check
    fresh.write_bytes(bytes(data))  # runs once per file and process)
    fresh.replace(path)
    return path


def test_a_damaged_store_is_refused_and_never_written(home, capsys, monkeypatch):
    path = damage(home)
    before = digest(path)
    monkeypatch.setattr(sys, "stdin", None)
    for argv in (["drill"], ["export"], ["forecasts"], ["store", "check"]):
        message = cli_error(capsys, *argv)
        assert message.startswith(f"The labkit store {str(path)!r} is damaged"), message
        assert ".recover" in message and "move the damaged file aside" in message
        assert one_sentence(message)
    doc = home / "in.json"
    doc.write_text(
        json.dumps(
            {
                "format": "labkit.store/1",
                "records": [{"kind": "grade", "key": "g", "body": {"notebook": "a", "rows": []}}],
            }
        )
    )
    assert "is damaged" in cli_error(capsys, "import", str(doc))
    with pytest.raises(StoreError, match="is damaged"):
        default_store().add("grade", "new", {"notebook": "n", "rows": []})
    assert digest(path) == before


# ---- malformed imports ----------------------------------------------------------------------


def export_doc(*records) -> dict:
    return {"format": "labkit.store/1", "records": list(records)}


GOOD = {"kind": "grade", "key": "good", "body": {"notebook": "a.ipynb", "rows": []}}
BAD_IMPORTS = {
    "unknown kind": (
        export_doc(GOOD, {"kind": "drils", "key": "k", "body": {}}),
        (
            "record 2 (key 'k') is refused because its kind 'drils' is not one labkit "
            "keeps (did you mean 'drill'?"
        ),
    ),
    "body a string": (
        export_doc(GOOD, {"kind": "drill", "key": "session/1", "body": "oops"}),
        "field 'body' is text, not an object",
    ),
    "field type": (
        export_doc(
            {"kind": "flashcard", "key": "c1", "body": {"box": "two", "seen": 1, "known": 0}}
        ),
        "field 'body.box' is 'two' (text); a flashcard record needs a whole number",
    ),
    "triage body": (
        export_doc({"kind": "triage", "key": "t", "body": {"format": "nope"}}),
        "its body does not read as a triage record",
    ),
    "time as words": (
        export_doc({**GOOD, "created_at": "yesterday"}),
        "field 'created_at' is 'yesterday', which is not a time",
    ),
    "deep nesting": (
        export_doc({**GOOD, "body": {"x": json.loads("[" * 60 + "]" * 60)}}),
        "nests lists and objects more than 32 deep",
    ),
}


@pytest.mark.parametrize("case", BAD_IMPORTS)
def test_import_refuses_a_malformed_record_and_writes_nothing(home, capsys, case):
    doc, expected = BAD_IMPORTS[case]
    path = home / "in.json"
    path.write_text(json.dumps(doc))
    message = cli_error(capsys, "import", str(path))
    assert message.startswith(f"{str(path)!r} was not imported: record "), message
    assert expected in message and message.endswith("nothing was written.")
    assert default_store().count() == 3


@pytest.mark.parametrize(
    "content, expected",
    [
        (b"\xff\xfe{\x00}\x00", "is not UTF-8 text"),
        (bytes(range(256)), "is not UTF-8 text"),
        (b"[" * 200_000, "nests lists and objects too deeply"),
    ],
    ids=["utf16", "binary", "recursion"],
)
def test_import_of_an_unreadable_file_names_it(home, capsys, content, expected):
    path = home / "in.json"
    path.write_bytes(content)
    message = cli_error(capsys, "import", str(path))
    assert str(path) in message and expected in message and one_sentence(message)
    assert default_store().count() == 3


@pytest.mark.parametrize(
    "case, expected",
    [
        ("fifo", "is not a regular file (a FIFO, a device or a socket), so it was not read"),
        ("device", "is not a regular file (a FIFO, a device or a socket), so it was not read"),
        ("5000 digits", "holds a number too long to read (more than 4300 digits)"),
        ("400 digits", "field 'created_at' is a number of 400 digits, which is not a time"),
        ("lone surrogate", "holds a lone surrogate ('\\ud800' at position 3), which is not text"),
    ],
)
def test_import_of_what_is_not_a_document_is_refused_naming_it(home, capsys, case, expected):
    import os
    import stat

    path = home / "in.json"
    if case == "fifo":  # nobody writes it: reading would wait for ever
        os.mkfifo(path)
    elif case == "device":  # a private /dev/zero: reading would fill the memory
        if os.geteuid() != 0:
            pytest.skip("making a device node needs root")
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 5))
    else:
        created = {"5000 digits": "1" * 5000, "400 digits": "1" * 400}.get(case, "1")
        key = '"key\\ud800"' if case == "lone surrogate" else '"good"'
        path.write_text(
            '{"format": "labkit.store/1", "records": [{"kind": "grade", "key": '
            f'{key}, "body": {{"notebook": "a", "rows": []}}, "created_at": {created}}}]}}'
        )
    started = time.monotonic()
    message = cli_error(capsys, "import", str(path))
    assert time.monotonic() - started < 5 and str(path) in message and expected in message, message
    assert default_store().count() == 3


def test_an_iso_time_is_imported_as_seconds(home, capsys):
    path = home / "in.json"
    path.write_text(json.dumps(export_doc({**GOOD, "created_at": "2026-01-31T09:30:00Z"})))
    assert main(["import", str(path)]) == 0
    assert default_store().get("grade", "good")["created_at"] == 1769851800.0


# ---- malformed records already in a store ---------------------------------------------------


def plant(key: str, body_text: str) -> None:
    """A record written around labkit (an older version, another program)."""
    conn = default_store()._connect()
    conn.execute(
        "INSERT INTO records (kind, key, body, created_at, updated_at) VALUES "
        "('drill', ?, ?, 1, 1)",
        (key, body_text),
    )


def test_readers_skip_a_malformed_record_and_store_remove_takes_it_out(home, capsys, monkeypatch):
    plant("session/bad", '"a string"')
    plant("attempt/bad", "not json at all")
    with pytest.warns(UserWarning) as caught:
        assert main(["drill", "--stats"]) == 0  # reads every drill record: no crash
    said = " ".join(str(w.message) for w in caught)
    assert "Skipped the drill record 'session/bad'" in said and "'attempt/bad'" in said
    assert main(["store", "check"]) == 1
    out = capsys.readouterr().out
    assert "drill  session/bad  field 'body' is text, not an object" in out
    assert "drill  attempt/bad" in out and "5 record(s), 2 of them malformed" in out
    monkeypatch.setattr(sys, "stdin", None)  # no terminal to confirm in: refused
    assert "add --yes" in cli_error(capsys, "store", "remove", "drill", "session/bad")
    assert main(["store", "remove", "drill", "session/bad", "--yes"]) == 0
    assert (
        "did you mean 'attempt/bad'"
        in cli_error(capsys, "store", "remove", "drill", "attempt/bax").lower()
    )
    assert main(["store", "remove", "drill", "attempt/bad", "--yes"]) == 0
    assert main(["store", "check"]) == 0


def test_a_write_of_a_malformed_body_is_refused(home):
    with pytest.raises(ValueError, match="field 'body' is a list, not an object"):
        default_store().add("drill", "attempt/x", [1, 2])
    assert default_store().count() == 3


def test_drill_with_stdin_closed_pauses_and_exits_0(home, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", None)
    assert main(["drill", "--seed", "3"]) == 0
    assert "paused: the drill is saved" in capsys.readouterr().out


# ---- Run.from_log -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error, expected",
    [
        ({"columns": [{"step": 0, "loss_raw": 2.3}]}, TypeError, "pass columns instead"),
        ({"seed": "0"}, TypeError, "seed must be a whole number"),
        ({"started_at": "yesterday"}, TypeError, "started_at must be a time"),
        ({"started_at": float("nan")}, TypeError, "started_at must be a time"),
        (
            {"columns": {"step": [0, -1], "loss_raw": [1.0, 1.0]}},
            ValueError,
            "non-negative and increasing",
        ),
        ({"columns": {"step": [0, 2, 2], "loss_raw": [1.0] * 3}}, ValueError, "not after step 2"),
        ({"columns": {"step": [-1, 0], "loss_raw": [1.0] * 2}}, ValueError, "is -1, negative"),
        ({"columns": {"step": [0, 1.5], "loss_raw": [1.0] * 2}}, TypeError, "whole numbers"),
    ],
)
def test_run_from_log_refuses_what_is_not_a_log(kwargs, error, expected):
    given = {
        "columns": {"step": [0, 1], "loss_raw": [2.3, 2.0]},
        "seed": 0,
        "started_at": 1.0,
        **kwargs,
    }
    with pytest.raises(error, match=expected) as info:
        Run.from_log(given.pop("columns"), **given)
    assert one_sentence(str(info.value)), str(info.value)


# ---- a train() that never returns -------------------------------------------------------------


class Forever:
    """A setup whose train() never returns: pure Python, or a loop of torch ops that also
    swallows every Exception."""

    def __init__(self, torch_loop: bool):
        self.torch_loop = torch_loop
        g = torch.Generator().manual_seed(0)
        self.x, self.y = torch.randn(64, 4, generator=g), torch.randint(0, 3, (64,), generator=g)

    def make_model(self, seed):
        torch.manual_seed(seed)
        return torch.nn.Linear(4, 3)

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.1)

    def batches(self, seed):
        return [(self.x[i : i + 16], self.y[i : i + 16]) for i in range(0, 64, 16)]

    def loss_fn(self, model, batch):
        return F.cross_entropy(model(batch[0]), batch[1])

    def train(self, seed, epochs):
        x = torch.zeros(16)
        while True:
            if self.torch_loop:
                try:
                    x = (x + torch.randn(16)).tanh()
                except Exception:  # noqa: BLE001, S110 (a setup that swallows everything, on purpose)
                    pass


@pytest.mark.parametrize("torch_loop", [False, True], ids=["python", "torch"])
def test_diagnose_stops_a_train_that_never_returns_within_its_budget(torch_loop):
    import labkit
    import labkit.diagnosis.own.step6_decide.explorer  # noqa: F401 (loaded first: the time measured is the triage's)

    setup = Forever(torch_loop)
    model = setup.make_model(0)  # torch loads parts of itself on a first optimizer step
    setup.loss_fn(model, setup.batches(0)[0]).backward()
    setup.make_optimizer(model).step()
    started = time.monotonic()
    with pytest.raises(
        ValueError,
        match=r"Forever.train\(0, \d+\) was still running when the "
        r"triage's time budget of budget_s=1 s ran out",
    ) as info:
        labkit.diagnose(setup, budget_s=1)
    assert time.monotonic() - started < 2.0  # the 1 s budget, and the setup's check before it
    assert one_sentence(str(info.value))


def test_the_budget_also_stops_train_in_another_thread():
    import labkit

    got = {}

    def triage():
        try:
            labkit.diagnose(Forever(True), budget_s=0.5)
        except ValueError as exc:
            got["error"] = str(exc)

    thread = threading.Thread(target=triage)
    thread.start()
    thread.join(5)
    assert not thread.is_alive() and "budget_s=0.5 s ran out" in got["error"]


def test_budget_must_be_a_positive_number():
    import labkit

    with pytest.raises(ValueError, match="needs no budget"):
        labkit.diagnose("stale_log", budget_s=5)
    with pytest.raises(ValueError, match="budget_s=nan is not allowed"):
        labkit.diagnose(Forever(False), budget_s=float("nan"))
    with pytest.raises(
        ValueError,
        match=r"budget_s=1000000000000.0 is more than labkit's own "
        r"timer can hold \(at most 1e\+07 s",
    ) as info:
        labkit.diagnose(Forever(False), budget_s=1e12)
    assert one_sentence(str(info.value))


class Stuck(Forever):
    """A setup one of whose methods never returns (and swallows every Exception)."""

    def __init__(self, method: str):
        super().__init__(torch_loop=False)
        self.method = method

    def _hang(self):
        while True:
            try:
                time.sleep(0.01)
            except Exception:  # noqa: BLE001, S110 (a setup that swallows everything, on purpose)
                pass

    def make_model(self, seed):
        return self._hang() if self.method == "make_model" else super().make_model(seed)

    def batches(self, seed):
        return self._hang() if self.method == "batches" else super().batches(seed)

    def loss_fn(self, model, batch):
        return self._hang() if self.method == "loss_fn" else super().loss_fn(model, batch)


@pytest.mark.parametrize(
    "method, call",
    [
        ("make_model", r"make_model\(0\)"),
        ("batches", r"batches\(0\)"),
        ("loss_fn", r"loss_fn\(model, batch\)"),
    ],
)
def test_every_call_into_the_setup_is_stopped_within_the_budget(method, call):
    import labkit

    setup = Stuck(method)
    started = time.monotonic()
    with pytest.raises(
        ValueError,
        match=f"Stuck.{call} was still running when the triage's "
        "time budget of budget_s=1 s ran out",
    ) as info:
        labkit.diagnose(setup, budget_s=1)
    assert time.monotonic() - started < 6  # the budget plus 5 s
    assert one_sentence(str(info.value)) and "loss_fn" not in vars(setup)  # put back as it was


def test_import_of_a_store_file_and_grade_over_its_notebook_are_refused(home, capsys):
    message = cli_error(capsys, "import", str(home / "labkit.sqlite3"))
    assert "is an SQLite database (a labkit store?), not a JSON document" in message
    notebook = home / "ex.ipynb"
    notebook.write_text(
        (
            __import__("pathlib").Path(__file__).parents[2]
            / "exercises"
            / "ex_a_break_the_graph.ipynb"
        ).read_text()
    )
    before = digest(notebook)
    assert f"is also NOTEBOOK={str(notebook)!r}, an input of this command" in cli_error(
        capsys, "grade", str(notebook), "--json", str(notebook)
    )
    assert digest(notebook) == before and default_store().count() == 3


def test_a_damaged_store_with_a_journal_left_by_a_crash_is_left_as_it_was(
    tmp_path, monkeypatch, capsys
):
    """A crash leaves commits in the -wal file; the damaged store and its journal stay byte
    for byte as they were (closing a connection would otherwise merge the journal in)."""
    old, new = tmp_path / "old", tmp_path / "new"
    monkeypatch.setenv("LABKIT_HOME", str(old))
    store = default_store()
    for i in range(60):
        store.add("drill", f"attempt/{i}", {"kind": "drill", "text": "x" * 300})
    store.close()  # all of it in the file; then one more commit, only in the journal
    default_store().add("drill", "attempt/last", {"kind": "drill"})
    new.mkdir()  # copied while the writer is still running: as a crash leaves them
    data = bytearray((old / "labkit.sqlite3").read_bytes())
    (new / "labkit.sqlite3-wal").write_bytes((old / "labkit.sqlite3-wal").read_bytes())
    assert (new / "labkit.sqlite3-wal").stat().st_size > 0
    page = int.from_bytes(data[16:18], "big")
    data[page * 2 : page * 3] = b"\xde\xad" * (page // 2)  # a page of old records, in the file
    (new / "labkit.sqlite3").write_bytes(bytes(data))
    before = {p.name: digest(p) for p in new.iterdir()}
    monkeypatch.setenv("LABKIT_HOME", str(new))
    for argv in (["export"], ["store", "check"]):
        message = cli_error(capsys, *argv)
        assert "is damaged" in message or "not a labkit store" in message, message
    assert {p.name: digest(p) for p in new.iterdir() if p.name in before} == before


def test_a_record_that_is_not_utf8_is_listed_skipped_left_out_and_removable(
    home, capsys, monkeypatch
):
    conn = default_store()._connect()  # another program writes bytes that are not UTF-8
    conn.execute(
        "INSERT INTO records (kind, key, body, created_at, updated_at) VALUES "
        "('drill', 'attempt/latin1', CAST(? AS TEXT), 1, 1)",
        ('{"note": "caf\xe9"}'.encode("latin-1"),),
    )
    assert main(["store", "check"]) == 1
    out = capsys.readouterr().out
    assert "drill  attempt/latin1  field 'body' is not UTF-8 text (byte 13 cannot be read)" in out
    with pytest.warns(UserWarning, match="Skipped the drill record 'attempt/latin1'"):
        assert main(["export", "--json", "-"]) == 0
    captured = capsys.readouterr()
    assert len(json.loads(captured.out)["records"]) == 3
    assert "left out 1 malformed record(s)" in captured.err
    assert main(["store", "remove", "drill", "attempt/latin1", "--yes"]) == 0
    assert main(["store", "check"]) == 0
