"""Score the eighteenth batch (tests/own_setups/eighteenth.py and eighteenth_b.py) against the
rules as they are now.

    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_eighteenth             # every setup
    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_eighteenth flips rmse  # either

The same rows and summary as `score_eighth` (`score_tenth.score`), for the eighteenth batch.
"""

from __future__ import annotations

import sys

from .eighteenth import EIGHTEENTH, EIGHTEENTH_EXPECTED
from .score_tenth import score


def main(argv=None) -> int:
    return score(EIGHTEENTH, EIGHTEENTH_EXPECTED, argv)


if __name__ == "__main__":
    sys.exit(main())
