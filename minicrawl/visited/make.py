"""Visited: the set of URLs the crawl has already seen (queued or fetched).

Every Visited answers ``add(url) -> bool`` and ``add_many(urls) -> list[bool]``: test and insert
in one atomic step, True only the first time a URL is offered. That single step is what makes
"only unseen links enter ToDo" hold whatever the thread timing.

Three kinds, same interface:

* :class:`minicrawl.visited.ScalableBloomFilter` (the default, ``--visited auto`` or
  ``scalable``): the core's Bloom filter as slices, a first one sized for ``--expected-urls``,
  then bigger, stricter ones (twice the URLs at half the rate each) as URLs arrive, so a crawl
  larger than expected is not a crawl that silently loses pages;
* :class:`minicrawl.visited.BloomFilter` (``--visited bloom``, and a shared crawl's default): one
  fixed filter (the core's 8 positions per URL, its size for ``--expected-urls`` at
  ``--error-rate``) with batches, a file and numbers around it: m/8 bytes however long the
  URLs. Past its capacity its rate climbs; the crawl says so, and what the rate has become;
* :class:`ExactVisited`: a ``set`` of the URL strings, no false positives, memory grows with
  the URLs — for teaching, small crawls and tests that compare the two.

Without ``--error-rate``, the filter is sized for the crawl that is coming, counted in pages:
a false positive costs a page only if its URL would have been fetched, so a crawl of P pages
loses at most P × the highest rate any offer met, whatever the fetch order and however many
more URLs are offered than fetched. The scalable filter's rate stays under E = 1/P
(:func:`minicrawl.visited.sizing.rate_bound`), P being ``--max-pages`` when given, else 10 ×
``--expected-urls``: fewer than one page lost in expectation over that crawl. With ``--state``
the cap is not P: it is one run's, and the crawl goes on in the runs after it, which fetch the
links this one journaled — and never those it took for seen — so the filter is sized as
without the cap. Its first slice
is at E/2 (:func:`~minicrawl.visited.sizing.default_rate`): 5e-8 for a million URLs, 61.6 bits a
URL; 5e-7, 44.9 bits, with ``--max-pages 1000000``, whose ~10 M URLs on issue 38's tree then
take ~105 MB of slices instead of the ~210 MB of the 2.5e-9 of before (bench/README.md, "Visited's
memory bill"). A fixed filter (``--visited bloom``, a shared crawl's) gets the first slice's
rate without ``--max-pages`` (a state directory or a shared crawl binds its size; the page cap
may change from run to run). A Bloom filter at rate p does not lose p·n pages of n — its rate
climbs as it fills, and the sum over the adds is ~0.14·p·n (138 for a million at 0.001; 294 for
the 1,111,112 URLs of issue 38's tree, where 339 were lost). Each filter says how many URLs it
is expected to have withheld so far (``expected_withheld``, in the stats: the sum of the rates
the URLs met; pages only if they would have been fetched) and its rate now
(``current_fp_rate``: pages fetched × that bounds the pages lost).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias

from minicrawl.core.interfaces import Item, Page
from minicrawl.events import CrawlObserver
from minicrawl.options import Options
from minicrawl.stats import StatValue
from minicrawl.visited import BloomFilter, ScalableBloomFilter
from minicrawl.visited.exact import ExactVisited, LocalVisited
from minicrawl.visited.forgetting import ForgettingVisited
from minicrawl.visited.sizing import GROWTH, TIGHTENING

if TYPE_CHECKING:  # not a cycle (redis.visited needs nothing of this module): only not to load
    # redis-py and NumPy into every crawl, as a real import would
    from minicrawl.redis.visited import RedisBloomVisited

__all__ = ["ExactVisited", "LocalVisited", "Visited", "describe", "make_visited",
           "warn_over_capacity", "CapacityWatch"]

log = logging.getLogger("minicrawl")


# Every Visited run.py may have: one this process holds (make_visited), the Redis filter of a
# shared crawl, or a recrawl's, which wraps a local one. Each is a core SeenSet (``add_new``),
# and ``add``, ``add_many``, ``in`` and ``len`` besides (tests/core/test_visited.py runs the
# contract over all of them). ForgettingVisited imports visited.exact, not this module: no cycle.
Visited: TypeAlias = "LocalVisited | RedisBloomVisited | ForgettingVisited"


def make_visited(options: Options) -> LocalVisited:
    """The Visited filter the options ask for (``auto``: scalable, in this process)."""
    if options.visited == "exact":
        return ExactVisited()
    if options.visited == "bloom":
        return BloomFilter(capacity=options.expected_urls, error_rate=options.filter_error_rate)
    if options.visited in ("auto", "scalable"):
        # the first slice at the rate asked for, by default from the pages the crawl may fetch
        # (--max-pages): the bound on them all is twice that. Not with --state: there the cap
        # is one run's, and a link this run takes for seen is never journaled, so no later run
        # fetches it (a one-page run's filter, at 0.25, dropped 1 of 100,000 journaled links)
        pages = None if options.state else options.max_pages
        return ScalableBloomFilter(initial_capacity=options.expected_urls,
                                   error_rate=options.visited_rate(pages)
                                   / (1 - TIGHTENING),
                                   growth=GROWTH, tightening=TIGHTENING)
    raise ValueError(f"unknown visited kind {options.visited!r} (bloom, scalable or exact)")


class CapacityWatch(CrawlObserver):
    """Warns once a crawl that its fixed Bloom filter holds more URLs than it was sized for:
    from then on its false-positive rate (new pages taken for seen, never crawled) climbs.
    Looked at as each page is kept, its links just offered to Visited."""

    def __init__(self, visited: Visited) -> None:
        self.visited = visited
        self._told = threading.Event()
        self._lock = threading.Lock()

    def page_kept(self, page: Page, new: Sequence[Item]) -> None:
        if self._told.is_set() or not getattr(self.visited, "over_capacity", False):
            return
        with self._lock:  # one warning, whichever workers find it at once
            if not self._told.is_set():
                self._told.set()
                warn_over_capacity(self.visited)


def warn_over_capacity(visited: Visited) -> None:
    """Warn that a fixed Bloom filter holds more URLs than it was sized for: from now on its
    false-positive rate (new pages taken for seen, never crawled) climbs."""
    log.warning("Visited holds more than the %s URLs it was sized for: its false-positive "
                "rate climbs (now ~%.2g; ~%.1f pages withheld so far); use a larger "
                "--expected-urls or --visited scalable", f"{getattr(visited, 'capacity', 0):,}",
                getattr(visited, "current_fp_rate", 0.0),
                getattr(visited, "expected_withheld", 0.0))


def describe(visited: Visited) -> dict[str, StatValue]:
    """Stats about a Visited filter: size, fill ratio and false-positive rates where they apply."""
    info: dict[str, StatValue] = {"visited_kind": type(visited).__name__,
                                  "visited_count": len(visited)}
    if isinstance(visited, ExactVisited):
        info.update(visited_fill_ratio=None, visited_current_fp_rate=0.0,
                    visited_expected_fp_rate=0.0, visited_expected_withheld=0.0)
        return info
    for name in ("bits", "hashes", "capacity", "nbytes", "over_capacity"):
        if hasattr(visited, name):
            info[f"visited_{name}"] = getattr(visited, name)
    for name in ("fill_ratio", "current_fp_rate", "expected_fp_rate"):
        value = getattr(visited, name, None)
        info[f"visited_{name}"] = round(value, 8) if value is not None else None
    # pages new to the crawl that the filter is expected to have taken for seen so far
    withheld = getattr(visited, "expected_withheld", None)
    info["visited_expected_withheld"] = round(withheld, 3) if withheld is not None else None
    return info
