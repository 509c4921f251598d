"""The crawl: seeds → ToDo → worker → fetch → links → Visited → ToDo.

:class:`Crawler` puts the seeds in ToDo (marking them in Visited), starts ``threads`` workers and
waits. Each worker loops: take an item from ToDo, fetch it, extract its links, canonicalize them,
drop those out of scope, offer the rest to Visited in one batch, and put the ones Visited had
never seen back in ToDo. The crawl is over when ToDo is empty and no worker is busy
(:meth:`minicrawl.frontier.ToDo.get` returns ``None``).
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

from minicrawl.fetch import Fetcher, Response, error_kind
from minicrawl.frontier import Item, ToDo
from minicrawl.links import extract_links, is_html
from minicrawl.options import Options
from minicrawl.politeness import LocalPacer, Politeness, Verdict
from minicrawl.recrawl import UNCHANGED, Prior, classify
from minicrawl.report import Recorder, require_plotting, write_report
from minicrawl.retry import failure_reason, host_pause, is_retryable, wait_before_retry
from minicrawl.savepages import PageSaver
from minicrawl.scope import Scope
from minicrawl.seeds import NoValidSeeds, read_seeds
from minicrawl.state import StateError, open_state
from minicrawl.stats import Stats
from minicrawl.trace import Tracer
from minicrawl.urls import BadURL, absolute, canonicalize, repeated_segments
from minicrawl.visited import Visited, describe, make_visited

log = logging.getLogger("minicrawl")

MAX_REDIRECTS = 10
LINK_CACHE_SIZE = 200_000  # (directory, href) → classification; ~50 MB at the most


@dataclass
class Page:
    """One fetched ToDo item: what the server said and what links it had."""

    url: str
    depth: int
    referrer: str | None
    final_url: str
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    links: list[str] = field(default_factory=list)  # canonical URLs found on the page
    new: int = 0  # how many of them entered ToDo
    elapsed_ms: float = 0.0
    fetched_at: str = ""
    error: str | None = None
    worker: int = 0
    change: str | None = None  # with --state: new, changed, unchanged or gone
    saved: str | None = None  # with --save-pages: the file holding the body

    @property
    def content_type(self) -> str | None:
        return self.headers.get("content-type")

    def record(self) -> dict[str, Any]:
        """The page as one JSON-ready output record."""
        return {
            "url": self.url, "final_url": self.final_url, "status": self.status,
            "depth": self.depth, "referrer": self.referrer, "content_type": self.content_type,
            "bytes": len(self.body), "links": len(self.links), "new": self.new,
            "elapsed_ms": self.elapsed_ms, "fetched_at": self.fetched_at, "error": self.error,
            "change": self.change, "saved": self.saved,
        }


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
        self.options = (options or Options()).replace(**settings)
        seed_args = [seeds] if isinstance(seeds, str) else list(seeds)
        self.seeds, self.seed_problems = read_seeds(seed_args)
        for problem in self.seed_problems:
            log.warning("%s", problem)
        if not self.seeds:
            raise NoValidSeeds("no valid seed URL" + (
                ": " + "; ".join(self.seed_problems) if self.seed_problems else ""))
        opts = self.options
        self.on_page = on_page
        # With --state, Visited and the ToDo journal come from (and go to) the state dir.
        self.state = open_state(opts, self.seeds)
        self.failure: StateError | None = None
        self.shared = None  # with --redis: ToDo, Visited and stats shared by many processes
        if opts.redis:
            from minicrawl.redis_crawl import open_shared_crawl

            self.shared = open_shared_crawl(opts, self.seeds)
        self.todo = self.shared.todo if self.shared else ToDo(opts.per_host, opts.delay)
        if visited_filter is not None:
            self.visited = visited_filter
        else:
            self.visited = (self.state.visited if self.state else
                            self.shared.visited if self.shared else make_visited(opts))
        self.saver = PageSaver(opts.save_pages) if opts.save_pages else None
        self.scope = Scope(self.seeds, opts.allow_domain, opts.include, opts.exclude)
        self.stats = self.shared.stats if self.shared else Stats()
        self._fetch_lock = threading.Lock()
        self._fetches = 0
        # robots.txt and per-host pace: kept by the host-aware ToDo, or through Redis if shared.
        self.politeness = Politeness(opts, self.stats, self.shared.host_gate if self.shared
                                     else LocalPacer(self.todo))
        # Redirect targets waiting in ToDo → the chain that led there (its record comes at the
        # end). Plain dict operations on distinct keys: atomic, no lock needed.
        self._chains: dict[str, _Chain] = {}
        # Resolved links by (base directory, href); dict reads and writes are atomic, and a
        # racing miss only computes the same answer twice.
        self._link_cache: dict[tuple[str, str], tuple[str | None, str | None]] = {}
        self._target_cache: dict[str, tuple[str | None, str | None]] = {}  # by absolute URL
        # Links this crawler has already offered to Visited. Visited never forgets, so its
        # answer for them is known ("seen") without hashing them again: >99 % of a page's
        # links on a real site. Bounded like the caches above. Off in a shared crawl, where a
        # page's whole link list is its replay token (see minicrawl.redis_conn.ReplayTokens) and a
        # page reclaimed from a killed process must offer the same list again.
        self._offered: set[str] | None = None if self.shared else set()
        self._over_capacity_told = False
        self._out_lock = threading.Lock()
        self._working = 0  # workers not yet returned; the last one sets _workers_done
        self._working_lock = threading.Lock()
        self._workers_done = threading.Event()
        self._out = None
        self._stopping = threading.Event()
        self.worker_failures: list[str] = []
        # Watching the crawl: None unless asked for, so the hot path pays one `if` per page.
        self.tracer: Tracer | None = None
        self.recorder: Recorder | None = None
        if opts.report:
            require_plotting()

    # -- the crawl ---------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        """Crawl until ToDo is empty and no worker is busy (or ``stop()``); return the stats."""
        opts = self.options
        if opts.out:
            self._out = _open_output(opts.out, resume=self.state is not None)
        if opts.trace:
            self.tracer = Tracer.open(opts.trace, on_broken=self.stop)
        if opts.report:
            self.recorder = Recorder(self).start()
        try:
            if self.state is not None:  # resume: what was journaled goes back into ToDo
                items, counts = self.state.start(recrawl=opts.recrawl)
                if self.tracer:
                    self.tracer.resumed([(item.url, item.depth) for item in items])
                self.todo.put_many(items)
                self.stats.add(counts)
            self._put_seeds()
            self._working = opts.threads
            self._workers_done.clear()
            for n in range(1, opts.threads + 1):
                threading.Thread(target=self._worker, args=(n,), name=f"worker-{n}",
                                 daemon=True).start()
            # The main thread waits on an Event, not on Thread.join: a Ctrl-C that interrupts
            # CPython 3.11's join can leave the thread marked as stopped while it still runs, and
            # the output would then be closed under a worker writing its last page.
            try:
                while not self._workers_done.wait(0.2):  # timed: Ctrl-C is seen at once
                    pass
            except KeyboardInterrupt:
                log.warning("interrupted: finishing the pages in flight")
                self.stats.add(interrupted=1)
                self.stop()
                grace = opts.timeout * 3 + 1
                if not self._workers_done.wait(grace):
                    log.error("%d workers still busy after %.0f s: the pages they hold are not "
                              "recorded", self._working, grace)
            self.stats.finished = time.monotonic()
        finally:
            with self._out_lock:  # a worker past its deadline finds None, not a closed file
                if self._out is not None:
                    self._out.close()
                    self._out = None
            if self.tracer is not None:
                self.tracer.done(self.stats["pages"], len(self.todo))
                self.tracer.close()
                self.tracer = None
            if self.recorder is not None:
                self.recorder.stop()
            if self.state is not None:
                self.state.close()
        stats = self.summary()
        if opts.stats:
            with open(opts.stats, "w", encoding="utf-8") as f:
                json.dump(stats, f, indent=2)
        if self.recorder is not None:
            write_report(opts.report, self.recorder, stats)
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

    # -- one worker ----------------------------------------------------------------------------

    def _put_seeds(self) -> None:
        new = [url for url, fresh in zip(self.seeds, self.visited.add_many(self.seeds),
                                         strict=True) if fresh]
        self._remember_offered(self.seeds)
        if self.tracer:
            self.tracer.seeds(new, [url for url in self.seeds if url not in new])
        items = [Item(url, 0, None) for url in new]
        if self.state is not None:
            self.state.journal(items)
        self.todo.put_many(items)
        self.stats.add(seeds=len(new))

    def _worker(self, n: int) -> None:
        fetcher = Fetcher(self.options)
        try:
            while (item := self.todo.get()) is not None:
                try:
                    self._visit(item, fetcher, n)
                except StateError as e:  # the state cannot record: stop, the journal keeps the rest
                    log.error("%s", e)
                    self.failure = e
                    self.stop()
                except Exception as e:  # one bad URL must never kill a worker
                    log.exception("worker %d failed on %s", n, item.url)
                    self._chains.pop(item.url, None)
                    self.stats.add(errors=1, error_internal=1)
                    self._emit(Page(item.url, item.depth, item.referrer, item.url, worker=n,
                                    error=f"internal error: {type(e).__name__}: {e}"[:300],
                                    fetched_at=_now()))
                finally:
                    self.todo.task_done()
        except BaseException as e:  # pragma: no cover - recorded so a dying worker is never silent
            self.worker_failures.append(f"worker {n}: {type(e).__name__}: {e}")
            raise
        finally:
            fetcher.close()
            with self._working_lock:
                self._working -= 1
                if self._working == 0:
                    self._workers_done.set()

    def _visit(self, item: Item, fetcher: Fetcher, n: int) -> None:
        # A redirect target waiting in ToDo carries on the chain (and the record) that led to it.
        chain = self._chains.get(item.url)
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
            if self.tracer:
                self.tracer.takes(n, item.url, item.depth)
            if chain is None:
                # With a state, what was recorded last time: a conditional GET, what changed.
                prior = self.state.prior(item.url) if self.state is not None else None
                chain = _Chain(item, _now(), prior)
            headers = chain.prior.request_headers() if chain.prior and not chain.urls else None
            response = self._fetch(fetcher, item.url, n, headers)
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
                if self.tracer:
                    self.tracer.retry(n, item.url, item.attempt + 1, opts.retries + 1, wait)
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
        self._chains.pop(item.url, None)
        if self.tracer and error:
            self.tracer.gives_up(n, chain.item.url, error)
        origin = chain.item
        page = Page(origin.url, origin.depth, origin.referrer, final_url, status=response.status,
                    headers=response.headers, body=response.body,
                    elapsed_ms=round(chain.elapsed_ms, 1), fetched_at=chain.fetched_at,
                    error=error, worker=n)
        self._record(page, counts, chain.prior)

    def _refuse(self, item: Item, chain: _Chain | None, reason: str, counts: dict[str, int],
                n: int) -> None:
        """Record ``item`` (or the chain that led to it) as not fetched, for ``reason``."""
        self._chains.pop(item.url, None)
        origin = chain.item if chain is not None else item
        page = Page(origin.url, origin.depth, origin.referrer, item.url, error=reason,
                    fetched_at=chain.fetched_at if chain is not None else _now(), worker=n)
        if self.tracer:  # robots.txt is a decision of the model, not a failure: its own line
            if "robots_disallowed" in counts:
                self.tracer.robots_drop(item.url, worker=n)
            else:
                self.tracer.gives_up(n, item.url, reason)
        prior = chain.prior if chain is not None else (
            self.state.prior(origin.url) if self.state is not None else None)
        policy = {"robots_disallowed", "host_full"} & counts.keys()  # a rule, not a failure
        self._record(page, counts, prior, failed=not policy)

    def _record(self, page: Page, counts: dict[str, int], prior: Prior | None,
                failed: bool = True) -> None:
        """Count the page, follow its links if it is HTML, and emit it."""
        counts["pages"] = 1
        if page.status is not None:
            counts[f"status_{page.status // 100}xx"] = 1
        if self.state is not None:
            page.change = classify(prior, page.status, page.body, page.final_url)
            counts["change_" + page.change] = 1
            if page.change == UNCHANGED and prior is not None:
                page.saved = prior.saved  # the copy saved then is still the page
                if page.status == 304:
                    counts["bytes_saved_304"] = prior.size
        if self.saver is not None and page.saved is None and page.status == 200 and not page.error:
            page.saved = self.saver.save(page.final_url, page.body)
        new: list[Item] = []
        if page.error and failed:
            counts["errors"] = 1
            counts["error_" + error_kind(page.error)] = 1
        # A body cut short (size cap, slow drip, connection lost) still has links up to the cut.
        if page.status == 200 and page.body and is_html(page.content_type) \
                and page.change != UNCHANGED:
            new = self._follow_links(page, counts)  # an unchanged page has no new links
        self.stats.add(counts)
        self._emit(page, new)

    def _redirect(self, chain: _Chain, item: Item,
                  response: Response) -> tuple[str, str | None, bool]:
        """Follow ``response``'s redirect if Visited has not seen its target: the target goes
        to ToDo like a link (so robots.txt, politeness and retries apply to it) and carries the
        chain on. Returns (final URL, error, whether the target was queued). A chain ends with
        an error on a loop, after ``MAX_REDIRECTS`` hops or at a bad Location; without one at
        a target out of scope or already seen (which is then not fetched again).
        """
        try:
            target = canonicalize(response.location or "", response.url,
                                  sort_query=self.options.sort_query,
                                  max_length=self.options.max_url_length)
        except BadURL as e:
            return item.url, f"bad redirect location ({e.reason})", False
        if target in chain.urls:
            return target, "redirect loop", False
        if len(chain.urls) > MAX_REDIRECTS:
            return target, f"more than {MAX_REDIRECTS} redirects", False
        unwanted = self._unwanted(target)
        if unwanted is not None:
            self.stats.add({"redirects_" + unwanted: 1})
            if self.tracer:
                self.tracer.redirect(item.url, target, f"{unwanted.upper()} → drop")
            return target, None, False
        if not self.visited.add(target):
            self.stats.add(redirects_to_visited=1)
            if self.tracer:
                self.tracer.redirect(item.url, target, "VISITED? yes → drop")
            return target, None, False
        if self.tracer:
            self.tracer.redirect(item.url, target,
                                 f"VISITED? no → TODO (depth {chain.item.depth})")
        hop = Item(target, chain.item.depth, item.url)
        self._chains[target] = chain  # before it is in ToDo, where a worker may take it at once
        if self.state is not None:  # in the journal the hop replaces the URL just fetched
            self.state.hop(item.url, hop, chain.item.url)
        self.todo.put(hop)
        return target, None, True

    def _fetch(self, fetcher: Fetcher, url: str, worker: int,
               headers: dict[str, str] | None = None) -> Response:
        """One request (one hop of a redirect chain)."""
        response = fetcher.fetch(url, headers=headers)
        if self.tracer:
            self.tracer.fetched(worker, response.url, response.status, len(response.body),
                                response.error)
        return response

    def _follow_links(self, page: Page, counts: dict[str, int]) -> list[Item]:
        """Extract the page's links; the unseen, in-scope ones, as ToDo items (``_emit`` puts
        them in ToDo once the page is recorded)."""
        opts = self.options
        extracted = extract_links(page.body, page.final_url, page.content_type)
        counts["links_extracted"] = len(extracted.hrefs)
        candidates: dict[str, str | None] = {}  # canonical link → why unwanted (None: wanted)
        rejected: list[tuple[str, str]] = []  # (href, why): only for the trace, rare anyway
        # Most hrefs are the same navigation links on every page: resolve each (directory, href)
        # once. Resolution depends only on the base's directory, except for "" and "?…". The
        # fragment never matters, so "#sec-3" and "x.html#top" share the entry of "" and "x.html".
        base = extracted.base
        directory = base.split("?", 1)[0].rsplit("/", 1)[0]
        cache = self._link_cache
        for href in extracted.hrefs:
            key = href.split("#", 1)[0] if "#" in href else href
            key = (base if not key or key[0] == "?" else directory, key)
            hit = cache.get(key)
            if hit is None:
                if len(cache) >= LINK_CACHE_SIZE:
                    cache.clear()  # crude but bounded; the hot links come back at once
                hit = cache[key] = self._classify_link(key[1], base)
            url, why = hit
            if url is None:  # not a URL we could ever fetch: why is BadURL's reason
                name = "links_not_http" if why == "not http(s)" else "links_malformed"
                counts[name] = counts.get(name, 0) + 1
                rejected.append((href, why or ""))
            else:
                candidates[url] = why
        page.links = list(candidates)
        depth = page.depth + 1
        too_deep = opts.max_depth is not None and depth > opts.max_depth
        in_scope: list[str] = []
        answers: list[bool] = []  # Visited's answer for each in-scope link: True = never seen
        dropped: dict[str, str] = {}  # link → why it was not offered to Visited (for the trace)
        if too_deep:
            counts["links_too_deep"] = len(page.links)
        else:
            counts["links_out_of_scope"] = 0
            host_full = self.politeness.host_full if opts.max_pages_per_host else None
            offered = self._offered if self._offered is not None else frozenset()
            ask: list[str] = []  # the in-scope links Visited must answer for
            for url, unwanted in candidates.items():
                if unwanted is None and host_full is not None and host_full(url):
                    unwanted = "host_full"
                if unwanted is None:
                    in_scope.append(url)
                    if url not in offered:
                        ask.append(url)
                else:
                    counts["links_" + unwanted] = counts.get("links_" + unwanted, 0) + 1
                    dropped[url] = unwanted
            answer = dict(zip(ask, self.visited.add_many(ask), strict=True)) if ask else {}
            self._remember_offered(ask)
            answers = [answer.get(url, False) for url in in_scope]
            if not self._over_capacity_told and getattr(self.visited, "over_capacity", False):
                self._tell_over_capacity()
        fresh = [url for url, new in zip(in_scope, answers, strict=True) if new]
        counts["links_filtered"] = len(in_scope) - len(fresh)
        counts["links_new"] = page.new = len(fresh)
        if self.tracer:  # before the links enter ToDo, so no TAKES line precedes its TODO line
            self.tracer.links(page.final_url, page.links, rejected, depth, too_deep=too_deep,
                              max_depth=opts.max_depth, in_scope=in_scope, fresh=answers,
                              duplicates=len(extracted.hrefs) - len(rejected) - len(page.links),
                              unwanted=dropped)
        return [Item(url, depth, page.final_url) for url in fresh]

    def _remember_offered(self, urls: list[str]) -> None:
        """Note URLs Visited has just answered for (see ``_offered``)."""
        if self._offered is not None and urls:
            if len(self._offered) + len(urls) > LINK_CACHE_SIZE:
                self._offered.clear()  # crude but bounded, like the link caches
            self._offered.update(urls[:LINK_CACHE_SIZE])

    def _unwanted(self, url: str) -> str | None:
        """Why the canonical ``url`` is not for this crawl (a stats counter suffix), or None:
        out of scope, a path repeating a segment (a trap), or a host that had its share."""
        unwanted = self._out_of_bounds(url)
        if unwanted is None and self.politeness.host_full(url):
            return "host_full"
        return unwanted

    def _out_of_bounds(self, url: str) -> str | None:
        """The part of :meth:`_unwanted` that never changes during a crawl (so it is cached)."""
        if not self.scope.allows(url):
            return "out_of_scope"
        limit = self.options.max_repeated_segments
        if limit > 0 and url.count("/") > limit + 2 and repeated_segments(url) > limit:
            return "trap"
        return None

    def _classify_link(self, href: str, base: str) -> tuple[str | None, str | None]:
        """(canonical URL, why it is unwanted or None), or (None, why it is no URL at all).

        Cached by the resolved absolute URL, so the same link written relative to different
        directories (``../api/x.html`` on every page of a site) is canonicalized once."""
        opts = self.options
        try:
            target = absolute(href, base, max_length=opts.max_url_length)
        except BadURL as e:
            return None, e.reason
        cache = self._target_cache
        hit = cache.get(target)
        if hit is None:
            try:
                url = canonicalize(target, sort_query=opts.sort_query,
                                   max_length=opts.max_url_length)
                hit = (url, self._out_of_bounds(url))
            except BadURL as e:
                hit = (None, e.reason)
            if len(cache) >= LINK_CACHE_SIZE:
                cache.clear()
            cache[target] = hit
        return hit

    def _tell_over_capacity(self) -> None:
        """Warn once that a fixed Bloom filter holds more URLs than it was sized for: from now
        on its false-positive rate (new pages taken for seen, never crawled) climbs."""
        self._over_capacity_told = True
        log.warning("Visited holds more than the %s URLs it was sized for: its false-positive "
                    "rate climbs (now ~%.2g); use a larger --expected-urls or --visited scalable",
                    f"{getattr(self.visited, 'capacity', 0):,}",
                    getattr(self.visited, "current_fp_rate", 0.0))

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

    def _emit(self, page: Page, new: list[Item] | None = None) -> None:
        """Record the page, put its ``new`` links in ToDo, then report it (output, on_page).

        With a state, the record and the links' journal rows are committed *before* the links
        enter ToDo: a URL is in ToDo only once journaled (the resume argument in state.py).
        """
        new = new or []
        if self.state is not None:
            self.state.commit(page, new)
        self.todo.put_many(new)
        if self.recorder is not None:
            self.recorder.page(page)
        if self._out is not None:
            line = json.dumps(page.record(), ensure_ascii=False)
            with self._out_lock:
                if self._out is not None:
                    self._out.write(line + "\n")
        if self.on_page is not None:
            try:
                self.on_page(page)
            except Exception:  # the caller's bug must not take the crawl down
                log.exception("on_page callback failed for %s", page.url)
                self.stats.add(callback_errors=1)


@dataclass
class _Chain:
    """A redirect chain in progress: the ToDo item that started it (its record names it), when,
    what a state knew of it, and the URLs fetched so far."""

    item: Item
    fetched_at: str
    prior: Prior | None = None
    urls: list[str] = field(default_factory=list)
    elapsed_ms: float = 0.0


def _open_output(path: str, resume: bool) -> TextIO:
    """The ``--out`` file: new, or with a state continued after the last complete line (a
    process killed mid-write leaves a partial one; the state database has that page anyway)."""
    if not resume:
        return open(path, "w", encoding="utf-8")  # noqa: SIM115 - the crawl closes it
    with open(path, "a+b") as f:
        f.seek(0, os.SEEK_END)
        end = f.tell()
        f.seek(max(0, end - 65536))
        tail = f.read()
        if tail and not tail.endswith(b"\n"):
            cut = tail.rfind(b"\n")
            if cut >= 0 or len(tail) == end:
                f.truncate(end - len(tail) + cut + 1)
            else:  # a partial line longer than the tail read: isolate it
                f.write(b"\n")
    return open(path, "a", encoding="utf-8")  # noqa: SIM115 - the crawl closes it


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
