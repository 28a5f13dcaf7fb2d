"""Signals at each phase of the long commands: no process of the run is left, no file of the
run is left, and the command says what was kept, with the shell's status for the signal.

A run is tagged with an environment variable that every process it starts inherits (even one
that leaves its process group), and "no process left" is read from the real process table.
`labkit drill --distributed` is signalled while its ranks start (importing torch: seconds,
so every signal lands while they run); `labkit triage --setup` while its ranks train, each
having started a child of its own. Temporary files are counted in the run's own $TMPDIR and
output folder. The in-process cases send the signal to this process at a chosen call (the
20th optimizer step, the temporary file's fsync, the 100th record of an import).
"""

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import torch

from labkit.cli import main
from labkit.core.process.children import sweep
from labkit.store.learner import default_store

ROOT = Path(__file__).resolve().parents[2]
SIGNALS = {  # signal: (exit status, the words the command says)
    signal.SIGINT: (130, "labkit: interrupted; nothing more was done"),
    signal.SIGTERM: (143, "labkit: stopped by SIGTERM; nothing more was done"),
    signal.SIGHUP: (129, "labkit: stopped by SIGHUP; nothing more was done"),
    signal.SIGKILL: (-9, None),  # the parent's death: the kernel ends the ranks
}


TORCH_CACHE = "torchinductor_"  # torch's compile cache in $TMPDIR, kept on purpose (by torch)


def tagged(tag: str) -> list[int]:
    """The live processes (not zombies) whose environment carries `tag`."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            env, stat = (d / "environ").read_bytes(), (d / "stat").read_text()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if f"LABKIT_RUN_TAG={tag}".encode() in env and stat.rsplit(") ", 1)[1][0] != "Z":
            found.append(int(d.name))
    return found


def until(condition, timeout: float, step: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = condition()
        if got:
            return got
        time.sleep(step)
    return condition()


class Launched:
    """`labkit ARGV` as a user starts it, in its own $LABKIT_HOME and $TMPDIR."""

    def __init__(self, tmp_path: Path, *argv: str):
        self.tag, self.tmp = uuid.uuid4().hex, tmp_path / "tmp"
        self.tmp.mkdir()
        env = dict(
            os.environ,
            LABKIT_RUN_TAG=self.tag,
            LABKIT_HOME=str(tmp_path / "home"),
            TMPDIR=str(self.tmp),
            OMP_NUM_THREADS="1",
            PYTHONPATH=str(ROOT / "tests"),
        )
        self.err = tmp_path / "stderr"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "labkit", *argv],
            stdin=subprocess.PIPE,  # open: a drill waits for its first probe
            stdout=subprocess.DEVNULL,
            stderr=self.err.open("w"),
            env=env,
            cwd=tmp_path,
            start_new_session=True,  # a signal reaches labkit's process only, as `kill` does
        )

    def children(self) -> list[int]:
        return [p for p in tagged(self.tag) if p != self.proc.pid]

    def stop(self, signum: int) -> tuple[int, str, list[int], list[str]]:
        """Send `signum`; the exit status, stderr, the processes and temporary files left."""
        self.proc.send_signal(signum)
        code = self.proc.wait(timeout=60)
        left = until(lambda: not tagged(self.tag), 5) or tagged(self.tag)
        return code, self.err.read_text(), left if left is not True else [], os.listdir(self.tmp)


def stopped_cleanly(run: Launched, signum: int, *, files_ok=()) -> None:
    code, err, left, files = run.stop(signum)
    status, words = SIGNALS[signum]
    assert code == status, err
    assert left == [], f"processes left after {signal.Signals(signum).name}: {left}"
    if words is not None:
        assert words in err and "Traceback" not in err, err
        assert [f for f in files if not f.startswith(TORCH_CACHE)] == [], files
    else:  # killed: no code of the command ran; its launch folder goes at the next launch
        assert all(f.startswith((*files_ok, TORCH_CACHE)) for f in files), files
        sweep(str(run.tmp))
        assert [f for f in os.listdir(run.tmp) if not f.startswith(TORCH_CACHE)] == []


@pytest.mark.slow
@pytest.mark.parametrize("signum", list(SIGNALS), ids=lambda s: signal.Signals(s).name)
def test_a_signal_to_drill_distributed_leaves_no_rank_behind(tmp_path, signum):
    run = Launched(tmp_path, "drill", "--distributed", "--seed", "0")
    assert until(lambda: len(run.children()) >= 2, 60), "the ranks never started"
    stopped_cleanly(run, signum, files_ok=("labkit-ranks-",))


OUTLIVES = """
import subprocess, time
from own_setups.ddp import DDPSetup

class StartsAChild(DDPSetup):
    \"\"\"Each rank starts a process that would outlive it as its train() begins (before DDP
    is imported), then trains slowly.\"\"\"

    def make_model(self, seed):
        if not getattr(self, "started", False):
            self.started = subprocess.Popen(["sleep", "600"]) is not None
        return super().make_model(seed)

    def step_begins(self, step):
        time.sleep(0.5)
"""


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_process_the_learners_ranks_started_ends_with_them(tmp_path, signum):
    """A signal while the ranks of `labkit triage --setup` train, each having started a
    `sleep 600` of its own: the ranks, their children and the launch's folder are gone (a
    killed command's folder at the next launch), and no --json is written. SIGKILL is the
    parent's death: the kernel ends the ranks, and each rank's watcher its group."""
    (tmp_path / "outlives.py").write_text(OUTLIVES)
    out = tmp_path / "t.json"
    run = Launched(
        tmp_path,
        "triage",
        "--setup",
        f"{tmp_path / 'outlives.py'}:StartsAChild",
        "--json",
        str(out),
    )

    def sleeping():
        return [p for p in run.children() if b"sleep" in Path(f"/proc/{p}/cmdline").read_bytes()]

    assert until(lambda: len(sleeping()) == 2, 90, step=0.1), "the ranks never started a child"
    stopped_cleanly(run, signum, files_ok=("labkit-ranks-",))
    assert not out.exists()


# ---- a stopped command removes its temporary files and says what it kept ------------------


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_HOME", str(tmp_path / "home"))
    store = default_store()
    store.update_many([("grade", f"nb/{i}", lambda old, i=i: {"rows": [i]}) for i in range(200)])
    store.close()
    return tmp_path


def signal_when(monkeypatch, module, name: str, signum: int, nth: int = 1) -> None:
    """Send `signum` to this process at the `nth` call of `module.name`, just before it runs:
    a signal at that phase of the command (its handler runs in the main thread at once)."""
    real, calls = getattr(module, name), []

    def hooked(*args, **kwargs):
        calls.append(1)
        if len(calls) == nth:
            os.kill(os.getpid(), signum)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, hooked, raising=False)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_export_stopped_while_it_writes_leaves_no_temporary_file(home, capsys, monkeypatch, signum):
    out = home / "out" / "all.json"
    out.parent.mkdir()
    signal_when(monkeypatch, os, "fsync", signum)  # the temporary file is written, not renamed
    assert main(["export", "--json", str(out)]) == SIGNALS[signum][0]
    assert os.listdir(out.parent) == []  # neither the output nor its temporary file
    err = capsys.readouterr().err
    assert SIGNALS[signum][1] in err
    assert f"--json {out} was not written (a file already there is unchanged)." in err
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handlers are put back


def test_export_stopped_after_its_rename_says_the_output_is_whole(home, capsys, monkeypatch):
    out = home / "all.json"
    import builtins

    import labkit.cli.output

    # `wrote PATH`, printed once the output is renamed into place
    monkeypatch.setattr(labkit.cli.output, "print", builtins.print, raising=False)
    signal_when(monkeypatch, labkit.cli.output, "print", signal.SIGTERM)
    assert main(["export", "--json", str(out)]) == 143
    assert f"--json {out} was written whole." in capsys.readouterr().err
    assert len(json.loads(out.read_text())["records"]) == 200


def test_import_stopped_mid_merge_keeps_all_or_nothing(home, capsys, monkeypatch):
    doc = home / "all.json"
    assert main(["export", "--json", str(doc)]) == 0
    monkeypatch.setenv("LABKIT_HOME", str(home / "other"))
    import labkit.store.learner as learner

    signal_when(monkeypatch, learner, "merge_rule", signal.SIGTERM, nth=100)  # mid-transaction
    assert main(["import", str(doc)]) == 143
    assert "stopped by SIGTERM" in capsys.readouterr().err
    assert default_store().count() == 0  # the transaction was rolled back whole
    default_store().close()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize(
    "argv",
    [["run", "--steps", "60"], ["triage", "--seeds", "0,1"], ["triage", "--setup", "SETUP"]],
    ids=["run", "triage", "triage-setup"],
)
def test_a_command_stopped_mid_training_writes_nothing_and_says_so(
    home, capsys, monkeypatch, argv, signum
):
    out = home / "out" / "report.json"
    out.parent.mkdir()
    setup = home / "my_setup.py"  # the own-code triage: the 20th step of a loop on their setup
    setup.write_text("from own_setups.healthy import BlobSetup\n")
    argv = [f"{setup}:BlobSetup" if a == "SETUP" else a for a in argv]
    signal_when(monkeypatch, torch.optim.SGD, "step", signum, nth=20)  # the 20th step
    assert main([*argv, "--json", str(out)]) == SIGNALS[signum][0]
    err = capsys.readouterr().err
    assert SIGNALS[signum][1] in err and "Traceback" not in err
    assert f"--json {out} was not written (a file already there is unchanged)." in err
    assert os.listdir(out.parent) == []
