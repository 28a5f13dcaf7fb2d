"""Score the eighth batch (tests/own_setups/eighth.py) against the rules as they are now.

    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_eighth          # every setup
    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_eighth gru gpt  # names holding either

Prints one row per setup (the system and mechanism labkit gave, right or not, whether the
verdict was granted, the seconds `labkit.diagnose(setup, seeds=(0, 1))` took) and then the
counts in the form of eighth.py's FIRST_SCORE, so a later score reads beside the first.
"""

from __future__ import annotations

import subprocess
import sys
import time

import torch

from . import report
from .eighth import EIGHTH, EIGHTH_EXPECTED


def triage(name: str) -> dict:
    """report.triage's row, or a row with system CRASH when `labkit.diagnose` raises (a miss
    that the table must show, not a scoring run that stops)."""
    started = time.perf_counter()
    try:
        return report.triage(name)
    except Exception as exc:  # noqa: BLE001 - the crash is what the row records
        return {
            "name": name,
            "expected": report.EXPECTED[name][0],
            "system": "CRASH",
            "mechanism": f"{type(exc).__name__}: {exc}",
            "right_system": False,
            "right_mechanism": False,
            "granted": False,
            "seconds": time.perf_counter() - started,
        }


def score(*parts: str) -> list[dict]:
    report.SETUPS = {**report.SETUPS, **EIGHTH}
    report.EXPECTED = {**report.EXPECTED, **EIGHTH_EXPECTED}
    return [triage(name) for name in EIGHTH if any(p in name for p in parts or ("",))]


def summary(rows: list[dict]) -> str:
    buggy = [r for r in rows if r["expected"] != "NONE"]
    healthy = [r for r in rows if r["expected"] == "NONE"]
    right = [r for r in buggy if r["right_system"]]
    convicted = sum(r["system"] not in ("NONE", "UNKNOWN") for r in healthy)
    slowest = max(rows, key=lambda r: r["seconds"])
    return (
        f"{len(right)} of {len(buggy)} right system, "
        f"{sum(r['right_mechanism'] for r in buggy)} of {len(buggy)} right mechanism, "
        f"{convicted} of {len(healthy)} healthy convicted "
        f"({sum(r['system'] == 'NONE' for r in healthy)} acquitted), "
        f"{sum(r['granted'] for r in right)} of {len(right)} right convictions granted; "
        f"slowest {slowest['name']} {slowest['seconds']:.1f} s"
    )


def main(argv=None) -> int:
    torch.set_num_threads(1)
    rows = score(*(sys.argv[1:] if argv is None else argv))
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(
        "| setup | expected | labkit said | system | mechanism | verdict | s |\n|---|---|---|---|---|---|---|"
    )
    for r in rows:
        print(
            f"| {r['name']} | {r['expected']} | {r['system']}: {r['mechanism'][:110]} | "
            f"{'right' if r['right_system'] else 'WRONG'} | "
            f"{'right' if r['right_mechanism'] else 'WRONG'} | "
            f"{'granted' if r['granted'] else 'refused'} | {r['seconds']:.1f} |"
        )
    print(f"score at {head or 'this tree'}: {summary(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
