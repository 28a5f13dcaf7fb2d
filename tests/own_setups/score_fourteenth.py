"""Score the fourteenth batch (tests/own_setups/fourteenth.py and fourteenth_b.py) against the
rules as they are now.

    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_fourteenth          # every setup
    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_fourteenth mask ema # names with either

The same rows and summary as `score_eighth` (`score_tenth.score`), for the fourteenth batch.
"""

from __future__ import annotations

import sys

from .fourteenth import FOURTEENTH, FOURTEENTH_EXPECTED
from .score_tenth import score


def main(argv=None) -> int:
    return score(FOURTEENTH, FOURTEENTH_EXPECTED, argv)


if __name__ == "__main__":
    sys.exit(main())
