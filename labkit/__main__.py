"""`python -m labkit ...` is the `labkit` command."""

import sys

from .cli import main

sys.exit(main())
