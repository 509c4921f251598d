"""Visited: the set of URLs the crawl has already seen (queued or fetched).

Every Visited answers ``add(url) -> bool`` and ``add_many(urls) -> list[bool]``: test and insert
in one atomic step, True only the first time a URL is offered. That single step is what makes
"only unseen links enter ToDo" hold whatever the thread timing.

Three kinds, same interface:

* :class:`minicrawl.bloom.BloomFilter` (the default): the core's Bloom filter (its 8 positions
  per URL, its size for ``--expected-urls`` at ``--error-rate``) with batches, a file and
  numbers around it: m/8 bytes however long the URLs, at the price of a small, known
  false-positive rate (a new URL taken for seen, so never crawled);
* :class:`minicrawl.bloom.ScalableBloomFilter` (``--visited scalable``): a Bloom filter that
  adds bigger, stricter slices as URLs arrive, so the rate stays under p however many there are;
* :class:`ExactVisited`: a ``set`` of the URL strings, no false positives, memory grows with
  the URLs — for teaching, small crawls and tests that compare the two.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, TypeAlias

from minicrawl.bloom import BloomFilter, ScalableBloomFilter
from minicrawl.bloom.exact import ExactVisited, LocalVisited
from minicrawl.options import Options
from minicrawl.state.forgetting import ForgettingVisited
from minicrawl.stats import StatValue

if TYPE_CHECKING:  # not a cycle (shared.visited needs nothing of this module): only not to load
    # redis-py and NumPy into every crawl, as a real import would
    from minicrawl.shared.visited import RedisBloomVisited

__all__ = ["ExactVisited", "LocalVisited", "Visited", "describe", "make_visited",
           "warn_over_capacity"]

log = logging.getLogger("minicrawl")


# Every Visited run.py may have: one this process holds (make_visited), the Redis filter of a
# shared crawl, or a recrawl's, which wraps a local one. Each is a core SeenSet (``add_new``),
# and ``add``, ``add_many``, ``in`` and ``len`` besides (tests/core/test_visited.py runs the
# contract over all of them). ForgettingVisited imports bloom.exact, not this module: no cycle.
Visited: TypeAlias = "LocalVisited | RedisBloomVisited | ForgettingVisited"


def make_visited(options: Options) -> LocalVisited:
    """The Visited filter the options ask for."""
    if options.visited == "exact":
        return ExactVisited()
    if options.visited == "bloom":
        return BloomFilter(capacity=options.expected_urls, error_rate=options.error_rate)
    if options.visited == "scalable":
        return ScalableBloomFilter(initial_capacity=options.expected_urls,
                                   error_rate=options.error_rate)
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
