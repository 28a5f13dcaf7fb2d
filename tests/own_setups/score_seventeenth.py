"""Score the seventeenth batch (tests/own_setups/seventeenth.py and seventeenth_b.py) against the
rules as they are now.

    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_seventeenth               # every setup
    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_seventeenth vocab percent # names with either

The same rows and summary as `score_eighth` (`score_tenth.score`), for the seventeenth batch.
"""

from __future__ import annotations

import sys

from .seventeenth import SEVENTEENTH, SEVENTEENTH_EXPECTED
from .score_tenth import score


def main(argv=None) -> int:
    return score(SEVENTEENTH, SEVENTEENTH_EXPECTED, argv)


if __name__ == "__main__":
    sys.exit(main())
