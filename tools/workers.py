"""How many pytest-xdist workers `make test` starts: one per core and one more, as long as the
memory lets each of them have about 1.5 GB.

One more than the cores, because a worker that waits (a kernel starting, a browser page, a
grading time-out) leaves its core to the others; on an idle 2-core machine pass 1 took 479 s
with 3 workers and 563 s with 2; measured again on 2026-12-05, 3 workers still beat 2 and 4
(the figures are in docs/developer/tests.md). The memory cap is for machines with many
cores and little memory each: at its peak a worker holds torch and the tests (about 0.5 GB), a
warm kernel (0.3 GB, and a forked copy while a notebook runs) and, in a browser test, Chromium
and a JupyterLab server; in a clean-clone `make test` on a 2-core machine, the machine's memory in
use peaked 3.6 GB above idle with 3 workers. Runs on any Python 3.7 or newer, before .venv
exists.
"""

from __future__ import annotations

import os

PER_WORKER = 1.5 * 2**30  # bytes a worker may need at its peak


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


def workers(spare: int = 1) -> int:
    """Workers for a pass: one per core and `spare` more, within the memory. `make test` asks
    for no spare one in its second pass (`--no-spare`), whose units never wait on a browser or
    a time-out: there a third worker on two cores only added its start-up (torch, a zygote) and
    its kernels' competition; 2 workers ran the pass in 54.7-56.7 s and 99.7 CPU-s, 3 in
    56.5-59.7 s and 111.6-112.6 CPU-s, alternating on an idle 2-core machine."""
    n = cores() + spare
    free = available()
    return n if free is None else max(1, min(n, int(free // PER_WORKER)))


if __name__ == "__main__":
    import sys

    print(workers(0 if sys.argv[1:] == ["--no-spare"] else 1))
