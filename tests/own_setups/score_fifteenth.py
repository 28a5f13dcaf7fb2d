"""Score the fifteenth batch (tests/own_setups/fifteenth.py and fifteenth_b.py) against the
rules as they are now.

    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_fifteenth               # every setup
    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_fifteenth dropout pad   # names with either

The same rows and summary as `score_eighth` (`score_tenth.score`), for the fifteenth batch.
"""

from __future__ import annotations

import sys

from .fifteenth import FIFTEENTH, FIFTEENTH_EXPECTED
from .score_tenth import score


def main(argv=None) -> int:
    return score(FIFTEENTH, FIFTEENTH_EXPECTED, argv)


if __name__ == "__main__":
    sys.exit(main())
