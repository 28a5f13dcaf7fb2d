"""Every batch of setups at once: the per-batch and overall scores, for a closing note.

    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_all [--jobs 2] [--json ROWS.json]

Each setup runs on OMP_NUM_THREADS threads (1 when unset). `--json` also writes every row
(batch, setup, system, mechanism, ...): `tools/portability.py` compares them across CPU paths.

Batches: the first to third (report.SETUPS), the fourth to eighth, the blind-spot batch and the
ninth, tenth and eleventh (issue 46), the twelfth and thirteenth (issue 55) and the
fourteenth to twenty-fourth (held out: each written blind, after the rules of the batch before),
each written before the rules that now pass it; the signing share counts right convictions
whose verdict the record grants (labkit's own intervention and its second seed).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor

from . import ALL_EXPECTED, ALL_SETUPS, report
from .blind import BLIND, BLIND_EXPECTED
from .eighteenth import EIGHTEENTH, EIGHTEENTH_EXPECTED
from .eighth import EIGHTH, EIGHTH_EXPECTED
from .eleventh import ELEVENTH, ELEVENTH_EXPECTED
from .fifth import FIFTH, FIFTH_EXPECTED
from .fifteenth import FIFTEENTH, FIFTEENTH_EXPECTED
from .fourteenth import FOURTEENTH, FOURTEENTH_EXPECTED
from .fourth import FOURTH, FOURTH_EXPECTED
from .nineteenth import NINETEENTH, NINETEENTH_EXPECTED
from .ninth import NINTH, NINTH_EXPECTED
from .seventeenth import SEVENTEENTH, SEVENTEENTH_EXPECTED
from .seventh import SEVENTH, SEVENTH_EXPECTED
from .sixteenth import SIXTEENTH, SIXTEENTH_EXPECTED
from .sixth import SIXTH, SIXTH_EXPECTED
from .tenth import TENTH, TENTH_EXPECTED
from .thirteenth import THIRTEENTH, THIRTEENTH_EXPECTED
from .twelfth import TWELFTH, TWELFTH_EXPECTED
from .twentieth import TWENTIETH, TWENTIETH_EXPECTED
from .twentyfirst import TWENTYFIRST, TWENTYFIRST_EXPECTED
from .twentysecond import TWENTYSECOND, TWENTYSECOND_EXPECTED
from .twentythird import TWENTYTHIRD, TWENTYTHIRD_EXPECTED
from .twentyfourth import TWENTYFOURTH, TWENTYFOURTH_EXPECTED

BATCHES = {
    "first-third": (ALL_SETUPS, ALL_EXPECTED),
    "fourth": (FOURTH, FOURTH_EXPECTED),
    "fifth": (FIFTH, FIFTH_EXPECTED),
    "sixth": (SIXTH, SIXTH_EXPECTED),
    "seventh": (SEVENTH, SEVENTH_EXPECTED),
    "eighth": (EIGHTH, EIGHTH_EXPECTED),
    "blind": (BLIND, BLIND_EXPECTED),
    "ninth": (NINTH, NINTH_EXPECTED),
    "tenth": (TENTH, TENTH_EXPECTED),
    "eleventh": (ELEVENTH, ELEVENTH_EXPECTED),
    "twelfth": (TWELFTH, TWELFTH_EXPECTED),
    "thirteenth": (THIRTEENTH, THIRTEENTH_EXPECTED),
    "fourteenth": (FOURTEENTH, FOURTEENTH_EXPECTED),
    "fifteenth": (FIFTEENTH, FIFTEENTH_EXPECTED),
    "sixteenth": (SIXTEENTH, SIXTEENTH_EXPECTED),
    "seventeenth": (SEVENTEENTH, SEVENTEENTH_EXPECTED),
    "eighteenth": (EIGHTEENTH, EIGHTEENTH_EXPECTED),
    "nineteenth": (NINETEENTH, NINETEENTH_EXPECTED),
    "twentieth": (TWENTIETH, TWENTIETH_EXPECTED),
    "twentyfirst": (TWENTYFIRST, TWENTYFIRST_EXPECTED),
    "twentysecond": (TWENTYSECOND, TWENTYSECOND_EXPECTED),
    "twentythird": (TWENTYTHIRD, TWENTYTHIRD_EXPECTED),
    "twentyfourth": (TWENTYFOURTH, TWENTYFOURTH_EXPECTED),
}


def _one(item):
    batch, name = item
    import torch
    from . import report

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS") or 1))
    setups, expected = BATCHES[batch]
    report.SETUPS, report.EXPECTED = {**report.SETUPS, **setups}, {**report.EXPECTED, **expected}
    try:
        row = report.triage(name)
    except Exception as exc:  # a crash is a miss, named
        row = {
            "name": name,
            "expected": expected[name][0],
            "system": "CRASH",
            "mechanism": repr(exc),
            "right_system": False,
            "right_mechanism": False,
            "granted": False,
            "seconds": 0.0,
        }
    return batch, row


def main(argv: list[str]) -> int:
    jobs = int(argv[argv.index("--jobs") + 1]) if "--jobs" in argv else 1
    items = [(b, n) for b, (setups, _) in BATCHES.items() for n in setups]
    # spawn, not fork: a parent whose OpenMP pool has two threads leaves a forked child hung in
    # it (seen with OMP_NUM_THREADS=2: the worker never ran a setup)
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        done = list(pool.map(_one, items))
    if "--json" in argv:
        with open(argv[argv.index("--json") + 1], "w") as out:
            json.dump([{"batch": b, **r} for b, r in done], out, indent=1)
    total = {"buggy": 0, "system": 0, "mechanism": 0, "healthy": 0, "convicted": 0, "unknown": 0}
    total.update(signed=0, acquitted=0, named=0)
    for batch in BATCHES:
        rows = [r for b, r in done if b == batch]
        buggy = [r for r in rows if r["expected"] != "NONE"]
        healthy = [r for r in rows if r["expected"] == "NONE"]
        right = [r for r in buggy if r["right_system"]]
        got = {
            "buggy": len(buggy),
            "system": len(right),
            "mechanism": sum(r["right_mechanism"] for r in buggy),
            "healthy": len(healthy),
            "convicted": sum(r["system"] not in ("NONE", "UNKNOWN") for r in healthy),
            "unknown": sum(r["system"] == "UNKNOWN" for r in healthy),
            "acquitted": sum(r["system"] == "NONE" for r in rows),
            "named": sum(
                r["system"] == "NONE" and report.names_references(r["mechanism"]) for r in rows
            ),
            "signed": sum(r["granted"] for r in right),
        }
        for k in total:
            total[k] += got[k]
        slowest = max(rows, key=lambda r: r["seconds"])
        print(
            f"{batch:12s} buggy {got['buggy']:3d}: system {got['system']}, mechanism "
            f"{got['mechanism']}, signed {got['signed']} of {got['system']}; healthy "
            f"{got['healthy']}: convicted {got['convicted']}, UNKNOWN {got['unknown']}; slowest "
            f"{slowest['name']} "
            f"{slowest['seconds']:.1f} s"
        )
        for r in buggy:
            if not r["right_mechanism"]:
                print(f"    miss {r['name']}: {r['system']}: {r['mechanism'][:110]}")
    b = max(1, total["buggy"])
    print(
        f"all batches: {total['system']}/{total['buggy']} right system ({total['system'] / b:.0%}), "
        f"{total['mechanism']}/{total['buggy']} right mechanism ({total['mechanism'] / b:.0%}), "
        f"{total['convicted']} of {total['healthy']} healthy convicted, {total['unknown']} "
        f"UNKNOWN, {total['signed']} of "
        f"{total['system']} right convictions signed by labkit alone; {total['named']} of "
        f"{total['acquitted']} acquittals name their references with their numbers"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
