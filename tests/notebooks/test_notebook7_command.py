"""The README's Notebook 7 command, run as a learner types it, serves the whole course.

Without `--ServerApp.root_dir=.`, `jupyter notebook notebooks/00_start_here.ipynb` serves only
`notebooks/`, and Exercises A-F are out of reach; as root, Jupyter stops with "Running as root
is not recommended" unless the command has the `--allow-root` the README tells root to add.
"""

import json
import os
import re
import shlex
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def readme_command() -> list[str]:
    text = re.sub(r"\s+", " ", (ROOT / "README.md").read_text())
    found = re.search(r"`(\.venv/bin/jupyter notebook [^`]+)`", text)
    assert found, "the README gives no Notebook 7 command"
    assert "add `--allow-root`" in text[found.end() : found.end() + 120], (
        "the README does not say what to add as root"
    )
    return shlex.split(found.group(1))


@pytest.mark.slow
def test_the_readme_notebook7_command_serves_the_whole_course(tmp_path):
    command = readme_command()
    exe = ROOT / command[0]
    if not exe.exists():
        pytest.skip(f"{command[0]} is not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    extra = ["--no-browser", f"--port={port}", "--IdentityProvider.token=t"]
    extra += ["--allow-root"] if os.getuid() == 0 else []  # as the README tells root
    server = subprocess.Popen(
        [str(exe), *command[1:2], *extra, *command[2:]],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path)},
    )
    try:
        listing = None
        for _ in range(100):
            try:
                url = f"http://127.0.0.1:{port}/api/contents?token=t"
                with urllib.request.urlopen(url, timeout=2) as r:
                    listing = json.load(r)
                break
            except OSError:
                assert server.poll() is None, server.stderr.read()[-2000:]
                time.sleep(0.2)
        assert listing is not None, "the server never answered"
        names = {c["name"] for c in listing["content"]}
        assert {"notebooks", "exercises", "README.md"} <= names, sorted(names)
    finally:
        server.terminate()
        server.wait(timeout=20)
