"""Start JupyterLab for `make lab`: loopback only, token required, --allow-root only as root.

It prints the URL once the server answers (not before), and turns off JupyterLab's
"get notified about official Jupyter news?" question for this environment's lab.

The server runs with this environment's bin folder (.venv/bin) first on PATH, so a terminal
opened in JupyterLab finds `labkit`. It shows the learner's view of the repository:
notebooks/, exercises/, examples/ and the README; solutions/ only with SOLUTIONS=1; the
rest (tests/ with its executed references, the package, the tooling) is not listed.

Usage: python tools/lab.py [NOTEBOOK] [--no-browser]
Environment: PORT (default 8888), LABKIT_TOKEN (default: a fresh random token),
SOLUTIONS=1 (list solutions/ too).
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

LEARNER_VIEW = (
    "notebooks",
    "exercises",
    "examples",
    "docs",
    "README.md",
)  # docs: the README links there
SOLUTIONS = "solutions"
QUIET_NEWS = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
    # a saved notebook keeps its widgets' state, so a page reloaded after a kernel restart shows
    # the sealed sketch and form (and their "re-run this cell"), not "model not found"
    "@jupyter-widgets/jupyterlab-manager:plugin": {"saveState": True},
}


def hidden(root: Path, solutions: bool) -> list[str]:
    """Glob patterns the file browser leaves out: Jupyter's own, then every top-level entry
    of the repository that is not the learner's (the names match at any depth)."""
    shown = set(LEARNER_VIEW) | ({SOLUTIONS} if solutions else set())
    own = ["__pycache__", "*.pyc", "*.pyo", ".DS_Store", "*~"]
    return own + sorted(
        p.name for p in root.iterdir() if p.name not in shown and not p.name.startswith(".")
    )


def server_env(environ=os.environ) -> dict:
    """The server's environment: this Python's bin folder first on PATH (terminals find
    `labkit` there), and VIRTUAL_ENV set as `activate` sets it."""
    bin_dir = str(Path(sys.executable).parent)
    rest = [p for p in environ.get("PATH", "").split(os.pathsep) if p and p != bin_dir]
    return {**environ, "PATH": os.pathsep.join([bin_dir, *rest]), "VIRTUAL_ENV": sys.prefix}


def lab_command(
    notebook: str, *, port: int, token: str, open_browser: bool, solutions: bool = False
) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        f"--IdentityProvider.token={token}",
        "--LabApp.news_url=None",
        "--ServerApp.port_retries=0",
    ]
    if not open_browser:
        cmd.append("--no-browser")
    if os.getuid() == 0:  # Jupyter refuses to run as root without it
        cmd.append("--allow-root")
    # Serve the repository, listing only the learner's view, and open the notebook.
    root = Path.cwd()
    cmd += [
        f"--ServerApp.root_dir={root}",
        f"--LabApp.default_url=/lab/tree/{notebook}",
        f"--ContentsManager.hide_globs={json.dumps(hidden(root, solutions))}",
        # The learner's own shell, not a login shell: a login shell (what Jupyter picks
        # when its output is not a terminal) reads /etc/profile, which resets PATH.
        "--ServerApp.terminado_settings="
        + json.dumps({"shell_command": [os.environ.get("SHELL") or "/bin/sh"]}),
    ]
    return cmd


def quiet_news(prefix: str = sys.prefix) -> Path:
    """Answer the news question with 'no', and save widget state with each notebook, in this
    environment's settings overrides (JupyterLab's and Notebook 7's)."""
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
        print(
            f"tools/lab.py: PORT={port_text!r} is not a port; use a number from 1 to 65535.",
            file=sys.stderr,
        )
        return 2
    port = int(port_text)
    quiet_news()
    solutions = os.environ.get("SOLUTIONS", "") not in ("", "0")
    cmd = lab_command(
        notebook,
        port=port,
        token=token,
        open_browser="--no-browser" not in argv,
        solutions=solutions,
    )
    print(
        f"Starting JupyterLab on 127.0.0.1:{port} (token required); its terminals have "
        f"{Path(sys.executable).parent} first on PATH, so `labkit` works there"
        + (
            "; solutions/ is listed"
            if solutions
            else "; solutions/ is not listed (SOLUTIONS=1 make lab lists it)"
        )
        + "...",
        flush=True,
    )
    proc = subprocess.Popen(cmd, env=server_env())
    # `kill` or a test's terminate() reaches this launcher: pass it on, leave no server behind.
    signal.signal(signal.SIGTERM, lambda *_: proc.terminate())  # the wait below then returns
    started = time.monotonic()
    while not answers(f"http://127.0.0.1:{port}/api/status?token={token}"):
        if proc.poll() is not None:
            print(
                f"JupyterLab stopped (exit {proc.returncode}) before it answered; is port "
                f"{port} taken? Try PORT=8899 make lab.",
                file=sys.stderr,
            )
            return 1
        time.sleep(0.25)
    print(
        f"JupyterLab is ready after {time.monotonic() - started:.0f} s. Open:\n\n"
        f"    http://127.0.0.1:{port}/lab/tree/{notebook}?token={token}\n\n"
        "Press Ctrl-C to stop it.",
        flush=True,
    )
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
