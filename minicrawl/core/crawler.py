"""The crawler: seeds in, N worker threads, a summary out. Seeds enter ToDo through the door
links take (:mod:`minicrawl.core.door`); the workers run until ToDo says the crawl is over."""

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from minicrawl.checks import check_crawler
from minicrawl.core.door import Door
from minicrawl.core.fetch import Fetcher
from minicrawl.core.interfaces import Admission, Frontier, Observer, Pace, Page, SeenSet
from minicrawl.core.limits import Politeness
from minicrawl.core.todo import ToDo
from minicrawl.core.trip import CoreHooks, Trip
from minicrawl.core.urls import canonicalize
from minicrawl.core.visited import BloomVisited
from minicrawl.core.worker import Worker
from minicrawl.heaps import keep_heaps_small
from minicrawl.http.credentials import seed_credentials


@dataclass
class Summary:
    """What a crawl did, counted page by page (an :class:`Observer` every crawl has)."""

    pages: int = 0  # pages visited, answered or not
    errors: int = 0  # pages with an error: no answer, a body not all read, a visit that raised
    bytes: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    seconds: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def on_page(self, page: Page) -> None:
        with self._lock:
            self.pages += 1
            self.errors += page.error is not None
            self.bytes += len(page.body)
            if page.status is not None:
                self.statuses[page.status] += 1


class Crawler:
    """A crawl of ``seeds`` by ``threads`` workers: ``Crawler(seeds).run()`` → a :class:`Summary`.
    Any part can be replaced: ``todo``, ``visited``, ``admission`` rules or the ``door`` they
    make (a door given brings its own Visited and rules, and must put into this ``todo``),
    the hosts' ``pace`` (else a ``delay``), ``fetcher`` (one per Trip), worker n's
    ``trip(n)`` (run.py's: its hooks), the ``runner`` (:meth:`run_threads`); ``observers`` are told
    after the :class:`Summary`. run.py's crawler is this one, given its own. ``ignore_nofollow``:
    follow what pages forbid. A seed's ``user:password@`` is sent to its origin (Basic auth)."""

    def __init__(self, seeds: Iterable[str], *, threads: int = 8,
                 todo: Frontier | None = None, visited: SeenSet | None = None,
                 admission: Sequence[Admission] = (), observers: Sequence[Observer] = (),
                 delay: float = 0.0, pace: Pace | None = None, max_pages: int | None = None,
                 fetcher: Callable[[], Fetcher] = Fetcher,
                 trip: Callable[[int], Trip] | None = None,
                 runner: Callable[[list[Worker]], None] | None = None,
                 ignore_nofollow: bool = False, door: Door | None = None) -> None:
        given = check_crawler(seeds, threads, max_pages, delay)  # each wrong one named
        self.seeds, self.credentials = seed_credentials(filter(None, map(canonicalize, given)))
        self.bad_seeds = [seed for seed in given if canonicalize(seed) is None]
        self.threads = threads
        self.todo = todo if todo is not None else ToDo()
        self.door = door if door is not None else Door(
            self.todo, visited if visited is not None else BloomVisited(), admission)
        self.visited = self.door.visited
        self.summary = Summary()
        self.observers = [self.summary, *observers]
        self.pace = pace if pace is not None else Politeness(delay) if delay > 0 else None
        # The page cap: a permit per item taken, never given back; who finds none stops ToDo.
        self.budget = threading.Semaphore(max_pages) if max_pages is not None else None
        self.parsing = threading.Lock()
        self.make_fetcher, self.ignore_nofollow = fetcher, ignore_nofollow
        self.make_trip = trip if trip is not None else self.trip
        self.runner = runner if runner is not None else self.run_threads

    def trip(self, n: int) -> Trip:
        """Worker ``n``'s :class:`Trip`, the core's own hooks and a fetcher of its own."""
        fetcher = self.make_fetcher()
        fetcher.credentials = self.credentials
        return Trip(self.door, fetcher, self.pace, CoreHooks(self.ignore_nofollow), self.parsing)

    def run(self) -> Summary:
        """Crawl until done, or Ctrl-C (each worker visits the item it holds, then run_threads
        raises it), or an observer raises (the crawl stops so, then run raises it)."""
        start = time.monotonic()
        keep_heaps_small()
        self.door.seed(self.seeds)
        workers = [Worker(self.todo, self.make_trip(n), self.observers, self.budget)
                   for n in range(1, self.threads + 1)]
        try:
            self.runner(workers)
        finally:
            self.summary.seconds = time.monotonic() - start
        if failure := next((w.failure for w in workers if w.failure is not None), None):
            raise failure  # an observer's: the crawl stopped at it, every worker has ended
        return self.summary

    def run_threads(self, workers: list[Worker]) -> None:
        """Each worker's loop in a thread (``worker-1`` …) until all have ended, as each says (a
        Ctrl-C in CPython 3.11's Thread.join marks a thread ended while it still works)."""
        ended = [threading.Event() for _ in workers]
        threads = [threading.Thread(target=_run, args=(worker, end), name=f"worker-{n}")
                   for n, (worker, end) in enumerate(zip(workers, ended, strict=True), 1)]
        try:
            for thread in threads:
                thread.start()
            for end in ended:
                end.wait()
        except BaseException:  # Ctrl-C, a thread refused, even while starting: none left crawling
            self.todo.stop()
            for thread, end in zip(threads, ended, strict=True):
                if thread.ident is not None:  # started
                    end.wait()
            raise


def _run(worker: Worker, ended: threading.Event) -> None:
    try:
        worker.run()
    finally:
        ended.set()
