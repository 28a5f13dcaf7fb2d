"""Score the thirteenth batch (tests/own_setups/thirteenth.py, issue 55) against the rules as they are now.

    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_thirteenth               # every setup
    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_thirteenth init vocab  # names holding either

The same rows and summary as `score_eighth` (`score_tenth.score`), for the thirteenth batch.
"""

from __future__ import annotations

import sys

from .thirteenth import THIRTEENTH, THIRTEENTH_EXPECTED
from .score_tenth import score


def main(argv=None) -> int:
    return score(THIRTEENTH, THIRTEENTH_EXPECTED, argv)


if __name__ == "__main__":
    sys.exit(main())
