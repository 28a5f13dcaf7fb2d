"""The grader's sandbox, one test per boundary its command line states
(`labkit.learn.grade.sandbox`): each runs a short Python in it, as a kernel or a function's
judge runs there, and looks at what got through. The same boundaries against whole notebooks
graded by `labkit grade` are the forgery suite's (test_grade_forgery.py)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from labkit.learn.grade import sandbox

pytestmark = pytest.mark.skipif(
    sandbox.works() is not None, reason=f"no sandbox here: {sandbox.works()}"
)
ROOT = Path(__file__).resolve().parents[3]


def inside(tmp_path, code: str, *argv, **limits) -> subprocess.CompletedProcess:
    """Run `python -c code argv...` in the sandbox, with `tmp_path/work` as its folder."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    line = sandbox.bwrap_command(
        [sys.executable, "-c", code, *map(str, argv)],
        work=str(work),
        env=sandbox.allowed_env({}),
        **limits,
    )
    try:
        return subprocess.run(line, capture_output=True, text=True, timeout=60)
    finally:
        sandbox.release(str(work))


def test_labkit_the_environment_and_the_system_are_read_only(tmp_path):
    import labkit

    targets = [Path(labkit.__file__).parent / "forged.py", Path(sys.prefix) / "forged", "/usr/x"]
    out = inside(
        tmp_path,
        "import sys\nfor t in sys.argv[1:]:\n"
        "    try:\n        open(t, 'w')\n        print('wrote', t)\n"
        "    except OSError as e:\n        print(e.strerror)\n"
        "open('mine.txt', 'w').write('kept')\n",  # its own folder is writable
        *targets,
    )
    assert out.stdout.splitlines() == ["Read-only file system"] * 3, out.stdout + out.stderr
    assert not any(t.exists() for t in targets[:2])
    assert (tmp_path / "work" / "mine.txt").read_text() == "kept"


def test_only_what_python_needs_is_there_and_tmp_is_private(tmp_path):
    (tmp_path / "other_learner.ipynb").write_text("{}")  # the class's other notebooks
    out = inside(
        tmp_path,
        "import os, sys\n"
        "print(os.path.exists(sys.argv[1]), os.path.exists(sys.argv[2]), os.listdir('/tmp'))\n"
        "open('/tmp/left', 'w').close()\n",
        tmp_path / "other_learner.ipynb",
        ROOT / "instructor",
    )
    # /tmp holds only the way to its own folder and to what Python reads, where those are under
    # /tmp (a checkout cloned there, as CI may): nothing else of the grader's /tmp
    from labkit.learn.grade.sandbox import readable

    seen = [tmp_path / "work", *map(Path, readable())]
    way = sorted({p.relative_to("/tmp").parts[0] for p in seen if p.is_relative_to("/tmp")})
    got = out.stdout.strip().split(maxsplit=2)
    assert got[:2] == ["False", "False"], out.stderr
    assert sorted(eval(got[2])) == way, out.stderr  # noqa: S307 - a list printed by the sandbox
    assert not Path("/tmp/left").exists()


def test_no_network_and_an_environment_of_the_allow_list_alone(tmp_path, monkeypatch):
    """Not even the grader's own loopback: a port it listens on cannot be reached."""
    import socket

    monkeypatch.setenv("GRADER_TOKEN", "secret")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    with socket.create_server(("127.0.0.1", 0)) as server:
        out = inside(
            tmp_path,
            "import os, socket, sys\n"
            "print([name for _, name in socket.if_nameindex()])\n"
            "try:\n    socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=2)\n"
            "    print('reached')\nexcept OSError:\n    print('unreachable')\n"
            "print(os.environ.get('GRADER_TOKEN'), os.environ.get('OMP_NUM_THREADS'))\n",
            server.getsockname()[1],
        )
    assert out.stdout.splitlines() == ["['lo']", "unreachable", "None 1"], out.stdout + out.stderr


def test_a_daemon_ends_with_the_sandbox(tmp_path):
    """A double-forked, setsid child: it leaves the process group, not the PID namespace."""
    token = f"602.{os.getpid()}"
    out = inside(
        tmp_path,
        "import os\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        f"        os.execvp('sleep', ['sleep', '{token}'])\n    os._exit(0)\nprint('forked')\n",
    )
    assert out.stdout.strip() == "forked", out.stderr
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-f", token], capture_output=True, text=True).stdout.split()
    for pid in left:
        os.kill(int(pid), signal.SIGKILL)
    assert left == []


def test_a_signal_to_the_parent_never_reaches_it(tmp_path):
    got = []
    previous = signal.signal(signal.SIGUSR1, lambda *a: got.append("signalled"))
    try:
        out = inside(
            tmp_path,
            "import os, signal\n"
            f"for pid in (os.getppid(), 1, {os.getpid()}, -1):\n"
            "    try:\n        os.kill(pid, signal.SIGUSR1)\n    except OSError as e:\n"
            "        print(e.strerror)\nprint('done')\n",
        )
        time.sleep(0.2)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert got == [] and out.stdout.strip().endswith("done"), out.stdout + out.stderr


def test_memory_past_the_limit_fails_in_the_sandbox_not_the_machine(tmp_path):
    out = inside(
        tmp_path,
        f"try:\n    b = bytearray({sandbox.MEMORY + 2**30})\n    print('allocated')\n"
        "except MemoryError:\n    print('MemoryError')\n",
    )
    assert out.stdout.strip() == "MemoryError", out.stdout + out.stderr


@pytest.mark.skipif(sandbox.limits_processes() is None, reason="no process limit here")
def test_a_fork_bomb_stops_at_the_process_limit_and_the_grader_goes_on(tmp_path):
    """A bounded bomb (children that sleep, until a fork fails): it stops at the limit, the
    sandbox ends, and its cgroup is gone with it."""
    started = time.monotonic()
    out = inside(
        tmp_path,
        "import os, time\nn = 0\nfor _ in range(2000):\n    try:\n        pid = os.fork()\n"
        "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(1)\n"
        "        os._exit(0)\n    n += 1\nprint(n)\n",
        processes=64,
    )
    assert 0 < int(out.stdout) < 64, out.stdout + out.stderr
    assert time.monotonic() - started < 30
    assert not any(
        Path(sandbox._group(r, str(tmp_path / "work"))).exists() for r in sandbox.CGROUPS
    )


def test_auto_refuses_with_how_to_install_when_bwrap_is_missing(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ValueError) as got:
        sandbox.mode("auto")
    said = str(got.value)
    assert said.startswith("--sandbox=auto needs bubblewrap, and bubblewrap (bwrap) is not ")
    assert "apt-get install bubblewrap" in said and "--sandbox none" in said
    assert sandbox.mode("none") == "none"
    with pytest.raises(ValueError, match="Did you mean 'bwrap'"):
        sandbox.mode("bwarp")
