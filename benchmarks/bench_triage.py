"""Wall time of one full automatic triage (`labkit.diagnose`, two seeds) per bug, one thread.

Run with ``make bench`` (or ``python benchmarks/bench_triage.py``). The bar is <= 10 s
for a full triage of one bug on one core. Prints each case and the slowest.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import torch

import labkit
from labkit.bugs import BUGS


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    labkit.diagnose("detach")  # warm-up: imports and first-call costs
    results = {}
    for name in [None, *BUGS]:
        t0 = time.perf_counter()
        record = labkit.diagnose(name)
        seconds = time.perf_counter() - t0
        results[str(name)] = {"seconds": seconds, "verdict": record.verdict()}
        print(f"{str(name):26s} {seconds:6.2f} s  {record.verdict()[:70]}")
    slowest = max(results, key=lambda k: results[k]["seconds"])
    print(f"slowest: {slowest} {results[slowest]['seconds']:.2f} s   (bar: <= 10 s on one core)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
