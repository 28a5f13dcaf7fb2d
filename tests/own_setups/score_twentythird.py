"""Score the twenty-third batch (tests/own_setups/twentythird.py and twentythird_b.py) against the
rules as they are now.

    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_twentythird            # every setup
    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_twentythird pinball ema  # either

The same rows and summary as `score_eighth` (`score_tenth.score`), for the twenty-third batch.
"""

from __future__ import annotations

import sys

from .score_tenth import score
from .twentythird import TWENTYTHIRD, TWENTYTHIRD_EXPECTED


def main(argv=None) -> int:
    return score(TWENTYTHIRD, TWENTYTHIRD_EXPECTED, argv)


if __name__ == "__main__":
    sys.exit(main())
