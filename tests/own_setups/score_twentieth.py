"""Score the twentieth batch (tests/own_setups/twentieth.py and twentieth_b.py) against the
rules as they are now.

    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_twentieth            # every setup
    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_twentieth mixture meter  # either

The same rows and summary as `score_eighth` (`score_tenth.score`), for the twentieth batch.
"""

from __future__ import annotations

import sys

from .score_tenth import score
from .twentieth import TWENTIETH, TWENTIETH_EXPECTED


def main(argv=None) -> int:
    return score(TWENTIETH, TWENTIETH_EXPECTED, argv)


if __name__ == "__main__":
    sys.exit(main())
