"""Score the twelfth batch (tests/own_setups/twelfth.py, issue 55) against the rules as they are now.

    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_twelfth               # every setup
    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_twelfth init vocab  # names holding either

The same rows and summary as `score_eighth` (`score_tenth.score`), for the twelfth batch.
"""

from __future__ import annotations

import sys

from .twelfth import TWELFTH, TWELFTH_EXPECTED
from .score_tenth import score


def main(argv=None) -> int:
    return score(TWELFTH, TWELFTH_EXPECTED, argv)


if __name__ == "__main__":
    sys.exit(main())
