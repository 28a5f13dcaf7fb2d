"""The fault suite, output paths: a device, a FIFO, a link, the command's own input, a
foreign file, an empty path. Every command and API writes by one rule
(`labkit.store.outputs`); each case runs in-process with its own $LABKIT_HOME, in seconds.
"""

import json
import os
import stat
import threading

import pytest

from helpers import one_sentence
from labkit import Run
from labkit.cli import main
from labkit.diagnosis.record.triage import TriageRecord
from labkit.forecast import Forecast
from labkit.store.learner import default_store

COMMANDS = [["bugs"], ["export"], ["forecasts"], ["run", "--steps", "2"], ["drill", "--stats"]]


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_HOME", str(tmp_path / "home"))
    default_store().add("grade", "nb/0", {"notebook": "nb0.ipynb", "rows": [], "summary": {}})
    return tmp_path


def cli_error(capsys, *argv) -> str:
    assert main(list(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err.removeprefix("labkit: error: ")


class Reader(threading.Thread):
    """Reads a FIFO to its end, as `cat fifo` would."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path, self.got = path, b""
        self.start()

    def run(self):
        with open(self.path, "rb") as f:
            self.got = f.read()


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_fifo_is_written_through_and_stays_a_fifo(home, capsys, command):
    fifo = home / "pipe"
    os.mkfifo(fifo)
    reader = Reader(fifo)
    assert main([*command, "--json", str(fifo)]) == 0
    reader.join(10)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert json.loads(reader.got)["format"].startswith("labkit.")


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_device_is_written_through_and_never_replaced(home, capsys, command):
    null = home / "null"  # a private copy of /dev/null, never the real one
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    assert main([*command, "--json", str(null)]) == 0
    st = os.lstat(null)
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)


def test_a_link_to_stdout_is_written_through_and_the_link_kept(home, capsys):
    read_end, write_end = os.pipe()
    link = home / "stdout"  # as /dev/stdout -> /proc/self/fd/1
    link.symlink_to(f"/proc/self/fd/{write_end}")
    try:
        assert main(["bugs", "--json", str(link)]) == 0
        os.close(write_end)
        with os.fdopen(read_end, "rb") as f:
            got = f.read()
    finally:
        for fd in (read_end, write_end):
            try:
                os.close(fd)
            except OSError:
                pass
    assert link.is_symlink() and json.loads(got)["format"] == "labkit.bugs/1"


def test_an_output_that_is_stdouts_own_file_reads_as_dash(home):
    """`--json /dev/stdout`, or the file a shell's `>` already sent stdout to, gives one JSON
    document on stdout; the human report goes to stderr, as with `--json -`."""
    import subprocess
    import sys

    out = home / "redirected.txt"
    with open(out, "w") as f:  # as `labkit forecasts --json /dev/stdout > redirected.txt`
        done = subprocess.run(
            [sys.executable, "-m", "labkit", "forecasts", "--json", "/dev/stdout"],
            stdout=f,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "LABKIT_HOME": str(home / "home")},
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["format"] == "labkit.calibration/1"
    assert "forecast(s) sealed" in done.stderr  # the human report, moved out of the way


def test_a_link_is_followed_to_its_target(home, capsys):
    target = home / "reports" / "bugs.json"
    target.parent.mkdir()
    link = home / "latest.json"
    link.symlink_to(target)
    assert main(["bugs", "--json", str(link)]) == 0
    assert link.is_symlink() and json.loads(target.read_text())["format"] == "labkit.bugs/1"


def test_every_api_writes_through_a_fifo(home):
    run = Run.from_log({"step": [0, 1], "loss_raw": [2.3, 2.0]}, seed=0, started_at=1.0)
    forecast = Forecast([[0, 2.3], [10, 1.0]]).seal("0123456789ab")
    for write in (run.to_json, forecast.to_json, TriageRecord("x").save):
        fifo = home / "pipe"
        os.mkfifo(fifo)
        reader = Reader(fifo)
        write(fifo)
        reader.join(10)
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and json.loads(reader.got)["format"]
        fifo.unlink()


# ---- an output that is an input, or another output ------------------------------------------

SETUP = """
import torch
class Tiny:
    def make_model(self, seed): return torch.nn.Linear(2, 2)
    def make_optimizer(self, model): return torch.optim.SGD(model.parameters(), lr=0.1)
    def batches(self, seed): return [(torch.zeros(4, 2), torch.zeros(4, dtype=torch.long))]
    def loss_fn(self, model, batch): return torch.nn.functional.cross_entropy(model(batch[0]), batch[1])
    def train(self, seed, epochs): pass
"""


def test_triage_refuses_to_write_over_its_own_setup(home, capsys):
    setup = home / "mysetup.py"
    setup.write_text(SETUP)
    link = home / "alias.py"
    link.symlink_to(setup)
    for out in (setup, link):
        message = cli_error(capsys, "triage", "--setup", f"{setup}:Tiny", "--json", str(out))
        assert f"is also --setup={str(setup)!r}, an input of this command" in message
        assert one_sentence(message)
    assert setup.read_text() == SETUP


def test_grade_refuses_its_hidden_checks_and_two_reports_in_one_file(home, capsys):
    hidden = home / "H.py"
    hidden.write_text(
        "from labkit.check import answer_check\n\n@answer_check\ndef ex_a_hidden(x):\n    'x'\n"
    )
    notebook = "exercises/ex_a_break_the_graph.ipynb"
    message = cli_error(capsys, "grade", notebook, "--hidden", str(hidden), "--json", str(hidden))
    assert f"is also --hidden={str(hidden)!r}" in message
    out = str(home / "OUT")
    message = cli_error(capsys, "grade", notebook, "--json", out, "--csv", out, "--gradescope", out)
    assert f"--gradescope={out!r} and --json={out!r} name the same file" in message
    assert not os.path.exists(out) and default_store().count() == 1  # nothing graded


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--steps", "2"],
        ["bugs"],
        ["export"],
        ["grade", "exercises/ex_a_break_the_graph.ipynb", "--csv"],
        ["grade", "exercises/ex_a_break_the_graph.ipynb", "--gradescope"],
    ],
    ids=lambda a: a[0] + a[-1],
)
def test_an_empty_output_path_is_refused(home, capsys, argv):
    flag = argv[-1] if argv[-1].startswith("--") else "--json"
    args = argv if argv[-1].startswith("--") else [*argv, "--json"]
    message = cli_error(capsys, *args, "")
    assert message.startswith(f"{flag}='' is an empty path") and one_sentence(message)


def test_a_file_labkit_did_not_write_is_kept(home, capsys):
    notes = home / "notes.json"
    notes.write_text('{"mine": "three weeks of notes"}')
    message = cli_error(capsys, "bugs", "--json", str(notes))
    assert "a file labkit did not write is there" in message and "kept as it was" in message
    assert notes.read_text() == '{"mine": "three weeks of notes"}'
    report = home / "bugs.json"
    for _ in range(2):  # its own report, and an empty file, are written over
        assert main(["bugs", "--json", str(report)]) == 0
    empty = home / "empty.json"
    empty.touch()
    assert main(["bugs", "--json", str(empty)]) == 0 and json.loads(empty.read_text())


def test_triage_json_to_stdout_is_one_document_when_the_setup_prints(home, capsys):
    setup = home / "chatty.py"
    setup.write_text(
        SETUP.replace(
            "def train(self, seed, epochs): pass",
            """def train(self, seed, epochs):
        print('epoch 1 done')
        import labkit
        return labkit.Run.from_log({'step': [0, 1], 'loss_raw': [1.0, 0.9]}, seed=seed, started_at=0.0)""",
        )
    )
    main(["triage", "--setup", f"{setup}:Tiny", "--json", "-", "--budget", "60"])
    captured = capsys.readouterr()
    assert json.loads(captured.out)["format"] == "labkit.triage/1"
    assert "epoch 1 done" in captured.err


@pytest.mark.parametrize(
    "logdir, error, expected",
    [
        ("", ValueError, "logdir='' is an empty path"),
        (None, TypeError, "logdir must be a folder path"),
        ("home/labkit.sqlite3", ValueError, "is a file, not a folder, and it was left as it was"),
    ],
)
def test_to_tensorboard_takes_a_folder(home, logdir, error, expected):
    run = Run.from_log({"step": [0, 1], "loss_raw": [2.3, 2.0]}, seed=0, started_at=1.0)
    target = str(home / logdir) if logdir else logdir
    with pytest.raises(error, match=expected) as info:
        run.to_tensorboard(target)
    assert one_sentence(str(info.value)) and default_store().count() == 1


def test_logs_that_cannot_be_read_are_named(home):
    empty = home / "empty.csv"
    empty.write_text("")
    with pytest.raises(ValueError, match=f"The CSV log {str(empty)!r} is empty"):
        Run.from_csv(empty, raw="loss")
    folder = home / "runs"
    folder.mkdir()
    with pytest.raises(ValueError, match=f"The TensorBoard log {str(folder)!r} holds no scalars"):
        Run.from_tensorboard(folder, raw="loss")
    Run.from_log({"step": [0, 1], "loss_raw": [2.3, 2.0]}, seed=0, started_at=1.0).to_tensorboard(
        folder
    )
    with pytest.raises(
        TypeError, match=f"raw must name a scalar tag of {str(folder)!r}, as text; got None"
    ):
        Run.from_tensorboard(folder, raw=None)
    damaged = home / "damaged"
    damaged.mkdir()
    (damaged / "events.out.tfevents.1.host").write_bytes(b"\x00not an events file" * 8)
    with pytest.raises(
        ValueError,
        match="its 1 events file.s. .events.out.tfevents.1.host. hold "
        "no add_scalar values, or are damaged or truncated",
    ):
        Run.from_tensorboard(damaged, raw="loss")
