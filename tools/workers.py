"""How many pytest-xdist workers `make test` starts: one per core and one more, as long as the
memory lets each of them have about 1.5 GB.

One more than the cores, because a worker that waits (a kernel starting, a browser page, a
grading time-out) leaves its core to the others; on an idle 2-core machine pass 1 took 479 s
with 3 workers and 563 s with 2. The memory cap is for machines with many cores and little
memory each: at its peak a worker holds torch and the tests (about 0.5 GB), a warm kernel
(0.3 GB, and a forked copy while a notebook runs) and, in a browser test, Chromium and a
JupyterLab server; in a clean-clone `make test` on a 2-core machine, the machine's memory in
use peaked 3.6 GB above idle with 3 workers. Runs on any Python 3.7 or newer, before .venv
exists.
"""

from __future__ import annotations

import os

PER_WORKER = 1.5 * 2 ** 30  # bytes a worker may need at its peak


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


def available() -> float | None:
    """Bytes of memory available now (Linux), or None where the system does not say."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def workers() -> int:
    n = cores() + 1
    free = available()
    return n if free is None else max(1, min(n, int(free // PER_WORKER)))


if __name__ == "__main__":
    print(workers())
