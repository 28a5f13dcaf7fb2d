"""`make lab`'s launcher serves JupyterLab on loopback and refuses requests without the token."""

import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


@pytest.mark.slow
def test_lab_requires_the_token():
    port, token = _free_port(), "labkit-test-token-" + os.urandom(8).hex()
    env = {**os.environ, "PORT": str(port), "LABKIT_TOKEN": token}
    proc = subprocess.Popen(
        [sys.executable, "tools/lab.py", "notebooks/00_start_here.ipynb", "--no-browser"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        lines = []
        for line in proc.stdout:  # the launcher prints the URL only once the server answers
            lines.append(line)
            if f"?token={token}" in line:
                assert _get(f"{base}/api/status?token={token}") == 200
                break
        else:
            pytest.fail("the launcher never printed the URL:\n" + "".join(lines))
        assert line.strip() == f"{base}/lab/tree/notebooks/00_start_here.ipynb?token={token}"
        overrides = Path(sys.prefix, "share", "jupyter", "lab", "settings", "overrides.json")
        news = json.loads(overrides.read_text())["@jupyterlab/apputils-extension:notification"]
        assert news["fetchNews"] == "false"
        widgets = json.loads(overrides.read_text())["@jupyter-widgets/jupyterlab-manager:plugin"]
        assert widgets["saveState"] is True  # a reload after a restart shows the saved views
        assert _get(f"{base}/api/contents/notebooks") == 403
        assert _get(f"{base}/api/contents/notebooks?token=wrong-token") == 403
        assert _get(f"{base}/api/contents/notebooks?token={token}") == 200
        assert _get(f"{base}/api/contents/notebooks/00_start_here.ipynb?token={token}") == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)
