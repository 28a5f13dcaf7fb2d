"""Score the twenty-second batch (tests/own_setups/twentysecond.py and twentysecond_b.py) against the
rules as they are now.

    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_twentysecond            # every setup
    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_twentysecond kl scaled  # either

The same rows and summary as `score_eighth` (`score_tenth.score`), for the twenty-second batch.
"""

from __future__ import annotations

import sys

from .score_tenth import score
from .twentysecond import TWENTYSECOND, TWENTYSECOND_EXPECTED


def main(argv=None) -> int:
    return score(TWENTYSECOND, TWENTYSECOND_EXPECTED, argv)


if __name__ == "__main__":
    sys.exit(main())
