"""`python -m labkit.cli ...` is the `labkit` command."""

import sys

from . import main

sys.exit(main())
