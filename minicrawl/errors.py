"""Errors a crawl can end with, in a module of their own so that catching them (as the command
line does) does not import what raises them: redis-py and NumPy cost 20 MB and 100 ms."""

from __future__ import annotations

import argparse
import sys
from typing import IO, NoReturn

from minicrawl.redact import redact


class RedisUnavailable(RuntimeError):
    """Redis could not be reached (or lost the crawl's data); the message says where and when."""


class RedisRefused(RedisUnavailable):
    """Redis answered but refused us for good: a wrong or missing password, a database it does
    not have, a user without the rights. Retrying cannot help, so it is raised at once."""


class VisitedMismatch(ValueError):
    """This process's Visited settings differ from those the shared crawl was started with."""


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (``PROG: error: …``, exit status 2)
    instead of the usage block plus the error: scripts and people read the first line only."""

    def _print_message(self, message: str, file: IO[str] | None = None) -> None:
        """Print ``--help`` or ``--version``; unlike argparse, a standard output that cannot
        be written (``> /dev/full``) is not passed over in silence: its error is raised, for
        the command line to tell in one line."""
        if message and file is sys.stdout:
            file.write(message)
        else:
            super()._print_message(message, file)

    def error(self, message: str) -> NoReturn:
        """Exit with status 2 after one line on stderr, passwords redacted:
        ``PROG: error: MESSAGE (see PROG --help)``."""
        self.exit(2, f"{self.prog}: error: {redact(message)} (see {self.prog} --help)\n")
