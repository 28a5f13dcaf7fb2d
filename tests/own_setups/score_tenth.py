"""Score the tenth batch (tests/own_setups/tenth.py) against the rules as they are now.

    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_tenth               # every setup
    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_tenth offset table  # names holding either

The same rows and summary as `score_eighth`, for the tenth batch.
"""

from __future__ import annotations

import subprocess
import sys

import torch

from . import report
from .score_eighth import summary, triage
from .tenth import TENTH, TENTH_EXPECTED


def score(setups: dict, expected: dict, argv=None) -> int:
    """Triage every setup of one batch whose name holds one of `argv` (all when none), one
    row each as it is done, then the summary; the batch joins report's SETUPS and EXPECTED."""
    torch.set_num_threads(1)
    parts = sys.argv[1:] if argv is None else argv
    report.SETUPS = {**report.SETUPS, **setups}
    report.EXPECTED = {**report.EXPECTED, **expected}
    rows = []
    for name in setups:
        if any(p in name for p in parts or ("",)):
            rows.append(triage(name))
            r = rows[-1]
            print(
                f"| {r['name']} | {r['expected']} | {r['system']}: {r['mechanism'][:300]} | "
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


def main(argv=None) -> int:
    return score(TENTH, TENTH_EXPECTED, argv)


if __name__ == "__main__":
    sys.exit(main())
