"""Seeds: where a crawl starts.

A seed argument is either a file (one URL per line; blank lines and ``#`` comments ignored) or a
URL. Every seed is canonicalized; one that is not a valid http(s) URL is reported with where it
came from (``file:line``) and skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from minicrawl.urls import BadURL, canonicalize


class NoValidSeeds(ValueError):
    """Raised when not one seed is a valid http(s) URL."""


def read_seeds(args: Iterable[str]) -> tuple[list[str], list[str]]:
    """Canonical seed URLs from URL or file arguments, and one message per rejected seed."""
    urls: list[str] = []
    problems: list[str] = []
    for arg in args:
        if "://" not in arg and os.path.exists(arg):
            try:
                with open(arg, encoding="utf-8", errors="replace") as f:
                    lines = f.read().splitlines()
            except OSError as e:
                problems.append(f"{arg}: cannot read seed file: {e.strerror or e}")
                continue
            for number, line in enumerate(lines, 1):
                # A comment is a whole line, or the rest of a line after " #"; a "#" inside a
                # URL is its fragment, not a comment.
                line = line.split(" #", 1)[0].strip()
                if line and not line.startswith("#"):
                    _add(line, f"{arg}:{number}", urls, problems)
        else:
            _add(arg, "argument", urls, problems)
    return list(dict.fromkeys(urls)), problems


def _add(text: str, where: str, urls: list[str], problems: list[str]) -> None:
    try:
        urls.append(canonicalize(text))
    except BadURL as e:
        problems.append(f"{where}: {text!r} is not a valid http(s) URL ({e.reason}); skipped")
