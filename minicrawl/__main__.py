"""``python -m minicrawl``: the command line."""

import sys

from minicrawl.cli.main import main

sys.exit(main())
