"""How long a distributed drill mystery takes: the launch of two gloo ranks when the drill
starts (the mystery run and its second seed, 64 steps each), then each probe's answer.

Run with ``make bench`` (or ``python benchmarks/bench_drill_ranks.py [NAME ...]``, names of
the distributed zoo, default all seven). For each entry it plays `Drill(draw_ranks(seed))`
with the first seed that draws it: the time from the drill's start to its symptom (the
launch), when the ranks joined, and each probe's answer time after the launch. Timing is not
asserted by a test: the machines differ too much.
"""

from __future__ import annotations

import argparse
import os
import time

from labkit.learn.drill.ranks import draw_ranks, rank_mystery_names, rank_seed_for
from labkit.learn.drill.ranks.book import MENU
from labkit.learn.drill.session import Drill


def bench(name: str) -> str:
    seed = rank_seed_for(name)
    joined = []
    t = time.monotonic()
    drill = Drill(draw_ranks(seed))
    drill.intro_lines(lambda line: joined.append(line) if "joined" in line else None)
    start = time.monotonic() - t
    times = {}
    for probe in MENU:
        t = time.monotonic()
        drill.handle(f"probe {probe}")
        times[probe] = time.monotonic() - t
    when = joined[0].rsplit(": ", 1)[-1] if joined else "?"
    return (
        f"{name} (seed {seed}): start to symptom {start:.1f} s (ranks joined at {when}); "
        + ", ".join(f"{p} {v * 1e6:.0f} us" for p, v in times.items())
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="entries of the distributed zoo (default: all)")
    args = parser.parse_args()
    print(f"load average at the start: {os.getloadavg()[0]:.2f}", flush=True)
    for name in args.names or rank_mystery_names():
        print(bench(name), flush=True)


if __name__ == "__main__":
    main()
