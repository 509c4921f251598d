"""The crawl: seeds → ToDo → worker → fetch → links → Visited → ToDo.

:class:`Crawler` builds the crawl's parts from the options — ToDo, Visited, politeness, the
state, the shared crawl — puts the seeds in ToDo (marking them in Visited), then hands its
parts to the core's crawler (:class:`minicrawl.core.crawler.Crawler`), which runs ``threads``
workers. Each runs the core's loop (:class:`minicrawl.core.worker.Worker`: take → visit →
done) over ToDo taken in turns; what it does with a ToDo item is run.py's visitor
(:mod:`minicrawl.visit.hooks`: admit → fetch → extract → Visited → ToDo); its threads are
run.py's (:mod:`minicrawl.workers`: as many at work as keep the CPU busy, Ctrl-C).

The crawl is over when ToDo is empty and no worker is busy (``ToDo.take`` returns ``None``).
Seed files are read while the crawl runs (:mod:`minicrawl.seeds`): the URL arguments and each
file's first seed go in before the workers start; a feeder thread puts the rest, chunk by chunk,
through the door links take, at most 50,000 seeds ahead of the workers (seeds.SeedFeed: ToDo is
in memory), and counts as a busy worker until it is done (a shared crawl reads
them all before its first take: other processes must see it seeding); a second thread reads the
seeds' hosts for the scope, which answers a host it does not know yet only after that pass.
Whatever watches or keeps the crawl (trace, report, ``--out``, ``--links``, saved pages, the
state, the WARC archive) is an observer, listed here when the crawl runs
(:meth:`Crawler._observers`), and hears about it at the points of :mod:`minicrawl.events`.
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, ExitStack, nullcontext
from datetime import datetime
from typing import TYPE_CHECKING

from minicrawl.admission import DepthLimit, HostCap, Traps
from minicrawl.checks import check_http
from minicrawl.cli.outpaths import check_output_paths, write_at_end
from minicrawl.core.crawler import Crawler as CoreCrawler
from minicrawl.core.door import Door, Entry
from minicrawl.core.interfaces import Admission, Frontier, Item
from minicrawl.core.trip import Trip
from minicrawl.core.worker import Worker
from minicrawl.errors import RedisUnavailable
from minicrawl.events import Callback, CrawlObserver, Events
from minicrawl.frontier.disk import MB, SpillingToDo
from minicrawl.frontier.hosts import Hosts
from minicrawl.frontier.todo import ToDo
from minicrawl.frontier.turns import TakingTurns
from minicrawl.http.credentials import seed_credentials
from minicrawl.http.fetch import Fetcher, crawl_cookies
from minicrawl.http.proxies import Proxies
from minicrawl.options import Options, OptionValue
from minicrawl.page import Page, now
from minicrawl.page_feed import PageFeed
from minicrawl.records.digests import open_duplicates
from minicrawl.records.edges import Damaged
from minicrawl.records.output import Output
from minicrawl.resolve import LinkResolver
from minicrawl.scope import Scope
from minicrawl.seams import HostPace, PageCap, PoliteFrontier, Redirects
from minicrawl.seeds import NoValidSeeds, SeedFeed, Seeds, seed_arguments
from minicrawl.state.opening import claimed_by_us
from minicrawl.state.store import CrawlState, StateError, open_state
from minicrawl.stats import PageCount, Stats, StatsSnapshot
from minicrawl.visit.hooks import CrawlHooks, Parts
from minicrawl.visit.redirects import Chains
from minicrawl.visit.robots import RobotsGate
from minicrawl.visited.known import KnownVisited
from minicrawl.visited.make import CapacityWatch, Visited, describe, make_visited
from minicrawl.watch.progress import Watched, last_reading
from minicrawl.watch.summary import FirstProblems
from minicrawl.workers import Workers

if TYPE_CHECKING:  # (imported where an option asks for them: see _open_the_rest)
    from minicrawl.mirror.saver import Mirror
    from minicrawl.records.broken import BrokenLinks
    from minicrawl.records.warc import WarcArchive

__all__ = ["Crawler", "Page"]

log = logging.getLogger("minicrawl")
_bad_seed = functools.partial(log.warning, "%s")  # a seed file's bad line, told as it is read
RUNNING = ("this Crawler is running already (run() or pages() from another thread): make one "
           "Crawler per crawl")


class Crawler:
    """A crawl of ``seeds`` (URLs, or seed files) with the given options.

    ``Crawler(seeds, threads=4).run()`` crawls and returns the stats dict; ``pages()`` yields each
    :class:`Page` as it is fetched; ``on_page`` is called (from worker threads) for each page.
    ``visited_filter`` replaces the Visited filter the options would build (one of
    :data:`minicrawl.visited.make.Visited`, e.g. a shared or pre-filled filter: the crawl
    calls its ``add_new``). ``demo``: the seeds are the demo site's, served on this port
    (``--demo``): a ``--state`` is marked a demo crawl's, and refuses any other crawl.
    """

    def __init__(self, seeds: Iterable[str] | str, options: Options | None = None, *,
                 on_page: Callable[[Page], None] | None = None,
                 visited_filter: Visited | None = None, demo: int | None = None,
                 **settings: OptionValue) -> None:
        if options is not None and not isinstance(options, Options):
            raise TypeError(f"options must be an Options (or give the settings as keywords: "
                            f"Crawler(seeds, threads=4)), got {type(options).__name__}")
        self.options = opts = (options or Options()).replace(**settings)
        args = seed_arguments(seeds)
        # The URL arguments and each seed file's first seed; the files' rest is read as the
        # crawl runs (_feed_seeds)
        self.seed_input = Seeds(args)
        self.seeds, self.seed_problems = self.seed_input.head, self.seed_input.problems
        if not self.seeds:  # each problem told once, in this one message
            raise NoValidSeeds("no valid seed URL" + (
                ": " + "; ".join(self.seed_problems) if self.seed_problems else ""))
        # A seed's user:password@ is sent to its origin with every request, and written down
        # nowhere: no URL of the crawl holds it (see minicrawl.http.credentials).
        self.seeds, self.credentials = seed_credentials(self.seeds)
        # Everything that can be refused is refused before anything is created: the outputs
        # (against the seed files and each other: see minicrawl.cli.outpaths), the HTTP settings
        # with the environment's proxies and CAs (each wrong one would fail every request), the
        # state's options (open_state refuses before it creates the dir).
        check_output_paths(opts, args)
        check_http(opts.user_agent, opts.proxy, opts.ca_bundle, os.environ)
        for problem in self.seed_problems:
            log.warning("%s", problem)
        self.on_page = on_page
        self.failure: StateError | RedisUnavailable | None = None
        self.output_failures: list[str] = []  # flags whose file could not be written
        self._running = threading.Lock()  # held by the one run() (or close())
        self._closed = False  # close(): never to run
        self._new_state = opts.state is not None and not os.path.exists(opts.state)  # see close
        # The packed values (a page's links…) this run finds damaged in the state or a scratch
        # file, and skips: told in one line when it ends (whoever read them, however many)
        self.damaged = Damaged()
        try:
            # With --state, Visited and the ToDo journal come from (and go to) the state dir;
            # without, a state that remembers nothing.
            self.state = open_state(opts, self.seed_input.binding() if opts.state else (),
                                    demo, self.damaged)
            self._open_the_rest(opts, visited_filter)
        except BaseException:  # refused after all: leave no state bound to this configuration
            self.damaged.tell()  # (those its opening skipped: not read again by the next run)
            self.close()  # no lock, heartbeat or connection left in a process that goes on
            raise

    def _open_the_rest(self, opts: Options, visited_filter: Visited | None) -> None:
        """The parts after the state (a failure here removes a state this run created)."""
        self.shared = None  # with --redis: ToDo, Visited and stats shared by many processes
        if opts.redis:
            from minicrawl.redis.crawl import open_shared_crawl

            self.shared = open_shared_crawl(opts, self.seeds)
        # --warc: every fetch (the fetchers hand it over), written by one thread; opened last
        # of the outputs that can be refused (a new archive replaces an earlier one's files).
        # What an option asks for is imported when it does: a crawl without them was 0.1-0.2 s
        # of imports (warcio, regex, tinycss2, the mirror, sitemaps, report; issue 49).
        self.archive: WarcArchive | None = None
        if opts.warc:
            from minicrawl.records.warc import WarcArchive

            self.archive = WarcArchive(opts, self.seeds, opts.state is not None)
        # The hosts' pace and ToDo: this process's host states, and the polite ToDo keeping
        # --frontier-memory MB in memory and the rest on disk (closed at the end: its disk part
        # goes); or, if shared, kept in Redis.
        self._spilling: SpillingToDo | None = None
        self.pace: HostPace
        self.todo: PoliteFrontier
        if self.shared:
            self.pace, self.todo = self.shared.host_gate, self.shared.todo
        else:
            hosts = Hosts(opts.per_host, opts.delay)
            self._spilling = SpillingToDo(ToDo(hosts), opts.frontier_memory * MB)
            self.pace, self.todo = hosts, self._spilling
        own = visited_filter is None  # (one given is asked about every link, as it may count them)
        if visited_filter is None:  # (not `or`: an empty filter is falsy)
            visited_filter = (self.state.visited if self.state.visited is not None else
                              self.shared.visited if self.shared else make_visited(opts))
        self.visited = visited_filter
        self.scope = Scope(self.seeds, opts.allow_domain, opts.include, opts.exclude,
                           more_seeds=self.seed_input.streamed)
        # What the workers take from: while a thread reads seeds, ToDo with the feed counted
        # busy (a shared crawl reads them all first: see the module doc).
        self._feed = SeedFeed(self.todo) if self.seed_input.streamed and not self.shared \
            else None
        self._seed_origins: dict[str, None] = {}  # with --sitemaps: every seed's origin
        # Its memories hold at most a share of Visited's URLs (minicrawl.memo).
        self.resolver = LinkResolver(opts, [self.scope, Traps(opts.max_repeated_segments)],
                                     budget=None if self.shared else self.visited.__len__)
        self.stats = self.shared.stats if self.shared else Stats()
        # robots.txt, and each request asks the hosts' pace for a slot
        self.politeness = RobotsGate(opts, self.stats, self.pace)
        # The one way into ToDo for every new URL: the admission rules (the depth; the
        # resolver, which keeps the verdicts of the rules that answer from the URL alone; the
        # host cap, whose answer changes as the crawl goes), then Visited, then ToDo.
        # (no --max-depth: no rule to ask about each link)
        rules: list[Admission] = [*([DepthLimit(opts.max_depth)] if opts.max_depth is not None
                                    else []), self.resolver]
        if opts.max_pages_per_host:
            rules.append(HostCap(self.politeness))
        # Visited asked only about the URLs it was not asked about lately (visited/known.py);
        # not a shared one: a page re-run elsewhere must offer the list its first run offered
        # (the replay token is of the URLs asked about), and the shared Visited answers it
        self.door = Door(self.todo, KnownVisited(self.visited, self.visited.__len__)
                         if own and not self.shared else self.visited, rules)
        # Redirect chains waiting at their targets: in Redis if shared (any process takes on)
        self.chains: Redirects = self.shared.chains if self.shared else Chains()
        self.cookies = crawl_cookies(opts)  # one jar for the crawl: its workers' fetchers share it
        self.proxies: Proxies | None = None  # one proxy table too: the first worker's fetcher's
        # Content seen under another URL (None with --keep-duplicates): minicrawl.records.digests.
        self.duplicates = open_duplicates(opts, self.state,
                                          self.shared.redis if self.shared else None)
        self._lastmod: dict[str, datetime] = {}  # --sitemaps with --recrawl: URL → <lastmod>
        self._heads_failed: set[str] = set()  # --check-links: URLs to GET, their HEAD failed
        self._pages_full = threading.Event()  # --check-links: --max-pages reached, checks go on
        # The copies kept (--mirror; --save-pages, its simpler case): minicrawl/mirror/saver.py
        self.saver: Mirror | None = None
        if opts.mirror or opts.save_pages:
            from minicrawl.mirror.saver import open_saver

            self.saver = open_saver(opts, self.stats, self.stop)
        self.events = Events()  # the observers are listed when the crawl runs
        self.first_problems = FirstProblems()  # the first pages that went wrong: the summary's
        # When links are recorded: the broken ones, grouped by target, read after the crawl
        # (--check-links prints them, the report's first table) until closed
        self.broken_links: BrokenLinks | None = None
        self.workers = Workers(opts.threads)  # the threads, and how many work at once
        taken: Frontier = self._feed if self._feed is not None else self.todo
        self._in_turns = TakingTurns(taken, self.workers.at_work.gate,  # what workers take
                                     self.workers.at_work.waiting)
        # What the live view and the report read (they never import this module)
        self.watched = Watched(self.stats, self.todo, self.visited, self.workers, opts, self.seeds)
        self._hooks: list[CrawlHooks] = []  # the workers' trips' hooks, in their order
        self._parsing: AbstractContextManager[object] = nullcontext()  # the core's, once it runs
        self.page_count: PageCap = self.shared.pages if self.shared else PageCount()
        self._stopping = threading.Event()

    # -- the crawl ---------------------------------------------------------------------------

    def run(self) -> StatsSnapshot:
        """Crawl until ToDo is empty and no worker is busy (or ``stop()``); return the stats.
        One at a time: run (or pages) from another thread meanwhile raises RuntimeError. A
        shared crawl (``redis``) is left as the run ends, however it ends (its connection
        closed, its heartbeats ended): running it again raises RuntimeError."""
        if not self._running.acquire(blocking=False):  # two crawls into one set of files
            raise RuntimeError(RUNNING)
        try:
            if self._closed:
                raise RuntimeError("this Crawler is closed: make a new Crawler to crawl again")
            self._new_state = False  # the crawl's now, however the run ends (close keeps it)
            self.watched.ended = None  # (read live again, until this run's end)
            # Left after _run's last write to Redis (the final stats, the report, --stats): else,
            # in a process that goes on, its heartbeats would beat and its connection stay open.
            with self.shared or nullcontext():
                try:
                    return self._run()
                finally:  # what the live view shows last: read before the shared crawl is left
                    self.watched.ended = last_reading(self.watched)
        finally:
            self._running.release()

    def _run(self) -> StatsSnapshot:
        opts = self.options
        feeders: list[threading.Thread] = []
        try:
            self.events = Events(self._observers(), self.stats)
            self.events.crawl_started()
            items, counts = self.state.start(recrawl=opts.recrawl)  # resume: the journal
            while batch := list(itertools.islice(items, 10_000)):  # read as it enters ToDo
                self.events.resumed(batch)
                self.door.back(batch)
            self.stats.add(counts)
            self._put_seeds()
            feeders = self._start_feeding()
            if opts.sitemaps:  # before the workers start: the termination rule still holds
                self.scope.complete.wait()  # every seed's host read: their sitemaps
                self._put_sitemap_urls()
            # The core's crawler, given run.py's parts: the seeds are in ToDo already.
            self._hooks = []
            core = CoreCrawler([], threads=opts.threads, todo=self._in_turns, door=self.door,
                               observers=[self.events],
                               trip=self.trip, runner=self._run_workers)
            self._parsing = core.parsing  # the core's parsing slot: the trips' too
            core.run()
            self.stats.finished = time.monotonic()
        finally:
            self._end_feeding(feeders)
            stats = self.summary()
            if self._spilling is not None:  # its disk part goes (Ctrl-C, SIGTERM too)
                self._spilling.close()
            if self.duplicates is not None:  # its scratch file goes too
                self.duplicates.close()
            if not self.events.observers:  # making them failed: close what __init__ opened
                self.events = Events([o for o in (self.state, self.archive) if o is not None])
            interrupted = None
            try:
                self.events.crawl_finished(stats)  # files closed, report drawn
            except KeyboardInterrupt as e:  # Ctrl-C, SIGTERM while the report is drawn: each
                interrupted = e  # file was closed (a report written atomically: none, or whole)
                stats["interrupted"] = 1
            # After the last reader (the links', links_in's); the stats count them too, as the
            # other counters, once there are some
            if skipped := self.damaged.tell():
                stats["damaged_values_skipped"] = skipped
            # An output that failed (a full disk) said so in one line; the crawl's results stay.
            self.output_failures += [o.flag for o in self.events.observers
                                     if getattr(o, "failed", False)]
            if opts.stats and not write_at_end("--stats", opts.stats,
                                               lambda: json.dumps(stats, indent=2) + "\n"):
                self.output_failures.append("--stats")
            if interrupted is not None:
                raise interrupted
        if self.failure is not None:
            raise self.failure
        if self.shared is not None and self.shared.todo.failure is not None:
            raise self.shared.todo.failure  # Redis lost: what was in flight waits there
        return stats

    def pages(self) -> Iterator[Page]:
        """Run the crawl in the background and yield each page as it is fetched
        (:class:`minicrawl.page_feed.PageFeed`)."""
        if self._running.locked():  # refused before it changes (or, leaving, stops) that crawl
            raise RuntimeError(RUNNING)
        feed = PageFeed(self.options.threads, self.on_page)
        self.on_page = feed.on_page
        yield from feed.pages(self.run, self.stop)

    def trip(self, n: int) -> Trip:
        """Worker ``n``'s trip: the core's, with run.py's hooks over this crawl's parts and its
        own fetcher (kept, to be closed by its thread: ``CrawlHooks.work``)."""
        fetcher = Fetcher(self.options, self.archive.exchange if self.archive else None,
                          self.cookies, self.proxies)
        self.proxies = fetcher.core.proxies
        fetcher.core.credentials = self.credentials  # the core's fetcher sends them
        hooks = CrawlHooks(Parts(
            self.options, self.todo, self.door, self.resolver, self.politeness, self.chains,
            self.state, self.stats, self.events, self.duplicates, self.page_count,
            self._lastmod, self._fail, self._heads_failed, self.scope, self._pages_full), n,
            fetcher)
        self._hooks.append(hooks)
        return Trip(self.door, hooks.fetcher, None, hooks, self._parsing)

    def _run_workers(self, workers: list[Worker]) -> None:
        """The core crawler's runner, run.py's way (:class:`Workers`): only as many at work as
        keep the CPU busy, a Ctrl-C gives the pages in flight a grace; each thread closes its
        worker's connections when its loop ends."""
        self.workers.run([functools.partial(hooks.work, worker)
                          for worker, hooks in zip(workers, self._hooks, strict=True)],
                         on_interrupt=self._interrupted, grace=self.options.timeout * 3 + 1)

    def close(self) -> None:
        """Let go of what the Crawler holds if it is not to run (a run does as it ends): the
        shared crawl left (heartbeats ended, connection closed), the state's lock freed (nothing
        saved; a state directory it made, removed), the outputs' and scratch files closed. Again,
        it does nothing; during a run, or run() after it: RuntimeError."""
        if not self._running.acquire(blocking=False):  # (the run closes them as it ends)
            raise RuntimeError(RUNNING)
        self._closed = True
        with ExitStack() as stack:  # each, even if one before raised (the last pushed first)
            stack.callback(self._running.release)
            if self._new_state and claimed_by_us(self.options.state or ""):  # made, never run:
                stack.callback(shutil.rmtree, self.options.state, True)  # bound to no crawl
            for name in ("shared", "duplicates", "_spilling", "saver", "archive"):  # (if made)
                if (part := getattr(self, name, None)) is not None:
                    stack.callback(part.close)
            if isinstance(state := getattr(self, "state", None), CrawlState):
                stack.callback(state.close, checkpoint=False)
            stack.callback(self.seed_input.close)

    def __enter__(self) -> Crawler:
        """The Crawler: ``with Crawler(...) as crawler:`` closes it (:meth:`close`) at the end."""
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stop(self) -> None:
        """Ask the workers to stop after their current item; what is left in ToDo stays there."""
        self._stopping.set()
        if self._feed is not None:
            self._feed.finish()
        self.todo.stop()

    def summary(self) -> StatsSnapshot:
        """The stats: counters, timing, Visited's fill and false-positive rates, ToDo left (in
        memory and on disk, and the disk it took)."""
        # (pages dropped from ToDo at the page cap while checks went on were left in it)
        left = len(self.todo) + self.stats["todo_pages_dropped"]
        return self.stats.snapshot(todo_left=left, **self.todo.figures(),
                                   **describe(self.visited))

    def _observers(self) -> list[CrawlObserver]:
        """Who hears the crawl, in order: the keepers first (the saver names the file the
        state's record keeps), then the watchers."""
        opts = self.options
        observers: list[CrawlObserver] = [self.saver] if self.saver else []
        observers.append(self.state)
        if self.archive is not None:
            observers.append(self.archive)
        observers.append(CapacityWatch(self.visited))  # a fixed Bloom filter overfull: said once
        if opts.trace:
            from minicrawl.watch.trace import Tracer

            observers.append(Tracer.open(opts.trace, on_broken=self.stop))
        if opts.records_links:  # every link of every page, joined at the end with its
            # target's fate: the --links file, the broken ones (before the report: it reads them)
            from minicrawl.records.broken import BrokenLinks
            from minicrawl.records.links import LinkJoin

            self.broken_links = BrokenLinks()
            # (with --state, the state keeps the edges: the join covers every run of the crawl)
            state = self.state if isinstance(self.state, CrawlState) else None
            observers.append(LinkJoin(opts.links, [self.broken_links], on_failure=self.stop,
                                      state=state, damaged=self.damaged))
        if opts.report:
            from minicrawl.watch.report import Recorder

            observers.append(Recorder(self.watched, path=opts.report, broken=self.broken_links))
        out = None
        if opts.out:  # continued by a resume, or by a process rejoining a shared crawl
            out = Output(opts.out, continued=self.state.existed or bool(
                self.shared and self.shared.todo.joined), flush_each=self.shared is not None,
                on_failure=self.stop)
            self.state.attach_output(out)  # with --state its writer writes the lines
            observers.append(out)
        observers.append(self.first_problems)
        if self.on_page is not None:
            observers.append(Callback(self.on_page, self.stats))
        # Last: it rewrites the --out file, closed (not a stream the user chose: standard
        # output, /dev/null, a pipe). Not in a shared crawl: each process sees its own pages'
        # links only, so links_in stays null there, as README says, unsaid at every run.
        if out is not None and out.regular and self.shared is None:
            from minicrawl.records.linksin import LinksIn

            # A state that keeps each page's links has those of the runs before: counted
            kept = self.state if isinstance(self.state, CrawlState) \
                and self.state.counts_links else None
            untrue = ("the state holds pages of earlier runs (a resume, a recrawl), whose "
                      "links this run has not (a crawl with --links or --check-links from its "
                      "first run keeps them in its state)"
                      if self.state.existed and kept is None else None)
            observers.append(LinksIn(out, state=bool(opts.state), untrue=untrue, kept=kept))
        return observers

    def _put_seeds(self) -> None:
        """The seeds known up front into ToDo; a shared crawl (no feeder thread: see the module
        doc) reads its seed files' rest and hosts here too, before any take."""
        self._queue_seeds(self.seeds)
        if self.seed_input.streamed and self.shared is not None:
            self.scope.learned(self._origins())
            for chunk in self.seed_input.rest(_bad_seed):
                self._queue_seeds(chunk)

    def _queue_seeds(self, urls: list[str]) -> int:
        """Seeds through the door every link takes (Visited says which are new, repeats in a
        file too), journaled before they enter ToDo; how many were new."""
        def journal(entry: Entry) -> None:
            fresh = {item.url for item in entry.new}
            self.events.seeds_queued([item.url for item in entry.new],
                                     [url for url in urls if url not in fresh])
            self.state.journal(entry.new)
            if self._feed is not None:  # (a seed file's head too: seeds that wait in ToDo)
                self._feed.entering(entry.new)

        entry = self.door.seed(urls, keep=journal)
        # Counted as queued: a process joining a shared crawl with the same seeds queues none.
        self.stats.add(seeds=entry.queued)
        return len(entry.new)

    def _origins(self) -> Iterator[str]:
        """Every seed's origin (the pass over the seed files), kept for --sitemaps."""
        for origin in self.seed_input.origins():
            if self.options.sitemaps:
                self._seed_origins[origin] = None
            yield origin

    def _start_feeding(self) -> list[threading.Thread]:
        """The threads that read the seed files' rest into ToDo and their hosts into the scope,
        while the workers crawl (none if every seed is in already); the feeder, to be joined.
        The pass over the hosts is not joined, nor stopped: a worker that waits for its answer
        holds a page, so the crawl cannot end before it; a crawl ended otherwise (the page
        cap, Ctrl-C) needs no answer, and a scope cut short would have refused a host that a
        seed further down names — a link lost to a resumed crawl."""
        if self._feed is None:
            return []
        feeder = threading.Thread(target=self._feed_seeds, name="seed-feeder", daemon=True)
        feeder.start()
        threading.Thread(target=lambda: self.scope.learned(self._origins()), name="seed-hosts",
                         daemon=True).start()
        return [feeder]

    def _feed_seeds(self) -> None:
        """The feeder thread: each chunk of the files' rest through the door, until the files
        end or the crawl stops; the feed then ends (ToDo's end rule may hold again)."""
        assert self._feed is not None
        try:
            for chunk in self.seed_input.rest(_bad_seed):
                self._feed.room()  # at most SeedFeed.lead seeds wait in ToDo
                if self._feed.finished:
                    break
                # As for the first seeds: a password leaves the URL for the origin's requests
                chunk, found = seed_credentials(chunk)
                for origin, authorization in found.items():  # the first seed of an origin's
                    self.credentials.setdefault(origin, authorization)
                self._queue_seeds(chunk)
                self._feed.fed()
        except StateError as e:
            self._fail(e)
        except Exception as e:  # a bug: never silent, and the crawl must still end
            log.error("reading the seeds failed: %r", e)
            self.stop()
        finally:
            self._feed.finish()

    def _end_feeding(self, threads: list[threading.Thread]) -> None:
        if self._feed is not None:
            self._feed.finish()
        for thread in threads:
            thread.join()
        self.seed_input.close()

    def _put_sitemap_urls(self) -> None:
        """Read the seed hosts' sitemaps (minicrawl.sitemaps.reader) and put their unseen URLs in
        ToDo at depth 0, like the seeds; record each sitemap file."""
        from minicrawl.sitemaps.reader import SitemapReader, file_records

        reader = SitemapReader(self.options, self.politeness, self.stats, now)
        reader.fetcher.core.credentials = self.credentials  # a locked site's sitemaps too
        if self.archive is not None:  # sitemap fetches are archived like pages
            reader.fetcher.on_exchange = self.archive.exchange
        try:
            found = reader.read([*self.seeds, *(o + "/" for o in self._seed_origins)])
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM: stop like mid-crawl (the next run re-reads)
            log.warning("interrupted while reading the sitemaps")
            self._interrupted()
            return
        items: list[Item] = []
        queued = refused = 0
        # Each sitemap's URLs through the door (their referrer), journaled before ToDo; a URL
        # two sitemaps list was kept once by the reader, the first
        for sitemap, group in itertools.groupby(found.urls, key=lambda found: found[1]):
            entry = self.door.enter([url for url, _ in group], 0, sitemap,
                                    keep=lambda entry: self.state.journal(entry.new))
            items += entry.new
            queued, refused = queued + entry.queued, refused + len(entry.refused)
        self.stats.add(sitemap_urls=queued, sitemap_out_of_scope=refused)
        if self.options.recrawl:
            self._lastmod.update(found.lastmod)
        for page in file_records(found, items):
            self.events.sitemap_read(page)
            self.events.page_kept(page, [])
            self.events.on_page(page)
        self.events.sitemap_queued(items, len(found.urls) - refused - len(items))

    def _fail(self, failure: StateError | RedisUnavailable) -> None:
        """A worker found the crawl cannot go on: stop it; ``run`` raises the first failure."""
        self.failure = self.failure or failure
        self.stop()

    def _interrupted(self) -> None:
        self.stats.add(interrupted=1)
        self.stop()

    @property
    def worker_failures(self) -> list[str]:
        """Workers that died (a bug): never silent."""
        return self.workers.failures
