"""One reading of a running crawl: how long ToDo is, how many pages are done, how full Visited is.

The live view and the report's sampler both read the crawl through :func:`read_progress`, a few
times a second, from counters the workers keep anyway — so watching a crawl never adds work per
URL, and the panel and the plots always agree on what a number means. :class:`ProgressReader`
re-counts the Visited filter's bits only as often as a small time budget allows.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from minicrawl.watch.summary import not_requested

log = logging.getLogger("minicrawl")

if TYPE_CHECKING:
    from minicrawl.options import Options
    from minicrawl.seams import PoliteFrontier
    from minicrawl.stats import Stats
    from minicrawl.visited.make import Visited
    from minicrawl.workers import Workers


@dataclass
class Watched:
    """What the live view and the report read of a crawl: its parts, handed over by run.py's
    Crawler (``crawler.watched``), so watch/ never imports the crawler that imports it; and its
    last reading, ``ended``, taken as its run ended (:func:`last_reading`): what a reading after
    the run gives (a shared crawl's ToDo and Visited are in Redis, left then)."""

    stats: Stats
    todo: PoliteFrontier
    visited: Visited
    workers: Workers
    options: Options
    seeds: list[str]
    ended: Progress | None = None


@dataclass(frozen=True)
class Progress:
    """The crawl's gauges at one moment (``elapsed`` seconds after it started)."""

    elapsed: float
    pages: int  # pages fetched so far (one per ToDo item, redirect hops included)
    todo: int  # items waiting in ToDo
    in_flight: int  # items taken by a worker and not finished yet
    workers: int  # worker threads (--threads)
    at_work: int  # how many of them may work at once now (minicrawl.workers)
    visited: int  # URLs Visited has been offered and kept
    fill_ratio: float | None  # fraction of the filter's bits set; None for an exact set
    fp_rate: float | None  # estimated chance that a new URL is taken for seen, right now; None
    # when the filter cannot say (an exact set has no false positives at all)
    links_new: int  # links Visited had never seen: they entered ToDo
    links_dropped: int  # links Visited had seen (or, rarely, a false positive): dropped
    links_out_of_scope: int
    errors: int  # fetches that gave no usable answer (minicrawl.watch.summary: what counts)
    max_pages: int | None
    # Where ToDo's waiting URLs are (a spilling ToDo: minicrawl.frontier.disk); None for a ToDo that
    # does not say (the shared crawl's, in Redis). Bytes in memory are estimated; on disk, the
    # items' memory estimate, and the file's size as the disk used; whether the disk failed
    # (then everything waits in memory) and how many URLs were lost to it.
    todo_in_memory: int | None = None
    todo_memory_bytes: int | None = None
    todo_on_disk: int | None = None
    todo_disk_bytes: int | None = None
    todo_disk_used_bytes: int | None = None
    todo_disk_failed: int | None = None
    todo_disk_lost: int | None = None
    # Problems (a 4xx or 5xx answer, or an error: each page once) and the answers among them;
    # URLs refused before their request (robots.txt, a cap): minicrawl.watch.summary.
    problems: int = 0
    status_4xx: int = 0
    status_5xx: int = 0
    not_requested: int = 0
    per_run: bool = False  # max_pages is this run's (a crawl kept in --state goes on later)
    checked: int = 0  # --check-links: URLs checked, not crawled (no pages: not capped)
    saved_files: int = 0  # --mirror, --save-pages: files written so far, their bytes, where
    saved_bytes: int = 0
    saved_in: str | None = None

    @property
    def pages_per_s(self) -> float:
        """Average pages per second since the start."""
        return self.pages / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def done_fraction(self) -> float | None:
        """Pages done as a fraction of ``max_pages``; None without a cap."""
        return min(1.0, self.pages / self.max_pages) if self.max_pages else None


def read_progress(crawler: Watched,
                  filter_figures: tuple[float | None, float | None] | None = None) -> Progress:
    """Read the crawl's counters now: a few locked reads, plus :func:`read_filter` unless
    ``filter_figures`` (fill ratio, false-positive rate) are passed in."""
    counts = crawler.stats.counts()
    todo = crawler.todo
    waiting = len(todo)
    fill, fp = read_filter(crawler.visited) if filter_figures is None else filter_figures
    return Progress(
        elapsed=crawler.stats.elapsed,
        pages=counts.get("pages", 0),
        todo=waiting,
        in_flight=max(todo.unfinished - waiting, 0),
        workers=crawler.workers.count,
        at_work=crawler.workers.at_work.width,
        visited=len(crawler.visited),
        fill_ratio=fill,
        fp_rate=fp,
        links_new=counts.get("links_new", 0),
        links_dropped=counts.get("links_filtered", 0) + counts.get("redirects_to_visited", 0),
        links_out_of_scope=counts.get("links_out_of_scope", 0),
        errors=counts.get("errors", 0),
        max_pages=crawler.options.max_pages,
        problems=counts.get("problems", 0),
        status_4xx=counts.get("status_4xx", 0),
        status_5xx=counts.get("status_5xx", 0),
        not_requested=not_requested(counts)[0],  # the summary's count
        per_run=crawler.options.state is not None,
        checked=counts.get("checked", 0),
        saved_files=counts.get("mirror_files", 0),
        saved_bytes=counts.get("mirror_bytes", 0),
        saved_in=crawler.options.mirror or crawler.options.save_pages,
        **todo_figures(todo),
    )


def todo_figures(todo: PoliteFrontier) -> dict[str, int]:
    """Where ToDo's URLs wait, in memory and on disk (its ``figures``), what it says of it."""
    return {k: v for k, v in todo.figures().items() if k in TODO_FIGURES}


TODO_FIGURES = ("todo_in_memory", "todo_memory_bytes", "todo_on_disk", "todo_disk_bytes",
                "todo_disk_used_bytes", "todo_disk_failed", "todo_disk_lost")


def read_filter(visited: object) -> tuple[float | None, float | None]:
    """Visited's fill ratio and current false-positive rate, where it has them.

    Any Visited may stand in (exact set, Bloom, scalable, Redis…), so both are optional. This
    is the one costly reading: a Bloom filter counts its set bits (milliseconds for 1.8 MB).
    """
    return getattr(visited, "fill_ratio", None), getattr(visited, "current_fp_rate", None)


def last_reading(crawler: Watched) -> Progress | None:
    """The crawl's reading as its run ends, its Visited counted (None if it cannot be read:
    Redis lost, which the crawl tells)."""
    try:
        return read_progress(crawler)
    except Exception:  # (a reading after the run then fails too, as the view expects)
        log.debug("the crawl's last reading failed", exc_info=True)
        return None


class ProgressReader:
    """Reads a crawl again and again; the counters every time, Visited's bits only as often as
    keeps counting them under ``budget`` of the wall time (1%: a 1.8 MB Bloom filter that takes
    2 ms to count is re-counted every 0.2 s, a small one on every reading)."""

    def __init__(self, crawler: Watched, budget: float = 0.01) -> None:
        self.crawler = crawler
        self.budget = budget
        self._figures: tuple[float | None, float | None] | None = None
        self._next_count = float("-inf")

    def read(self, exact: bool = False) -> Progress:
        """The progress now; ``exact`` re-counts the filter whatever its age (the last reading);
        once the run has ended, its last reading."""
        if self.crawler.ended is not None:
            return self.crawler.ended
        now = time.monotonic()
        if exact or self._figures is None or now >= self._next_count:
            self._figures = read_filter(self.crawler.visited)
            self._next_count = now + (time.monotonic() - now) / self.budget
        return read_progress(self.crawler, self._figures)


class RecentRate:
    """Pages per second over the last ``window`` seconds, from successive readings."""

    def __init__(self, window: float = 2.0) -> None:
        self.window = window
        self._readings: deque[tuple[float, int]] = deque()

    def update(self, progress: Progress, now: float | None = None) -> float:
        """Note ``progress`` at ``now`` (default: the monotonic clock); pages per second over
        the last ``window`` seconds (the crawl's overall rate until two readings differ in time)."""
        now = time.monotonic() if now is None else now
        self._readings.append((now, progress.pages))
        while len(self._readings) > 2 and now - self._readings[1][0] >= self.window:
            self._readings.popleft()
        (t0, p0), (t1, p1) = self._readings[0], self._readings[-1]
        return (p1 - p0) / (t1 - t0) if t1 > t0 else progress.pages_per_s
