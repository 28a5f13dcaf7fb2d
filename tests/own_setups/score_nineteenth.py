"""Score the nineteenth batch (tests/own_setups/nineteenth.py and nineteenth_b.py) against the
rules as they are now.

    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_nineteenth             # every setup
    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_nineteenth keypoints broadcast  # either

The same rows and summary as `score_eighth` (`score_tenth.score`), for the nineteenth batch.
"""

from __future__ import annotations

import sys

from .nineteenth import NINETEENTH, NINETEENTH_EXPECTED
from .score_tenth import score


def main(argv=None) -> int:
    return score(NINETEENTH, NINETEENTH_EXPECTED, argv)


if __name__ == "__main__":
    sys.exit(main())
