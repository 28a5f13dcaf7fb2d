"""Start JupyterLab for `make lab`: loopback only, token required, --allow-root only as root.

It prints the URL once the server answers (not before), and turns off JupyterLab's
"get notified about official Jupyter news?" question for this environment's lab.

Usage: python tools/lab.py [NOTEBOOK] [--no-browser]
Environment: PORT (default 8888), LABKIT_TOKEN (default: a fresh random token).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

QUIET_NEWS = {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false",
                                                                "checkForUpdates": False}}


def lab_command(notebook: str, *, port: int, token: str, open_browser: bool) -> list[str]:
    cmd = [sys.executable, "-m", "jupyterlab", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", f"--IdentityProvider.token={token}",
           "--LabApp.news_url=None", "--ServerApp.port_retries=0"]
    if not open_browser:
        cmd.append("--no-browser")
    if os.getuid() == 0:  # Jupyter refuses to run as root without it
        cmd.append("--allow-root")
    # Serve the whole repository (notebooks/, solutions/, exercises/) and open the notebook.
    cmd += [f"--ServerApp.root_dir={os.getcwd()}", f"--LabApp.default_url=/lab/tree/{notebook}"]
    return cmd


def quiet_news(prefix: str = sys.prefix) -> Path:
    """Answer the news question with 'no' in this environment's settings overrides."""
    path = Path(prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    current = json.loads(path.read_text()) if path.exists() else {}
    for plugin, values in QUIET_NEWS.items():
        current.setdefault(plugin, {}).update(values)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(current, indent=2) + "\n")
    return path


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    notebook = args[0] if args else "notebooks/00_start_here.ipynb"
    token = os.environ.get("LABKIT_TOKEN") or secrets.token_hex(24)
    if len(token) < 16:
        print("tools/lab.py: LABKIT_TOKEN must be at least 16 characters.", file=sys.stderr)
        return 2
    port_text = os.environ.get("PORT", "8888")
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        print(f"tools/lab.py: PORT={port_text!r} is not a port; use a number from 1 to 65535.",
              file=sys.stderr)
        return 2
    port = int(port_text)
    quiet_news()
    cmd = lab_command(notebook, port=port, token=token, open_browser="--no-browser" not in argv)
    print(f"Starting JupyterLab on 127.0.0.1:{port} (token required)...", flush=True)
    proc = subprocess.Popen(cmd)
    # `kill` or a test's terminate() reaches this launcher: pass it on, leave no server behind.
    signal.signal(signal.SIGTERM, lambda *_: proc.terminate())  # the wait below then returns
    started = time.monotonic()
    while not answers(f"http://127.0.0.1:{port}/api/status?token={token}"):
        if proc.poll() is not None:
            print(f"JupyterLab stopped (exit {proc.returncode}) before it answered; is port "
                  f"{port} taken? Try PORT=8899 make lab.", file=sys.stderr)
            return 1
        time.sleep(0.25)
    print(f"JupyterLab is ready after {time.monotonic() - started:.0f} s. Open:\n\n"
          f"    http://127.0.0.1:{port}/lab/tree/{notebook}?token={token}\n\n"
          "Press Ctrl-C to stop it.", flush=True)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        try:
            return proc.wait(timeout=10)
        except (subprocess.TimeoutExpired, KeyboardInterrupt):
            proc.kill()
            return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
