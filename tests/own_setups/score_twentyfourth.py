"""Score the twenty-fourth batch (tests/own_setups/twentyfourth.py and twentyfourth_b.py) against
the rules as they are now.

    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_twentyfourth              # every setup
    cd tests && OMP_NUM_THREADS=1 python -m own_setups.score_twentyfourth gaussian unrolled  # either

The same rows and summary as `score_eighth` (`score_tenth.score`), for the twenty-fourth batch.
"""

from __future__ import annotations

import sys

from .score_tenth import score
from .twentyfourth import TWENTYFOURTH, TWENTYFOURTH_EXPECTED


def main(argv=None) -> int:
    return score(TWENTYFOURTH, TWENTYFOURTH_EXPECTED, argv)


if __name__ == "__main__":
    sys.exit(main())
