"""Score the twenty-first batch (tests/own_setups/twentyfirst.py and twentyfirst_b.py) against the
rules as they are now.

    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_twentyfirst            # every setup
    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_twentyfirst mixup smoothed  # either

The same rows and summary as `score_eighth` (`score_tenth.score`), for the twenty-first batch.
"""

from __future__ import annotations

import sys

from .score_tenth import score
from .twentyfirst import TWENTYFIRST, TWENTYFIRST_EXPECTED


def main(argv=None) -> int:
    return score(TWENTYFIRST, TWENTYFIRST_EXPECTED, argv)


if __name__ == "__main__":
    sys.exit(main())
