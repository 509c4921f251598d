"""``python -m minicrawl``: the command line."""

import sys

from minicrawl.cli import main

sys.exit(main())
