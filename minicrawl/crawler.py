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
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from minicrawl.fetch import Fetcher, Response, error_kind
from minicrawl.frontier import Item, ToDo
from minicrawl.links import extract_links, is_html
from minicrawl.options import Options
from minicrawl.report import Recorder, require_plotting, write_report
from minicrawl.scope import Scope
from minicrawl.seeds import NoValidSeeds, read_seeds
from minicrawl.stats import Stats
from minicrawl.trace import Tracer
from minicrawl.urls import BadURL, canonicalize
from minicrawl.visited import Visited, describe, make_visited

log = logging.getLogger("minicrawl")

MAX_REDIRECTS = 10


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
        self.shared = None  # with --redis: ToDo, Visited and stats shared by many processes
        if opts.redis:
            from minicrawl.redis_crawl import open_shared_crawl

            self.shared = open_shared_crawl(opts, self.seeds)
        self.todo = self.shared.todo if self.shared else ToDo()
        if visited_filter is not None:
            self.visited = visited_filter
        else:
            self.visited = self.shared.visited if self.shared else make_visited(opts)
        self.scope = Scope(self.seeds, opts.allow_domain, opts.include, opts.exclude)
        self.stats = self.shared.stats if self.shared else Stats()
        self._fetch_lock = threading.Lock()
        self._fetches = 0
        self._out_lock = threading.Lock()
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
            self._out = open(opts.out, "w", encoding="utf-8")  # noqa: SIM115 - closed below
        if opts.trace:
            self.tracer = Tracer.open(opts.trace)
        if opts.report:
            self.recorder = Recorder(self).start()
        try:
            self._put_seeds()
            workers = [threading.Thread(target=self._worker, args=(n,), name=f"worker-{n}",
                                        daemon=True) for n in range(1, opts.threads + 1)]
            for w in workers:
                w.start()
            try:
                for w in workers:
                    while w.is_alive():
                        w.join(0.2)  # a timed join keeps the main thread able to take Ctrl-C
            except KeyboardInterrupt:
                log.warning("interrupted: finishing the pages in flight")
                self.stats.add(interrupted=1)
                self.stop()
                for w in workers:
                    w.join(opts.timeout * 3 + 1)
            self.stats.finished = time.monotonic()
        finally:
            if self._out is not None:
                self._out.close()
                self._out = None
            if self.tracer is not None:
                self.tracer.done(self.stats["pages"], len(self.todo))
                self.tracer.close()
                self.tracer = None
            if self.recorder is not None:
                self.recorder.stop()
        stats = self.summary()
        if opts.stats:
            with open(opts.stats, "w", encoding="utf-8") as f:
                json.dump(stats, f, indent=2)
        if self.recorder is not None:
            write_report(opts.report, self.recorder, stats)
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
        if self.tracer:
            self.tracer.seeds(new, [url for url in self.seeds if url not in new])
        self.todo.put_many([Item(url, 0, None) for url in new])
        self.stats.add(seeds=len(new))

    def _worker(self, n: int) -> None:
        fetcher = Fetcher(self.options)
        try:
            while (item := self.todo.get()) is not None:
                try:
                    self._visit(item, fetcher, n)
                except Exception as e:  # one bad URL must never kill a worker
                    log.exception("worker %d failed on %s", n, item.url)
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

    def _visit(self, item: Item, fetcher: Fetcher, n: int) -> None:
        if not self._reserve_fetch():
            return
        if self.tracer:
            self.tracer.takes(n, item.url, item.depth)
        fetched_at = _now()
        response, final_url, error = self._fetch_following_redirects(item.url, fetcher, n)
        if self.tracer and error:
            self.tracer.gives_up(n, item.url, error)
        page = Page(item.url, item.depth, item.referrer, final_url, status=response.status,
                    headers=response.headers, body=response.body,
                    elapsed_ms=response.elapsed_ms, fetched_at=fetched_at,
                    error=error or response.error, worker=n)
        counts: dict[str, int] = {"pages": 1, "bytes": len(response.body)}
        if page.status is not None:
            counts[f"status_{page.status // 100}xx"] = 1
        if page.error:
            counts["errors"] = 1
            counts["error_" + error_kind(page.error)] = 1
        elif page.status == 200 and is_html(page.content_type):
            self._follow_links(page, counts)
        self.stats.add(counts)
        self._emit(page)

    def _fetch_following_redirects(self, url: str, fetcher: Fetcher,
                                   worker: int = 0) -> tuple[Response, str, str | None]:
        """Fetch ``url``; follow redirects whose targets Visited has not seen.

        A redirect target is offered to Visited like any link, so a page reached both by a
        redirect and by a link is fetched once. Returns the last response, the final URL and an
        error (None when the chain ended normally, also when it ended at a page already seen).
        """
        chain = [url]
        response = self._fetch(fetcher, url, worker)
        while (location := response.location) is not None:
            try:
                target = canonicalize(location, response.url,
                                      sort_query=self.options.sort_query)
            except BadURL as e:
                return response, chain[-1], f"bad redirect location ({e.reason})"
            if target in chain:
                return response, target, "redirect loop"
            if len(chain) > MAX_REDIRECTS:
                return response, target, f"more than {MAX_REDIRECTS} redirects"
            if not self.scope.allows(target):
                self.stats.add(redirects_out_of_scope=1)
                if self.tracer:
                    self.tracer.redirect(chain[-1], target, "OUT OF SCOPE → drop")
                return response, target, None
            if not self.visited.add(target):
                self.stats.add(redirects_to_visited=1)
                if self.tracer:
                    self.tracer.redirect(chain[-1], target, "VISITED? yes → drop")
                return response, target, None
            if not self._reserve_fetch():
                return response, target, "max_pages reached before redirect target"
            if self.tracer:
                self.tracer.redirect(chain[-1], target, "VISITED? no → fetch it now")
            chain.append(target)
            response = self._fetch(fetcher, target, worker)
        return response, chain[-1], None

    def _fetch(self, fetcher: Fetcher, url: str, worker: int) -> Response:
        """One request (one hop of a redirect chain)."""
        response = fetcher.fetch(url)
        if self.tracer:
            self.tracer.fetched(worker, response.url, response.status, len(response.body),
                                response.error)
        return response

    def _follow_links(self, page: Page, counts: dict[str, int]) -> None:
        """Extract the page's links and put the unseen, in-scope ones in ToDo."""
        opts = self.options
        extracted = extract_links(page.body, page.final_url, page.content_type)
        counts["links_extracted"] = len(extracted.hrefs)
        candidates: dict[str, None] = {}
        rejected: list[tuple[str, str]] = []  # (href, why): only for the trace, rare anyway
        for href in extracted.hrefs:
            try:
                url = canonicalize(href, extracted.base, sort_query=opts.sort_query)
            except BadURL as e:
                key = "links_not_http" if e.reason == "not http(s)" else "links_malformed"
                counts[key] = counts.get(key, 0) + 1
                rejected.append((href, e.reason))
                continue
            candidates[url] = None
        page.links = list(candidates)
        depth = page.depth + 1
        too_deep = opts.max_depth is not None and depth > opts.max_depth
        in_scope: list[str] = []
        answers: list[bool] = []  # Visited's answer for each in-scope link: True = never seen
        if too_deep:
            counts["links_too_deep"] = len(page.links)
        else:
            in_scope = [url for url in page.links if self.scope.allows(url)]
            counts["links_out_of_scope"] = len(page.links) - len(in_scope)
            answers = self.visited.add_many(in_scope)
        fresh = [url for url, new in zip(in_scope, answers, strict=True) if new]
        counts["links_filtered"] = len(in_scope) - len(fresh)
        counts["links_new"] = page.new = len(fresh)
        if self.tracer:  # before the links enter ToDo, so no TAKES line precedes its TODO line
            self.tracer.links(page.final_url, page.links, rejected, depth, too_deep=too_deep,
                              max_depth=opts.max_depth, in_scope=in_scope, fresh=answers,
                              duplicates=len(extracted.hrefs) - len(rejected) - len(page.links))
        self.todo.put_many([Item(url, depth, page.final_url) for url in fresh])

    def _reserve_fetch(self) -> bool:
        """Count one fetch against ``max_pages``; False (and ToDo closed) once the cap is hit."""
        cap = self.options.max_pages
        if cap is None:
            return True
        with self._fetch_lock:
            if self._fetches >= cap:
                return False
            self._fetches += 1
            if self._fetches == cap:
                self.todo.close()  # the fetches in flight finish; no new one starts
            return True

    def _emit(self, page: Page) -> None:
        if self.recorder is not None:
            self.recorder.page(page)
        if self._out is not None:
            line = json.dumps(page.record(), ensure_ascii=False)
            with self._out_lock:
                self._out.write(line + "\n")
        if self.on_page is not None:
            try:
                self.on_page(page)
            except Exception:  # the caller's bug must not take the crawl down
                log.exception("on_page callback failed for %s", page.url)
                self.stats.add(callback_errors=1)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
