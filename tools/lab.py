"""Start JupyterLab for `make lab`: loopback only, token required, --allow-root only as root.

Usage: python tools/lab.py [NOTEBOOK] [--no-browser]
Environment: PORT (default 8888), LABKIT_TOKEN (default: a fresh random token).
"""

from __future__ import annotations

import os
import secrets
import sys


def lab_command(notebook: str, *, port: int, token: str, open_browser: bool) -> list[str]:
    cmd = [sys.executable, "-m", "jupyterlab", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", f"--IdentityProvider.token={token}"]
    if not open_browser:  # scripted use: fail rather than wander to another port
        cmd += ["--no-browser", "--ServerApp.port_retries=0"]
    if os.getuid() == 0:  # Jupyter refuses to run as root without it
        cmd.append("--allow-root")
    # Serve the whole repository (notebooks/, solutions/, exercises/) and open the notebook.
    cmd += [f"--ServerApp.root_dir={os.getcwd()}", f"--LabApp.default_url=/lab/tree/{notebook}"]
    return cmd


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    notebook = args[0] if args else "notebooks/00_start_here.ipynb"
    token = os.environ.get("LABKIT_TOKEN") or secrets.token_hex(24)
    if len(token) < 16:
        print("tools/lab.py: LABKIT_TOKEN must be at least 16 characters.", file=sys.stderr)
        return 2
    port = int(os.environ.get("PORT", "8888"))
    cmd = lab_command(notebook, port=port, token=token, open_browser="--no-browser" not in argv)
    print(f"JupyterLab on http://127.0.0.1:{port}/lab/tree/{notebook}?token={token}", flush=True)
    os.execv(cmd[0], cmd)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
