"""Where `labkit grade --jobs N` spends a class's time: the grader's locks, its verdicts, the
kernels, and how busy the machine's cores already were.

Run with ``python benchmarks/bench_grade_locks.py`` (``--learners 10 --jobs 1 2``), on the class
of `bench_grade_class` (right, wrong, unanswered, raising and never-ending learners). Each
grading runs in a process of its own with the grader's lock of re-training
(`labkit.learn.grade.truth._TRAINING`), its lock of verdicts (`labkit.learn.grade.VERDICTS`) and
its phases timed. Printed per --jobs: the wall time and its ratio to the first, how busy the
cores were (all work on the machine, from /proc/stat), and per lock or phase the count, the
seconds waited and the seconds held (or run). Before the gradings: how busy the cores were for
10 s, and two CPU-bound processes one after the other against both at once (what the machine
gives a second job just then).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_grade_class import write_class

TIMED = """import atexit, sys, threading, time
import labkit.learn.grade as g
import labkit.learn.grade.truth as truth
STATS = {}
class Timed:
    def __init__(self, name):
        self.name, self.lock, self.local = name, threading.Lock(), threading.local()
        STATS[name] = [0.0, 0.0, 0]
    def __enter__(self):
        t = time.perf_counter(); self.lock.acquire(); now = time.perf_counter()
        STATS[self.name][0] += now - t; STATS[self.name][2] += 1; self.local.t = now
    def __exit__(self, *a):
        STATS[self.name][1] += time.perf_counter() - self.local.t; self.lock.release()
def timed(module, name):
    real = getattr(module, name); STATS[name] = [0.0, 0.0, 0]
    def run(*a, **k):
        t = time.perf_counter()
        try:
            return real(*a, **k)
        finally:
            STATS[name][1] += time.perf_counter() - t; STATS[name][2] += 1
    setattr(module, name, run)
truth._TRAINING, g.VERDICTS = Timed("_TRAINING"), Timed("VERDICTS")
timed(truth, "_train"); timed(g, "_rows"); timed(g, "execute")
@atexit.register
def said():
    for k, (w, h, n) in STATS.items():
        print(f"TIMED {k:10s} n={n:3d}  waited {w:7.2f} s  held or ran {h:7.2f} s", file=sys.stderr)
from labkit.cli import main
sys.exit(main(sys.argv[1:]))
"""
SPIN = "x = 0\nfor i in range(60_000_000): x += i"


def cores() -> tuple[int, int]:
    fields = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return sum(fields), fields[3] + fields[4]


def busy(a, b) -> float:
    return 1 - (b[1] - a[1]) / max(1, b[0] - a[0])


def spin(at_once: int) -> float:
    started = time.perf_counter()
    for p in [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(at_once)]:
        p.wait()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--learners", type=int, default=10)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--notebook-timeout", type=float, default=20)
    a = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-grade-locks-"))
    folder = tmp / "class"
    folder.mkdir()
    write_class(folder, a.learners)
    before = cores()
    time.sleep(10)
    print(f"cores busy before grading: {busy(before, cores()):.0%} (10 s, others' work)")
    one_by_one, at_once = spin(1) + spin(1), spin(2)
    print(
        f"two CPU-bound processes: {one_by_one:.1f} s one by one, {at_once:.1f} s at once "
        f"(x{at_once / one_by_one:.2f})"
    )
    first = None
    for jobs in a.jobs:
        env = {**os.environ, "LABKIT_HOME": str(tmp / f"h{jobs}"), "OMP_NUM_THREADS": "1"}
        argv = ["grade", str(folder), "--notebook-timeout", str(a.notebook_timeout)]
        argv += ["--jobs", str(jobs), "--json", str(tmp / f"g{jobs}.json")]
        started, load = time.perf_counter(), cores()
        done = subprocess.run(
            [sys.executable, "-c", TIMED, *argv], capture_output=True, text=True, env=env
        )
        seconds = time.perf_counter() - started
        first = first or seconds
        print(
            f"jobs {jobs}: {seconds:.1f} s wall, x{seconds / first:.2f} of the first; "
            f"cores {busy(load, cores()):.0%} busy"
        )
        print("\n".join(f"  {x[6:]}" for x in done.stderr.splitlines() if x.startswith("TIMED")))


if __name__ == "__main__":
    main()
