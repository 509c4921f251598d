"""The crawl: seeds → ToDo → worker → fetch → links → Visited → ToDo.

:class:`Crawler` puts the seeds in ToDo (marking them in Visited), starts ``threads`` workers and
waits. Each worker loops over one ToDo item at a time:

1. **take** it from ToDo (:meth:`minicrawl.todo.ToDo.get`);
2. **admit** it: robots.txt and the host's pace (:mod:`minicrawl.politeness`) say go, wait or no;
3. **fetch** it, once (:mod:`minicrawl.fetch`); a failure worth retrying goes back to ToDo for
   later, a redirect's target goes to ToDo like a link (:mod:`minicrawl.redirects`);
4. **extract** the page's links, resolve and judge them (:mod:`minicrawl.links`,
   :mod:`minicrawl.resolve`);
5. offer the wanted ones to **Visited** in one batch: test-and-insert, one atomic step;
6. put those Visited had never seen in **ToDo**, once the page is recorded.

The crawl is over when ToDo is empty and no worker is busy (``ToDo.get`` returns ``None``).
Whatever watches or keeps the crawl (trace, report, ``--out``, saved pages, the state) hears
about it at the points of :mod:`minicrawl.events`; none of it is named here.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any

from minicrawl.digests import open_duplicates
from minicrawl.errors import RedisUnavailable
from minicrawl.events import Callback, CrawlObserver, Events, LinkDecisions
from minicrawl.fetch import Fetcher, Response, error_kind
from minicrawl.links import extract_links, is_html
from minicrawl.malloc import limit_heaps
from minicrawl.options import Options
from minicrawl.outpaths import check_output_paths, write_at_end
from minicrawl.output import Output
from minicrawl.page import Page, now
from minicrawl.politeness import LocalPacer, Politeness, Verdict
from minicrawl.redirects import Chain, Chains, next_hop
from minicrawl.resolve import LinkResolver
from minicrawl.retry import failure_reason, host_pause, is_retryable, wait_before_retry
from minicrawl.scope import Scope
from minicrawl.seeds import NoValidSeeds, read_seeds, seed_arguments
from minicrawl.sitemaps import SitemapReader, file_records, unchanged_page
from minicrawl.state.pages import PageSaver
from minicrawl.state.recrawl import UNCHANGED, Prior
from minicrawl.state.store import StateError, open_state
from minicrawl.stats import Stats
from minicrawl.todo import Item, ToDo
from minicrawl.visited import OfferedOnce, Visited, describe, make_visited, warn_over_capacity
from minicrawl.warc.archive import WarcArchive
from minicrawl.watch.report import Recorder, require_plotting
from minicrawl.watch.trace import Tracer
from minicrawl.workers import Workers

__all__ = ["Crawler", "Page"]

log = logging.getLogger("minicrawl")


class Crawler:
    """A crawl of ``seeds`` (URLs, or seed files) with the given options.

    ``Crawler(seeds, threads=4).run()`` crawls and returns the stats dict; ``pages()`` yields each
    :class:`Page` as it is fetched; ``on_page`` is called (from worker threads) for each page.
    ``visited_filter`` replaces the Visited filter the options would build (any object with
    ``add``/``add_many``, e.g. a shared or pre-filled filter).
    """

    def __init__(self, seeds: Iterable[str] | str, options: Options | None = None, *,
                 on_page: Callable[[Page], None] | None = None,
                 visited_filter: Visited | None = None,
                 **settings: Any) -> None:
        if options is not None and not isinstance(options, Options):
            raise TypeError(f"options must be an Options (or give the settings as keywords: "
                            f"Crawler(seeds, threads=4)), got {type(options).__name__}")
        self.options = opts = (options or Options()).replace(**settings)
        self.seeds, self.seed_problems = read_seeds(seed_arguments(seeds))
        if not self.seeds:  # each problem told once, in this one message
            raise NoValidSeeds("no valid seed URL" + (
                ": " + "; ".join(self.seed_problems) if self.seed_problems else ""))
        for problem in self.seed_problems:
            log.warning("%s", problem)
        check_output_paths(opts)  # before anything is fetched: see minicrawl.outpaths
        self.on_page = on_page
        # --warc: every fetch (the fetchers hand it over), written by one thread; opened here
        self.archive = WarcArchive(opts, self.seeds, opts.state is not None) if opts.warc else None
        # With --state, Visited and the ToDo journal come from (and go to) the state dir;
        # without, a state that remembers nothing.
        self.state = open_state(opts, self.seeds)
        self.failure: StateError | RedisUnavailable | None = None
        self.output_failures: list[str] = []  # flags whose file could not be written
        self.shared = None  # with --redis: ToDo, Visited and stats shared by many processes
        if opts.redis:
            from minicrawl.shared.crawl import open_shared_crawl

            self.shared = open_shared_crawl(opts, self.seeds)
        self.todo = self.shared.todo if self.shared else ToDo(opts.per_host, opts.delay)
        if visited_filter is None:  # (not `or`: an empty filter is falsy)
            visited_filter = (self.state.visited if self.state.visited is not None else
                              self.shared.visited if self.shared else make_visited(opts))
        self.visited = visited_filter
        # A shared crawl asks Redis about every link: a page's link list is its replay token.
        self._offer = self.visited if self.shared else OfferedOnce(self.visited)
        self.scope = Scope(self.seeds, opts.allow_domain, opts.include, opts.exclude)
        # Its memories hold at most a share of Visited's URLs (minicrawl.memo).
        self.resolver = LinkResolver(opts, self.scope,
                                     budget=None if self.shared else self.visited.__len__)
        limit_heaps()  # see minicrawl.malloc: the C heap must not grow with the thread count
        self.stats = self.shared.stats if self.shared else Stats()
        # robots.txt and per-host pace: kept by the host-aware ToDo, or through Redis if shared.
        self.politeness = Politeness(opts, self.stats, self.shared.host_gate if self.shared
                                     else LocalPacer(self.todo))
        self.chains = Chains()
        # Content seen under another URL (None with --keep-duplicates): see minicrawl.digests.
        self.duplicates = open_duplicates(opts, self.state,
                                          self.shared.redis if self.shared else None)
        self._lastmod: dict[str, datetime] = {}  # --sitemaps with --recrawl: URL → <lastmod>
        self.saver = (PageSaver(opts.save_pages, on_failure=self.stop) if opts.save_pages
                      else None)
        if opts.report:
            require_plotting()
        self.events = Events()  # the observers are made when the crawl runs
        self.workers = Workers(opts.threads, self._worker)
        self._fetch_lock = threading.Lock()
        self._fetches = 0
        self._over_capacity_told = False
        self._stopping = threading.Event()

    # -- the crawl ---------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        """Crawl until ToDo is empty and no worker is busy (or ``stop()``); return the stats."""
        opts = self.options
        self.events = Events(self._observers())
        try:
            self.events.crawl_started()
            items, counts = self.state.start(recrawl=opts.recrawl)  # resume: the journal
            if items:
                self.events.resumed(items)
            self.todo.put_many(items)
            self.stats.add(counts)
            self._put_seeds()
            if opts.sitemaps:  # before the workers start: the termination rule still holds
                self._put_sitemap_urls()
            self.workers.run(on_interrupt=self._interrupted, grace=opts.timeout * 3 + 1)
            self.stats.finished = time.monotonic()
        finally:
            stats = self.summary()
            self.events.crawl_finished(stats)  # files closed, report drawn
            # An output that failed (a full disk) said so in one line; the crawl's results stay.
            self.output_failures += [o.flag for o in self.events.observers
                                     if getattr(o, "failed", False)]
        if opts.stats and not write_at_end("--stats", opts.stats, lambda p: _write_json(p, stats)):
            self.output_failures.append("--stats")
        if self.failure is not None:
            raise self.failure
        if self.shared is not None and self.shared.todo.failure is not None:
            raise self.shared.todo.failure  # Redis lost: what was in flight waits there
        return stats

    def pages(self) -> Iterator[Page]:
        """Run the crawl in the background and yield each page as it is fetched."""
        handoff: queue.Queue[Page | None] = queue.Queue(maxsize=4 * self.options.threads)
        previous = self.on_page

        def on_page(page: Page) -> None:
            if previous:
                previous(page)
            while not self._stopping.is_set():
                try:
                    handoff.put(page, timeout=0.2)
                    return
                except queue.Full:
                    continue

        self.on_page = on_page
        runner = threading.Thread(target=lambda: (self.run(), handoff.put(None)), daemon=True)
        runner.start()
        try:
            while (page := handoff.get()) is not None:
                yield page
        finally:  # the caller stopped early: stop the crawl too
            self.stop()
            runner.join()

    def stop(self) -> None:
        """Ask the workers to stop after their current fetch; what is left in ToDo stays there."""
        self._stopping.set()
        self.todo.close()

    def summary(self) -> dict[str, Any]:
        """The stats: counters, timing, Visited's fill and false-positive rates, ToDo left."""
        return self.stats.snapshot(todo_left=len(self.todo), **describe(self.visited))

    def _observers(self) -> list[CrawlObserver]:
        """Who hears the crawl, in order: the keepers first (the saver names the file the
        state's record keeps), then the watchers."""
        opts = self.options
        observers: list[CrawlObserver] = [self.saver] if self.saver else []
        observers.append(self.state)
        if self.archive is not None:
            observers.append(self.archive)
        if opts.trace:
            observers.append(Tracer.open(opts.trace, on_broken=self.stop))
        if opts.report:
            observers.append(Recorder(self, path=opts.report))
        if opts.out:  # continued by a resume, or by a process rejoining a shared crawl
            out = Output(opts.out, continued=self.state.on_disk or bool(
                self.shared and self.shared.todo.joined), flush_each=self.shared is not None,
                on_failure=self.stop)
            self.state.attach_output(out)  # with --state its writer writes the lines
            observers.append(out)
        if self.on_page is not None:
            observers.append(Callback(self.on_page, self.stats))
        return observers

    def _put_seeds(self) -> None:
        fresh = self._offer.add_many(self.seeds)
        new = [url for url, is_new in zip(self.seeds, fresh, strict=True) if is_new]
        self.events.seeds_queued(new, [url for url in self.seeds if url not in new])
        items = [Item(url, 0, None) for url in new]
        self.state.journal(items)
        self.todo.put_many(items)
        self.stats.add(seeds=len(new))

    def _put_sitemap_urls(self) -> None:
        """Read the seed hosts' sitemaps (minicrawl.sitemaps) and put their unseen URLs in
        ToDo at depth 0, like the seeds; record each sitemap file."""
        reader = SitemapReader(self.options, self.politeness, self.stats,
                               lambda url: self._unwanted(url) is None, now)
        if self.archive is not None:  # sitemap fetches are archived like pages
            reader.fetcher.on_exchange = self.archive.exchange
        try:
            found = reader.read(self.seeds)
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM: stop like mid-crawl (the next run re-reads)
            log.warning("interrupted while reading the sitemaps")
            self._interrupted()
            return
        urls = [url for url, _ in found.urls]
        fresh = self._offer.add_many(urls) if urls else []
        items = [Item(url, 0, sitemap) for (url, sitemap), is_new
                 in zip(found.urls, fresh, strict=True) if is_new]
        self.state.journal(items)
        self.todo.put_many(items)
        self.stats.add(sitemap_urls=len(items))
        if self.options.recrawl:
            self._lastmod = found.lastmod
        for page in file_records(found, items):
            self.events.sitemap_read(page)
            self._emit(page)
        self.events.sitemap_queued(items, len(urls) - len(items))

    def _sitemap_unchanged(self, item: Item, n: int) -> bool:
        """With --recrawl: record ``item`` unchanged, without a request, if its sitemap
        <lastmod> is not newer than its recorded fetch (True when done so)."""
        prior = self.state.prior(item.url)
        page = unchanged_page(item, prior, self._lastmod.get(item.url), n)
        if page is None:
            return False
        self.events.lastmod_unchanged(n, item.url)
        self._record(page, {"sitemap_unchanged": 1}, prior)
        return True

    def _interrupted(self) -> None:
        self.stats.add(interrupted=1)
        self.stop()

    @property
    def worker_failures(self) -> list[str]:
        """Workers that died (a bug): never silent."""
        return self.workers.failures

    # -- one worker ----------------------------------------------------------------------------

    def _worker(self, n: int) -> None:
        """Worker ``n``: take ToDo items until ToDo says the crawl is over."""
        fetcher = Fetcher(self.options, self.archive.exchange if self.archive else None)
        try:
            while (item := self.todo.get()) is not None:
                try:
                    self._visit(item, fetcher, n)
                except StateError as e:  # the state cannot record: stop, the journal keeps the rest
                    log.error("%s", e)
                    self.failure = e
                    self.stop()
                except RedisUnavailable as e:  # Redis lost: the items in flight wait there
                    self.failure = self.failure or e  # run() raises it: one message, at the end
                    self.stop()
                except Exception as e:  # one bad URL must never kill a worker
                    log.exception("worker %d failed on %s", n, item.url)
                    self.chains.end(item.url)
                    self.stats.add(errors=1, error_internal=1)
                    self._emit(Page(item.url, item.depth, item.referrer, item.url, worker=n,
                                    error=f"internal error: {type(e).__name__}: {e}"[:300],
                                    fetched_at=now()))
                finally:
                    self.todo.task_done()
        finally:
            fetcher.close()

    def _visit(self, item: Item, fetcher: Fetcher, n: int) -> None:
        """Admit, fetch and record one ToDo item (or send it back to ToDo for later)."""
        # A redirect target waiting in ToDo carries on the chain (and the record) that led to it.
        chain = self.chains.waiting_at(item.url)
        if chain is None and item.url in self._lastmod and self._sitemap_unchanged(item, n):
            return
        admission = self.politeness.admit(item.url, fetcher)
        if admission.verdict is Verdict.WAIT:  # not now: back in its turn, take another URL
            self.stats.add(politeness_waits=1)
            self.todo.put_back(item, admission.not_before)
            return
        if admission.verdict is Verdict.DENY:
            self._refuse(item, chain, admission.reason, {admission.kind: 1}, n)
            return
        response: Response | None = None
        try:  # the host slot admit() gave us is handed back whatever happens
            if not self._reserve_fetch():
                if chain is not None:
                    self._refuse(item, chain, "max_pages reached before redirect target", {}, n)
                return
            self.events.taken(n, item)
            if chain is None:
                # With a state, what was recorded last time: a conditional GET, what changed.
                chain = Chain(item, now(), self.state.prior(item.url))
            headers = chain.prior.request_headers() if chain.prior and not chain.urls else None
            response = fetcher.fetch(item.url, headers=headers)
            self.events.fetched(n, response)
        finally:
            self.politeness.done(item.url, host_pause(response, self.options.max_backoff))
        opts = self.options
        counts: dict[str, int] = {"requests": 1, "bytes": len(response.body)}
        error = response.error
        if is_retryable(response):
            if item.attempt < opts.retries:  # later, from ToDo: this worker goes on meanwhile
                wait = wait_before_retry(response, item.attempt, opts.retry_backoff,
                                         opts.max_backoff)
                counts["retries"] = 1
                self.stats.add(counts)
                self.events.retrying(n, item, opts.retries + 1, wait)
                self.todo.put(item._replace(attempt=item.attempt + 1),
                              not_before=time.monotonic() + wait)
                return
            error = failure_reason(response, item.attempt + 1)
        chain.urls.append(item.url)
        chain.elapsed_ms += response.elapsed_ms
        final_url = item.url
        if error is None and response.location is not None:
            final_url, error, queued = self._redirect(chain, item, response)
            if queued:  # the record waits for the end of the chain
                self.stats.add(counts, redirects_followed=1)
                return
        self.chains.end(item.url)
        if error:
            self.events.gave_up(n, chain.item.url, error)
        origin = chain.item
        page = Page(origin.url, origin.depth, origin.referrer, final_url, status=response.status,
                    headers=response.headers, body=response.body,
                    elapsed_ms=round(chain.elapsed_ms, 1), fetched_at=chain.fetched_at,
                    error=error, worker=n)
        self._record(page, counts, chain.prior)

    def _refuse(self, item: Item, chain: Chain | None, reason: str, counts: dict[str, int],
                n: int) -> None:
        """Record ``item`` (or the chain that led to it) as not fetched, for ``reason``."""
        self.chains.end(item.url)
        origin = chain.item if chain is not None else item
        page = Page(origin.url, origin.depth, origin.referrer, item.url, error=reason,
                    fetched_at=chain.fetched_at if chain is not None else now(), worker=n)
        self.events.refused(n, item.url, reason, next(iter(counts), ""))
        prior = chain.prior if chain is not None else self.state.prior(origin.url)
        policy = {"robots_disallowed", "host_full"} & counts.keys()  # a rule, not a failure
        self._record(page, counts, prior, failed=not policy)

    def _record(self, page: Page, counts: dict[str, int], prior: Prior | None,
                failed: bool = True) -> None:
        """Count the page, follow its links if it is HTML, and emit it."""
        counts["pages"] = 1
        if page.status is not None:
            counts[f"status_{page.status // 100}xx"] = 1
        self.state.note_change(page, prior, counts)  # with --state: new, changed, unchanged…
        if self.duplicates is not None:  # the same bytes as a page recorded before?
            page.duplicate_of = self.duplicates.check(page, prior)
            if page.duplicate_of is not None:
                counts["content_duplicates"] = 1
                self.events.duplicate_found(page.worker, page)
        if page.error and failed:
            counts["errors"] = 1
            counts["error_" + error_kind(page.error)] = 1
        new: list[Item] = []
        # A body cut short (size cap, slow drip, connection lost) still has links up to the cut.
        if page.status == 200 and page.body and is_html(page.content_type) \
                and page.change != UNCHANGED and page.duplicate_of is None:
            new = self._follow_links(page, counts)  # an unchanged page has no new links
        self.stats.add(counts)
        self._emit(page, new)

    def _redirect(self, chain: Chain, item: Item,
                  response: Response) -> tuple[str, str | None, bool]:
        """Offer ``response``'s redirect target to Visited like a link; if it was never seen it
        goes to ToDo and carries the chain on. Returns (final URL, error, whether the target was
        queued). A chain ends without an error at a target out of scope or already seen."""
        opts = self.options
        target, error = next_hop(chain, item.url, response, sort_query=opts.sort_query,
                                 max_length=opts.max_url_length)
        if error is not None:
            return target, error, False
        unwanted = self._unwanted(target)
        if unwanted is not None:
            self.stats.add({"redirects_" + unwanted: 1})
            self.events.redirected(item.url, target, f"{unwanted.upper()} → drop")
            return target, None, False
        if not self.visited.add(target):
            self.stats.add(redirects_to_visited=1)
            self.events.redirected(item.url, target, "VISITED? yes → drop")
            return target, None, False
        self.events.redirected(item.url, target,
                               f"VISITED? no → TODO (depth {chain.item.depth})")
        hop = Item(target, chain.item.depth, item.url)
        self.chains.carry(target, chain)  # before it is in ToDo, where a worker may take it
        self.state.hop(item.url, hop, chain.item.url)  # the hop replaces the URL just fetched
        self.todo.put(hop)
        return target, None, True

    def _follow_links(self, page: Page, counts: dict[str, int]) -> list[Item]:
        """Extract the page's links; the unseen, in-scope ones, as ToDo items (``_emit`` puts
        them in ToDo once the page is recorded)."""
        opts = self.options
        extracted = extract_links(page.body, page.final_url, page.content_type)
        counts["links_extracted"] = len(extracted.hrefs)
        candidates, rejected = self.resolver.resolve(extracted.hrefs, extracted.base, counts)
        page.links = list(candidates)
        depth = page.depth + 1
        decisions = LinkDecisions(
            depth, opts.max_depth is not None and depth > opts.max_depth, opts.max_depth,
            rejected=rejected, repeats=len(extracted.hrefs) - len(rejected) - len(page.links))
        if decisions.too_deep:
            counts["links_too_deep"] = len(page.links)
        else:
            counts["links_out_of_scope"] = 0
            host_full = self.politeness.host_full if opts.max_pages_per_host else None
            for url, unwanted in candidates.items():
                if unwanted is None and host_full is not None and host_full(url):
                    unwanted = "host_full"
                if unwanted is None:
                    decisions.in_scope.append(url)
                else:
                    counts["links_" + unwanted] = counts.get("links_" + unwanted, 0) + 1
                    decisions.unwanted[url] = unwanted
            if decisions.in_scope:  # Visited: test-and-insert, one atomic step per batch
                decisions.fresh = self._offer.add_many(decisions.in_scope)
            if not self._over_capacity_told and getattr(self.visited, "over_capacity", False):
                self._over_capacity_told = True
                warn_over_capacity(self.visited)
        fresh = [url for url, new in zip(decisions.in_scope, decisions.fresh, strict=True)
                 if new]
        counts["links_filtered"] = len(decisions.in_scope) - len(fresh)
        counts["links_new"] = page.new = len(fresh)
        # Before the links enter ToDo, so no TAKES line of the trace precedes its TODO line.
        self.events.links_decided(page, decisions)
        return [Item(url, depth, page.final_url) for url in fresh]

    def _emit(self, page: Page, new: list[Item] | None = None) -> None:
        """Keep the page, put its ``new`` links in ToDo, then report it.

        The keepers (saved copy, the state's commit) hear of the page *before* its links enter
        ToDo: with a state, a URL is in ToDo only once journaled (the resume argument in
        :mod:`minicrawl.state.store`).
        """
        new = new or []
        self.events.page_kept(page, new)
        self.todo.put_many(new)
        self.events.page_recorded(page)

    # -- limits --------------------------------------------------------------------------------

    def _unwanted(self, url: str) -> str | None:
        """Why the canonical ``url`` is not for this crawl (a stats counter suffix), or None:
        out of scope, a trap, or a host that had its share."""
        unwanted = self.resolver.out_of_bounds(url)
        if unwanted is None and self.politeness.host_full(url):
            return "host_full"
        return unwanted

    def _reserve_fetch(self) -> bool:
        """Count one fetch against ``max_pages`` (the whole crawl's, in a shared crawl); False
        (and ToDo closed) once the cap is hit."""
        cap = self.options.max_pages
        if cap is None:
            return True
        if self.shared is not None:
            count = self.shared.pages.take(cap)
        else:
            with self._fetch_lock:
                count = self._fetches + 1 if self._fetches < cap else 0
                self._fetches = max(self._fetches, count)
        if count in (0, cap):
            self.todo.close()  # the fetches in flight finish; no new one starts
        return count > 0


def _write_json(path: str, data: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
