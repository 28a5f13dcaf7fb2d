"""Score the eleventh batch (tests/own_setups/eleventh.py) against the rules as they are now.

    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_eleventh               # every setup
    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_eleventh sorted eps  # names holding either

The same rows and summary as `score_eighth` (`score_tenth.score`), for the eleventh batch.
"""

from __future__ import annotations

import sys

from .eleventh import ELEVENTH, ELEVENTH_EXPECTED
from .score_tenth import score


def main(argv=None) -> int:
    return score(ELEVENTH, ELEVENTH_EXPECTED, argv)


if __name__ == "__main__":
    sys.exit(main())
