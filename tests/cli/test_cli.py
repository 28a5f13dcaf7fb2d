import pytest

from helpers import labkit_cli
from labkit import Run
from labkit.cli import main


def run_cli(*args, process=False):
    """In this process (see helpers.labkit_cli), or as `python -m labkit.cli` where the test is
    about what a shell sees: the entry point, the exit status, no traceback."""
    return labkit_cli(*args, process=process, timeout=120)


def test_help_lists_commands():
    rc, out, _ = run_cli("--help", process=True)  # the real entry point, once
    assert rc == 0 and "run" in out and "usage: labkit" in out


@pytest.mark.slow
def test_run_writes_a_loadable_run(tmp_path):
    path = tmp_path / "run.json"
    rc, _, err = run_cli("run", "--steps", "30", "--seed", "1", "--json", str(path))
    assert rc == 0, err
    run = Run.from_json(path)
    assert len(run) == 30 and run.meta["seed"] == 1
    assert "wrote" in err


def test_run_to_stdout_with_lm_and_fp16(capsys):
    assert (
        main(["run", "--task", "lm", "--steps", "5", "--precision", "fp16", "--lr", "0.001"]) == 0
    )
    run = Run.from_json(capsys.readouterr().out)
    assert run.config["task"] == "lm" and run.config["lr"] == 0.001 and "amp_scale" in run.table


@pytest.mark.parametrize(
    "args, words",
    [
        (["run", "--precision", "fp8"], "--precision='fp8' is not allowed"),
        (["run", "--task", "regress"], "--task='regress' is not allowed"),
        (["run", "--steps", "-3"], "--steps=-3 is out of range"),
        (["run", "--lr", "-1"], "--lr=-1.0 is out of range"),
        (["run", "--steps", "ten"], "invalid int value: 'ten'"),
        (["runn"], "invalid choice: 'runn'"),
    ],
)
def test_bad_input_is_one_line_exit_2_no_traceback(args, words):
    rc, out, err = run_cli(*args, process=args == ["runn"])  # one as the shell sees it
    assert rc == 2
    assert words in err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err


@pytest.mark.slow
def test_triage_prints_the_form_and_ends_with_the_conviction(tmp_path):
    path = tmp_path / "t.json"
    rc, out, err = run_cli(
        "triage", "--bug", "wrong_logging_divisor", "--seeds", "0,1", "--json", str(path)
    )
    assert rc == 0, err
    lines = out.strip().splitlines()
    assert lines[0] == "TRAINING RUN EXPLORER — bug wrong_logging_divisor"
    assert lines[-1].startswith("CONVICTION: H3 — ") and "500" in lines[-1]
    assert path.exists()
    rc, out, _ = run_cli("triage")
    assert rc == 0 and out.strip().splitlines()[-1].startswith("CONVICTION: NONE — ")


@pytest.mark.parametrize(
    "args, words",
    [
        (["triage", "--bug", "detatch"], "did you mean 'detach'"),
        (["triage", "--seeds", "0"], "must be two seeds like 0,1"),
        (["triage", "--seeds", "a,b"], "must be two seeds like 0,1"),
        (["triage", "--seeds", "3,3"], "two different seeds"),
    ],
)
@pytest.mark.slow
def test_triage_bad_input_exits_2_with_one_line(args, words):
    rc, out, err = run_cli(*args)
    assert rc == 2 and words in err and len(err.strip().splitlines()) == 1 and not out


@pytest.mark.slow
def test_triage_refuses_task_together_with_bug():
    rc, out, err = run_cli("triage", "--bug", "detach", "--task", "lm")
    assert rc == 2 and "--task applies only without --bug" in err and not out


@pytest.mark.slow
def test_triage_a_setup_from_a_file(tmp_path):
    path = tmp_path / "r.json"
    rc, out, err = run_cli(
        "triage",
        "--setup",
        "examples/dataloader_classifier.py:DataLoaderClassifier",
        "--json",
        str(path),
    )
    assert rc == 0, err
    lines = out.strip().splitlines()
    assert lines[0] == "TRAINING RUN EXPLORER — setup DataLoaderClassifier"
    assert lines[-1].startswith("CONVICTION: H1 — gradients are cleared") and path.exists()


@pytest.mark.parametrize(
    "args, words",
    [
        (["--setup", "examples/none.py:X"], "--setup file examples/none.py does not exist"),
        (
            ["--setup", "examples/dataloader_classifier.py:DataLoaderClasifier"],
            "has no 'DataLoaderClasifier'; its setup classes are DataLoaderClassifier. Did you mean",
        ),
        (
            ["--setup", "examples/dataloader_classifier.py:make_data"],
            "setup function lacks make_model()",
        ),
        (["--setup", "README.md:X"], "must name a Python file and a class"),
        (
            [
                "--setup",
                "examples/none.py:X",
                "--budget",
                "1e12",
            ],  # checked before the file is read
            "--budget=1000000000000.0 is more than labkit's own timer can hold",
        ),
        (
            ["--setup", "examples/dataloader_classifier.py", "--bug", "detach"],
            "cannot be combined with --bug",
        ),
    ],
)
@pytest.mark.slow
def test_triage_setup_bad_input_exits_2_with_one_line(args, words):
    rc, out, err = run_cli("triage", *args)
    assert rc == 2 and words in err and len(err.strip().splitlines()) == 1 and not out, err


def test_a_stop_that_arrives_wrapped_is_still_a_stop(capsys):
    """SIGHUP landing while an import makes a class (`__set_name__`) reaches the CLI as a
    RuntimeError caused by the stop: seen in a clean-clone run, where `labkit drill
    --distributed` then exited 1 with a traceback instead of 129 and one line."""
    import signal

    from labkit.cli import _stopped, _wrapped_stop
    from labkit.cli.stop import Stopped

    try:
        try:
            raise Stopped(signal.SIGHUP)
        except Stopped as stop:
            raise RuntimeError("Error calling __set_name__ on 'Field' instance") from stop
    except RuntimeError as wrapped:
        stop = _wrapped_stop(wrapped)
    assert isinstance(stop, Stopped) and _wrapped_stop(ValueError("no stop here")) is None
    assert _stopped(stop, None, 0.0) == 128 + signal.SIGHUP
    assert capsys.readouterr().err == "labkit: stopped by SIGHUP; nothing more was done.\n"


def test_a_ctrl_c_that_left_an_exec_still_exits_with_the_status_returned(tmp_path):
    """A KeyboardInterrupt that passed through `exec` of a string (dataclasses make their
    methods so, and a Ctrl-C during an import lands there) is marked by CPython as never
    handled, even once the CLI caught it, and `python -m labkit` then ended by SIGINT (-2)
    instead of exiting 130 with its one line: a clean-clone run's `drill --distributed`
    signal test failed so, 2 runs in 20 at the session's start."""
    import subprocess
    import sys

    (tmp_path / "stop_in_exec.py").write_text(
        "import sys\n"
        "from labkit.cli import _stopped\n"
        "try:\n"
        "    exec('raise KeyboardInterrupt')\n"
        "except KeyboardInterrupt as exc:\n"
        "    code = _stopped(exc, None, 0.0)\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "stop_in_exec"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert done.stderr == "labkit: interrupted; nothing more was done.\n"
