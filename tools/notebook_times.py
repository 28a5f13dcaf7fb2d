"""How long each notebook takes to execute from a cold kernel, as a learner's Run All would
(the bar: 30 s each, 60 s for Lab 15).

    .venv/bin/python tools/notebook_times.py [PATH ...]   # default: tests/reference, solutions

Each notebook runs with nbclient in a kernel of its own, started cold (torch imported in the
notebook's own time, as in a fresh JupyterLab), in a temporary copy of its folder and with a
fresh LABKIT_HOME, so nothing of the learner's is read or written. One line per notebook as
it finishes (seconds, the bar, and "over" where it is over), then the slowest. A notebook
that raises is reported with its error's first line. Exit status 1 when one is over its bar
or raised, else 0. The executed copies are thrown away.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ("tests/reference", "solutions")


def bar(path: Path) -> float:
    return 60.0 if path.name.startswith("lab15") else 30.0


def run_one(path: Path, timeout: int) -> tuple[float, str | None]:
    """Seconds to execute `path` in a fresh kernel, and the first line of its error or None."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="labkit-nbtime-") as tmp:
        work = Path(tmp) / "work"
        shutil.copytree(path.parent, work, ignore=shutil.ignore_patterns("*.ipynb"))
        env_home = Path(tmp) / "home"
        env_home.mkdir()
        old = os.environ.get("LABKIT_HOME")
        os.environ["LABKIT_HOME"] = str(env_home)
        try:
            client = NotebookClient(
                nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": work}}
            )
            t0 = time.perf_counter()
            try:
                client.execute()
                error = None
            except CellExecutionError as exc:
                error = str(exc).strip().splitlines()[-1][:200]
            return time.perf_counter() - t0, error
        finally:
            if old is None:
                os.environ.pop("LABKIT_HOME", None)
            else:
                os.environ["LABKIT_HOME"] = old


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", help="notebooks or folders (default: %(default)s)")
    parser.add_argument("--timeout", type=int, default=300, help="per cell, seconds")
    args = parser.parse_args(argv)
    found: list[Path] = []
    for p in args.paths or DEFAULT:
        p = (ROOT / p) if not Path(p).is_absolute() else Path(p)
        if not p.exists():
            print(f"notebook_times: {p} does not exist", file=sys.stderr)
            return 2
        found += sorted(p.glob("*.ipynb")) if p.is_dir() else [p]
    times, bad = [], 0
    for path in found:
        seconds, error = run_one(path, args.timeout)
        over = seconds > bar(path)
        bad += over or error is not None
        said = f"raised: {error}" if error else ("over" if over else "")
        print(
            f"{seconds:6.1f} s  (bar {bar(path):.0f} s)  {path.relative_to(ROOT)}  {said}",
            flush=True,
        )
        times.append((seconds, path))
    if times:
        s, p = max(times)
        print(
            f"{len(times)} notebooks, slowest {p.relative_to(ROOT)} {s:.1f} s; {bad} over or raised"
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
