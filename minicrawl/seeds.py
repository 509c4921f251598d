"""Seeds: where a crawl starts.

A seed argument is either a file (one URL per line; blank lines and ``#`` comments ignored) or a
URL. Every seed is canonicalized; one that is not a valid http(s) URL is reported with where it
came from (``file:line``) and skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from minicrawl.core.urls import canonical
from minicrawl.options import shown
from minicrawl.redact import redact


class NoValidSeeds(ValueError):
    """Raised when not one seed is a valid http(s) URL."""


def seed_arguments(seeds: object) -> list[str]:
    """``seeds`` as a list of arguments (URLs or seed files); ``TypeError`` naming ``seeds`` for
    anything else (a number, bytes, None, a dict)."""
    if isinstance(seeds, (str, os.PathLike)):
        seeds = [seeds]
    elif isinstance(seeds, (bytes, bytearray, dict)) or not isinstance(seeds, Iterable):
        raise TypeError(f"seeds must be a URL, a seed file or a list of them (strings), got "
                        f"{type(seeds).__name__}")
    args = list(seeds)
    for arg in args:
        if not isinstance(arg, (str, os.PathLike)):
            raise TypeError(f"seeds must be strings (URLs or seed files), got "
                            f"{type(arg).__name__} {shown(arg)}")
    return [os.fspath(arg) for arg in args]


def read_seeds(args: Iterable[str]) -> tuple[list[str], list[str]]:
    """Canonical seed URLs from URL or file arguments, and one message per rejected seed."""
    urls: list[str] = []
    problems: list[str] = []
    for arg in args:
        if "://" not in arg and os.path.exists(arg):
            try:
                # utf-8-sig: a byte-order mark (Windows editors write one) is not part of line 1
                with open(arg, encoding="utf-8-sig", errors="replace") as f:
                    lines = f.read().splitlines()
            except OSError as e:
                problems.append(f"{arg}: cannot read seed file: {e.strerror or e}")
                continue
            found = len(urls) + len(problems)
            for number, line in enumerate(lines, 1):
                # A comment is a whole line, or the rest of a line after " #"; a "#" inside a
                # URL is its fragment, not a comment.
                line = line.split(" #", 1)[0].strip()
                if line and not line.startswith("#"):
                    _add(line, f"{arg}:{number}", urls, problems)
            if len(urls) + len(problems) == found:
                problems.append(f"{arg}: no seed URL in this file")
        elif "://" not in arg and _looks_like_a_file(arg):
            problems.append(f"{arg}: no such seed file")
        else:
            _add(arg, "argument", urls, problems)
    return list(dict.fromkeys(urls)), problems


# Names that are seed files, not host names, when they do not exist: "seeds.txt", "./s".
_FILE_SUFFIXES = (".txt", ".lst", ".list", ".csv", ".tsv", ".urls", ".seeds", ".json", ".jsonl")


def _looks_like_a_file(arg: str) -> bool:
    return (arg.startswith(("/", "./", "../", "~")) or os.sep in arg.split("/", 1)[0]
            or arg.lower().endswith(_FILE_SUFFIXES))


def _add(text: str, where: str, urls: list[str], problems: list[str]) -> None:
    url, why = canonical(text)
    if url is not None:
        urls.append(url)
        return
    hint = f"; write https://{text}" if why == "no scheme" and "." in text.split("/", 1)[0] else ""
    problems.append(f"{where}: {shown(redact(text))} is not a valid http(s) URL ({why}{hint}); "
                    "skipped")
