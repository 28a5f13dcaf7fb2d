"""Score the ninth batch (tests/own_setups/ninth.py) against the rules as they are now.

    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_ninth            # every setup
    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_ninth warmup sum  # names holding either

The same rows and summary as `score_eighth`, for the ninth batch.
"""

from __future__ import annotations

import subprocess
import sys

import torch

from . import report
from .ninth import NINTH, NINTH_EXPECTED
from .score_eighth import summary, triage


def main(argv=None) -> int:
    torch.set_num_threads(1)
    parts = sys.argv[1:] if argv is None else argv
    report.SETUPS = {**report.SETUPS, **NINTH}
    report.EXPECTED = {**report.EXPECTED, **NINTH_EXPECTED}
    rows = []
    for name in NINTH:
        if any(p in name for p in parts or ("",)):
            rows.append(triage(name))
            r = rows[-1]
            print(
                f"| {r['name']} | {r['expected']} | {r['system']}: {r['mechanism'][:160]} | "
                f"{'right' if r['right_system'] else 'WRONG'} | "
                f"{'right' if r['right_mechanism'] else 'WRONG'} | "
                f"{'granted' if r['granted'] else 'refused'} | {r['seconds']:.1f} |",
                flush=True,
            )
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(f"score at {head or 'this tree'}: {summary(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
