"""Score the sixteenth batch (tests/own_setups/sixteenth.py and sixteenth_b.py) against the
rules as they are now.

    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_sixteenth               # every setup
    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_sixteenth clamp mask   # names with either

The same rows and summary as `score_eighth` (`score_tenth.score`), for the sixteenth batch.
"""

from __future__ import annotations

import sys

from .sixteenth import SIXTEENTH, SIXTEENTH_EXPECTED
from .score_tenth import score


def main(argv=None) -> int:
    return score(SIXTEENTH, SIXTEENTH_EXPECTED, argv)


if __name__ == "__main__":
    sys.exit(main())
