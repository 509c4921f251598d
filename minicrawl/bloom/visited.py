"""Visited: the set of URLs the crawl has already seen (queued or fetched).

Every Visited answers ``add(url) -> bool`` and ``add_many(urls) -> list[bool]``: test and insert
in one atomic step, True only the first time a URL is offered. That single step is what makes
"only unseen links enter ToDo" hold whatever the thread timing.

Three kinds, same interface:

* :class:`minicrawl.bloom.BloomFilter` (the default): m/8 bytes however long the URLs, at the
  price of a small, known false-positive rate (a new URL taken for seen, so never crawled);
* :class:`minicrawl.bloom.ScalableBloomFilter` (``--visited scalable``): a Bloom filter that
  adds bigger, stricter slices as URLs arrive, so the rate stays under p however many there are;
* :class:`ExactVisited`: a ``set`` of the URL strings, no false positives, memory grows with
  the URLs — for teaching, small crawls and tests that compare the two.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, TypeAlias

from minicrawl.bloom import BloomFilter, ScalableBloomFilter
from minicrawl.bloom.filter import new_urls
from minicrawl.bloom.hashes import not_a_url
from minicrawl.options import Options
from minicrawl.stats import StatValue

if TYPE_CHECKING:
    from minicrawl.shared.visited import RedisBloomVisited
    from minicrawl.state.forgetting import ForgettingVisited

log = logging.getLogger("minicrawl")


# Every Visited run.py may have; each is a core SeenSet (``add_new``), and ``add``, ``add_many``,
# ``in`` and ``len`` besides (tests/core/test_visited.py runs the contract over all of them).
Visited: TypeAlias = ("BloomFilter | ScalableBloomFilter | ExactVisited | RedisBloomVisited"
                      " | ForgettingVisited")


class ExactVisited:
    """A lock-guarded ``set`` of URLs with the Bloom filter's interface."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def add(self, url: str) -> bool:
        """Insert ``url``; True if it was not there before."""
        if not isinstance(url, str):  # like the Bloom filters: a URL is a str
            raise TypeError(not_a_url(url))
        with self._lock:
            if url in self._seen:
                return False
            self._seen.add(url)
            return True

    def add_new(self, urls: list[str]) -> list[str]:
        """Visited as the core sees it (``SeenSet``): the URLs of ``urls`` not seen before."""
        return new_urls(urls, self.add_many(urls))

    def add_many(self, urls: Iterable[str]) -> list[bool]:
        """``add`` for each URL in order, under one lock acquisition."""
        seen = self._seen
        out = []
        urls = urls if isinstance(urls, (list, tuple)) else list(urls)
        for url in urls:
            if not isinstance(url, str):
                raise TypeError(not_a_url(url))
        with self._lock:
            for url in urls:
                if url in seen:
                    out.append(False)
                else:
                    seen.add(url)
                    out.append(True)
        return out

    def __contains__(self, url: object) -> bool:
        return url in self._seen

    def __len__(self) -> int:
        return len(self._seen)

    @property
    def count(self) -> int:
        """Distinct URLs added: exact, no false positive (the same as ``len``)."""
        return len(self._seen)


def make_visited(options: Options) -> Visited:
    """The Visited filter the options ask for."""
    if options.visited == "exact":
        return ExactVisited()
    if options.visited == "bloom":
        return BloomFilter(capacity=options.expected_urls, error_rate=options.error_rate,
                           hashes=8)
    if options.visited == "scalable":
        return ScalableBloomFilter(initial_capacity=options.expected_urls,
                                   error_rate=options.error_rate, hashes=8)
    raise ValueError(f"unknown visited kind {options.visited!r} (bloom, scalable or exact)")


def warn_over_capacity(visited: Visited) -> None:
    """Warn that a fixed Bloom filter holds more URLs than it was sized for: from now on its
    false-positive rate (new pages taken for seen, never crawled) climbs."""
    log.warning("Visited holds more than the %s URLs it was sized for: its false-positive "
                "rate climbs (now ~%.2g); use a larger --expected-urls or --visited scalable",
                f"{getattr(visited, 'capacity', 0):,}", getattr(visited, "current_fp_rate", 0.0))


def describe(visited: Visited) -> dict[str, StatValue]:
    """Stats about a Visited filter: size, fill ratio and false-positive rates where they apply."""
    info: dict[str, StatValue] = {"visited_kind": type(visited).__name__,
                                  "visited_count": len(visited)}
    if isinstance(visited, ExactVisited):
        info.update(visited_fill_ratio=None, visited_current_fp_rate=0.0,
                    visited_expected_fp_rate=0.0)
        return info
    for name in ("bits", "hashes", "capacity", "nbytes", "over_capacity"):
        if hasattr(visited, name):
            info[f"visited_{name}"] = getattr(visited, name)
    for name in ("fill_ratio", "current_fp_rate", "expected_fp_rate"):
        value = getattr(visited, name, None)
        info[f"visited_{name}"] = round(value, 8) if value is not None else None
    return info
