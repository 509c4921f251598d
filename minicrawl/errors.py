"""Errors a crawl can end with, in a module of their own so that catching them (as the command
line does) does not import what raises them: redis-py and NumPy cost 20 MB and 100 ms."""

from __future__ import annotations

import argparse
from typing import NoReturn


class RedisUnavailable(RuntimeError):
    """Redis could not be reached (or lost the crawl's data); the message says where and when."""


class VisitedMismatch(ValueError):
    """This process's Visited settings differ from those the shared crawl was started with."""


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (``PROG: error: …``, exit status 2)
    instead of the usage block plus the error: scripts and people read the first line only."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")
