#!/usr/bin/env python3
"""Crawl from a seed list: ``python run.py seeds/example.txt --threads 8``.

The same as the ``minicrawl`` command; ``python run.py --help`` lists the options.
"""

import sys

from minicrawl.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
