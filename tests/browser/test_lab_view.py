"""`make lab` as a learner meets it: the file browser lists the learner's view (no tests/,
no solutions/ unless SOLUTIONS=1), and `labkit` works in JupyterLab's own terminal although
the shell that ran `make` never activated .venv."""

import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from helpers import make_env

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _make_lab(tmp_path, **extra):
    """`make lab` in a shell without .venv on PATH; returns (process, base URL, token)."""
    port, token = _free_port(), "labkit-view-" + os.urandom(8).hex()
    env = {
        **make_env(),
        "PORT": str(port),
        "LABKIT_TOKEN": token,
        "BROWSER": "true",
        "PATH": os.pathsep.join(
            p
            for p in os.environ["PATH"].split(os.pathsep)
            if Path(p).resolve() != Path(sys.executable).parent.resolve()
        ),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "ws"),
        **extra,
    }
    env.pop("VIRTUAL_ENV", None)
    # -o: never (re)install from here, even where the stamp looks stale; BIN: this Python's
    cmd = ["make", "-s", "-o", ".venv/.labkit-lab", "lab", f"BIN={Path(sys.executable).parent}"]
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines, started = [], time.monotonic()
    for line in proc.stdout:
        lines.append(line)
        if f"?token={token}" in line:
            return proc, f"127.0.0.1:{port}", token, time.monotonic() - started
    _stop(proc)
    pytest.fail("make lab never printed its URL:\n" + "".join(lines))


def _stop(proc):
    os.killpg(proc.pid, 15)
    proc.wait(timeout=30)


def _api(base, token, path, method="GET"):
    req = urllib.request.Request(
        f"http://{base}/api/{path}?token={token}",
        method=method,
        data=b"{}" if method == "POST" else None,
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read() or b"null")


def _terminal(base, token, command: str, until: str, timeout=30) -> str:
    """Type `command` in a new JupyterLab terminal; its output up to `until`."""
    from tornado.ioloop import IOLoop
    from tornado.websocket import websocket_connect

    name = _api(base, token, "terminals", "POST")["name"]

    async def talk():
        ws = await websocket_connect(f"ws://{base}/terminals/websocket/{name}?token={token}")
        await ws.write_message(json.dumps(["stdin", command + "\r"]))
        out, end = "", time.monotonic() + timeout
        while until not in out and time.monotonic() < end:
            try:
                msg = await asyncio.wait_for(ws.read_message(), 2)
            except TimeoutError:
                continue
            if msg is None:
                break
            kind, *rest = json.loads(msg)
            out += rest[0] if kind == "stdout" else ""
        ws.close()
        return out

    return IOLoop.current().run_sync(talk, timeout=timeout + 10)


@pytest.mark.slow
def test_make_lab_lists_the_learners_view_and_its_terminal_finds_labkit(tmp_path):
    proc, base, token, seconds = _make_lab(tmp_path)
    try:
        names = {item["name"] for item in _api(base, token, "contents")["content"]}
        assert {"notebooks", "exercises", "README.md"} <= names
        assert not names & {"tests", "solutions", "labkit", "conftest.py"}, names
        notebooks = {i["name"] for i in _api(base, token, "contents/notebooks")["content"]}
        assert "00_start_here.ipynb" in notebooks
        # every page the README links to opens in the lab too (the guides live in docs/)
        links = re.findall(
            r"\]\(((?:docs|notebooks|exercises|examples)/[^)#]+)\)", README.read_text()
        )
        assert any(link.startswith("docs/") for link in links), links
        for link in links:
            assert _api(base, token, f"contents/{link}")["name"] == Path(link).name, link
        out = _terminal(base, token, "command -v labkit; labkit --help", "usage: labkit")
        assert str(Path(sys.executable).parent / "labkit") in out
        assert "usage: labkit" in out and "command not found" not in out, out
    finally:
        _stop(proc)
    print(f"make lab served its URL after {seconds:.1f} s")


@pytest.mark.slow
def test_make_lab_solutions_1_lists_solutions(tmp_path):
    proc, base, token, _ = _make_lab(tmp_path, SOLUTIONS="1")
    try:
        names = {item["name"] for item in _api(base, token, "contents")["content"]}
        assert "solutions" in names and "tests" not in names
    finally:
        _stop(proc)
