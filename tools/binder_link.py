"""Print the Binder link for this repository, built from its own git remote.

The README's badge names the published repository; a fork, or a copy published under
another name, gets its own link here: https://mybinder.org/v2/gh/OWNER/NAME/BRANCH?urlpath=...

Usage: python tools/binder_link.py [REMOTE]      (default remote: origin)
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START = "notebooks/00_start_here.ipynb"
GITHUB = re.compile(r"github\.com[:/](?P<owner>[\w.-]+)/(?P<name>[\w.-]+?)(?:\.git)?/?$")


def link(owner: str, name: str, ref: str = "HEAD", start: str = START) -> str:
    return f"https://mybinder.org/v2/gh/{owner}/{name}/{ref}?urlpath=lab/tree/{start}"


def from_remote(url: str) -> str | None:
    """The Binder link for a GitHub remote URL (https or ssh), or None for another host."""
    m = GITHUB.search(url.strip())
    return link(m["owner"], m["name"]) if m else None


def main(argv: list[str]) -> int:
    remote = argv[0] if argv else "origin"
    got = subprocess.run(
        ["git", "remote", "get-url", remote], cwd=ROOT, capture_output=True, text=True
    )
    if got.returncode != 0:
        print(
            f"binder_link: this repository has no git remote {remote!r}; Binder builds from a "
            "public GitHub repository, so publish it first (git remote add origin "
            "https://github.com/OWNER/NAME).",
            file=sys.stderr,
        )
        return 2
    url = from_remote(got.stdout)
    if url is None:
        print(
            f"binder_link: remote {remote!r} is {got.stdout.strip()!r}, not on GitHub; "
            "mybinder.org's gh/ links need a GitHub repository.",
            file=sys.stderr,
        )
        return 2
    print(url)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
