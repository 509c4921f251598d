"""run.py's trip for one ToDo item: the core's :class:`~minicrawl.core.trip.Trip`, with
run.py's :class:`CrawlHooks` at its points.

Each of the crawl's worker threads runs the core's worker loop (take → trip → done,
:class:`minicrawl.core.worker.Worker`) on the core's trip (fetch → page → links → door) with a
:class:`CrawlHooks` of its own. The hooks add run.py's rules: before the
fetch, robots.txt, the host's turn (WAIT: back to ToDo in its turn; DENY: recorded, never
fetched) and the page cap, a conditional GET for a recrawl; after it, retries (back to ToDo,
later) and redirect chains (the target through the door like a link, the record waiting for the
chain's end), what changed and duplicate content (their links not followed); then, between
Visited and ToDo (``keep``), the page kept with its new links — ``page_kept``, so that with a
state a URL is in ToDo only once journaled.

The crawler (:mod:`minicrawl.crawler`) builds the :class:`Parts` its workers share; a trip
only uses them. Whatever watches or keeps the crawl hears about it at the points of
:mod:`minicrawl.events` (``crawl.events``); none of it is named here.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from minicrawl.core.door import Door, visited_key
from minicrawl.core.interfaces import Entry, Go, Item, Links, Response
from minicrawl.core.links import base_url
from minicrawl.core.urls import host_of
from minicrawl.errors import RedisUnavailable
from minicrawl.events import Events, LinkDecisions
from minicrawl.html.edges import EdgeWalk
from minicrawl.html.facts import record_facts, recorded_walk
from minicrawl.http.fetch import Fetcher, error_kind
from minicrawl.page import CrawledPage, Page, now
from minicrawl.records.edges import LinkEdge, link_edges
from minicrawl.records.facts import Facts, header_facts
from minicrawl.seams import Grant
from minicrawl.state.recrawl import UNCHANGED, Prior
from minicrawl.state.store import StateError
from minicrawl.visit.checks import (
    checks_of,
    head_failed,
    method_for,
    requisites_of,
    stylesheet_edges,
)
from minicrawl.visit.redirects import Chain, next_hop
from minicrawl.visit.retry import failure_reason, host_pause, is_retryable, wait_before_retry
from minicrawl.visit.robots import (
    CAPPED_CHAIN,
    CAPPED_CHAIN_KIND,
    NOT_REQUESTED,
    RobotsGate,
    Verdict,
)

if TYPE_CHECKING:
    from datetime import datetime

    from minicrawl.core.worker import Worker
    from minicrawl.options import Options
    from minicrawl.records.digests import Duplicates
    from minicrawl.resolve import LinkResolver
    from minicrawl.scope import Scope
    from minicrawl.seams import PageCap, PoliteFrontier, Redirects
    from minicrawl.state.nostate import NoState
    from minicrawl.state.store import CrawlState
    from minicrawl.stats import Stats

log = logging.getLogger("minicrawl")

# A request with no conditional headers, by method: one Go each (frozen), not one a page
_PLAIN = {"GET": Go(), "HEAD": Go(method="HEAD")}


@dataclass(frozen=True)
class Parts:
    """What the workers use, built by the crawler and shared by all of its workers."""

    options: Options
    todo: PoliteFrontier  # this process's, or the shared crawl's: the trip gives an
    # item back to it (to wait, to be retried); the workers take from it in turns, through
    # frontier/turns.py's TakingTurns around it
    door: Door  # the one way in for new URLs: admission, Visited, ToDo (over ``todo``)
    resolver: LinkResolver
    politeness: RobotsGate
    chains: Redirects  # this process's, or the shared crawl's
    state: CrawlState | NoState  # NoState without --state
    stats: Stats
    events: Events
    duplicates: Duplicates | None
    page_count: PageCap  # .take(cap): this process's fetches, or all's
    lastmod: dict[str, datetime]  # --sitemaps with --recrawl: URL → <lastmod>
    fail: Callable[[StateError | RedisUnavailable], None]  # the crawl cannot go on: stop it
    heads_failed: set[str]  # --check-links: URLs whose HEAD failed, to GET (visit/checks.py)
    scope: Scope  # the site: a check on it is a GET; --exclude keeps a URL from any request
    pages_full: threading.Event  # --check-links: --max-pages was reached; ToDo still gives the
    # checks (no page: not capped), and drops the pages it holds as workers take them


class CrawlHooks:
    """run.py's :class:`~minicrawl.core.interfaces.Hooks`, worker ``n``'s: what its trip adds to
    the core's at each point, and what a failure costs. One item at a time: what it learns of
    the item in hand (its counts, its redirect chain, what was decided of its links) is kept
    until ``keep``. Its ``fetcher`` is the trip's (robots.txt is fetched with it); the crawl's
    parts are shared. :meth:`close` it when its worker is done (:meth:`work` does)."""

    def __init__(self, crawl: Parts, n: int, fetcher: Fetcher) -> None:
        self.crawl, self.n, self.fetcher = crawl, n, fetcher
        self.robot = crawl.politeness.token  # our name to robots <meta>s and X-Robots-Tag
        self.counts: dict[str, int] = {}  # the item's stats, added at ``keep``
        self.decisions: LinkDecisions | None = None  # what became of its links
        self.chain: Chain | None = None
        self.holding: Item | None = None  # the item whose slot on its host is held (GO)
        self.method = "GET"  # how the item in hand is asked for (a check: maybe HEAD)
        self.on_site = True  # the item in hand is in the crawl's scope (a check may not be)

    def before(self, item: Item) -> Go | Page | None:
        """Robots.txt and the host's turn, the page cap; a conditional GET with a state."""
        self.counts, self.decisions, self.holding = {}, None, None
        # A redirect target waiting in ToDo carries on the chain (and the record) that led to it.
        self.chain = chain = self.crawl.chains.waiting_at(visited_key(item.url, item.check))
        if chain is None and not item.check and self.crawl.pages_full.is_set():
            # --max-pages reached, checks still to do: the page is dropped, as a stopped ToDo
            # would have kept it (counted as left in ToDo), before any wait for its host's turn
            self.crawl.stats.add(todo_pages_dropped=1)
            return None
        if chain is None and item.url in self.crawl.lastmod and not item.check \
                and (page := self._sitemap_unchanged(item)) is not None:
            return page
        answer = self.crawl.politeness.admit(item, self.fetcher)
        if answer.verdict is Verdict.WAIT:  # not now: back in its turn, take another URL
            self.crawl.stats.add(politeness_waits=1)
            self.crawl.todo.put_back(item, answer.not_before)
            return None
        if answer.verdict is Verdict.DENY:
            return self._refuse(item, chain, answer.reason, {answer.kind: 1})
        self.holding = item  # admit() said GO: the item's slot on the host, released after
        if not item.check and not self._reserve_fetch():  # (a check is no page: not capped)
            self.release()
            if chain is not None:
                # its target is not requested: a rule's refusal, counted as robots.txt's is
                return self._refuse(item, chain, CAPPED_CHAIN, {CAPPED_CHAIN_KIND: 1})
            self.crawl.stats.add(todo_pages_dropped=1)  # left in ToDo, as the summary says
            return None
        self.crawl.events.taken(self.n, item)
        self.method = "GET"
        if item.check:  # its status is all that is wanted: maybe a HEAD (visit/checks.py)
            self.on_site = self.crawl.scope.allows_host(host_of(item.url))
            self.method = method_for(item, self._kept_whole(), self.crawl.heads_failed)
        if chain is None:
            # With a state, what was recorded last time: a conditional GET, what changed (a
            # mirror's requisite too: a GET whose body is kept).
            prior = self.crawl.state.prior(item.url, item.check) \
                if self.method == "GET" else None
            self.chain = chain = Chain(item, now(), prior)
        headers = chain.prior.request_headers() if chain.prior and not chain.urls else None
        return Go(headers, self.method) if headers else _PLAIN[self.method]

    def failed(self, item: Item, error: Exception) -> Page | None:
        """The trip raised: the state or Redis lost (the crawl stops: None, run() raises it, one
        message at the end; the journal or Redis keeps the rest), else a bug: the page's error
        (one bad URL must never kill a worker)."""
        self.release()
        if isinstance(error, StateError | RedisUnavailable):
            self.crawl.fail(error)
            return None
        log.error("worker %d failed on %s", self.n, item.url, exc_info=error)
        self.crawl.chains.end(visited_key(item.url, item.check))
        self.crawl.stats.add(errors=1, error_internal=1, problems=1)
        why = f"internal error: {type(error).__name__}: {error}"[:300]
        page = Page(item.url, item.depth, item.referrer, item.url, worker=self.n, error=why,
                    fetched_at=now(), check=item.check)
        try:
            self.crawl.events.page_kept(page, [])
        except StateError as failure:  # nor can the state record it: stop, as above
            self.crawl.fail(failure)
            return None
        return page

    def close(self) -> None:
        """Close this worker's connections."""
        self.fetcher.close()

    def work(self, worker: Worker) -> None:
        """Worker ``n``'s thread: ``worker``'s loop (the core's), then its connections closed."""
        try:
            worker.run()
        finally:
            self.close()

    def release(self, pause: float = 0.0, response: Response | None = None) -> None:
        """Give back the host's slot the item in hand holds, if it does (``response``: what
        the host answered, or how it could not be reached)."""
        if self.holding is not None:
            item, self.holding = self.holding, None
            self.crawl.politeness.done(item, pause, response)

    def after(self, item: Item, response: Response) -> Page | None:
        """The answer: a retry (back to ToDo, later), a redirect chain carried on (its target
        through the door), or the page of the chain's end, noted (what changed, duplicates)."""
        self.crawl.events.fetched(self.n, response)
        self.release(host_pause(response, self.crawl.options.max_backoff), response)
        opts, chain = self.crawl.options, self.chain
        assert chain is not None  # before() said Go
        counts = self.counts = {"requests": 1, "bytes": len(response.body)}
        error = response.error
        if item.check and head_failed(self.method, response):  # a GET, later, in its turn
            self.crawl.heads_failed.add(item.url)  # (method_for: never a HEAD of it again)
            self.crawl.stats.add(counts, check_heads_failed=1)
            self.crawl.door.back([item])  # (it passed the door: Visited is not asked again)
            return None
        if is_retryable(response):
            # Later, from ToDo: this worker goes on meanwhile. Back through the door (it passed it
            # once: not asked again), its wait in the item: run.py's ToDo holds it until then.
            if item.attempt < opts.retries:
                wait = wait_before_retry(response, item.attempt, opts.retry_backoff,
                                         opts.max_backoff)
                counts["retries"] = 1
                self.crawl.stats.add(counts)
                self.crawl.events.retrying(self.n, item, opts.retries + 1, wait)
                self.crawl.door.back([replace(item, attempt=item.attempt + 1,
                                              not_before=time.monotonic() + wait)])
                return None
            error = failure_reason(response, item.attempt + 1)
        chain.urls.append(item.url)
        chain.elapsed_ms += response.elapsed * 1000
        final_url = item.url
        if error is None and response.location is not None:
            chain.redirects.append((item.url, response.status))
            final_url, error, queued = self._redirect(chain, item, response)
            if queued:  # the record waits for the end of the chain
                self.crawl.stats.add(counts, redirects_followed=1)
                return None
        self.crawl.chains.end(visited_key(item.url, item.check))
        if error:
            self.crawl.events.gave_up(self.n, chain.item.url, error)
        origin = chain.item
        # A check off the site wanted its status: a GET's body (where HEAD failed) is not kept
        body = b"" if item.check and not self._kept_whole() else response.body
        page = CrawledPage(origin.url, origin.depth, origin.referrer, final_url,
                           status=response.status, headers=response.headers,
                           body=body, elapsed_ms=round(chain.elapsed_ms, 1),
                           fetched_at=chain.fetched_at, error=error, worker=self.n,
                           check=item.check, facts=self._header_facts(response),
                           redirects=chain.redirects, requested=chain.urls)
        if item.check and self._kept_whole() \
                and (edges := stylesheet_edges(page, self.crawl.resolver)):
            page.edges = edges  # what a stylesheet of the site loads: checked, against it
            page.checks = (checks_of(edges, (), False, self.crawl.scope.excludes)
                           if self.crawl.options.check_links else
                           requisites_of(edges, self._mirrored))
        return self._noted(page, chain.prior)

    def follows(self, page: Page) -> bool:
        """A page its state finds unchanged, or a duplicate of one recorded, gives no links.
        The walk of a page that gives them is asked for its facts (and when links are recorded,
        ``--links`` or ``--check-links``, its edges; with ``--check-links`` its anchors too)."""
        if page.change == UNCHANGED or page.duplicate_of is not None or page.check:
            return False  # (a URL checked is never crawled)
        opts = self.crawl.options
        # (this thread's next walk: the page's, in the trip's links_of)
        record_facts(edges=opts.walks_edges, anchors=opts.check_links)
        return True

    def resolve(self, page: Page, links: Links) -> list[str]:
        """The page's links (the core's extractor), less those it says not to follow, as
        canonical URLs for the door; what was decided of the rest so far is kept."""
        opts, counts = self.crawl.options, self.counts
        followed = links.followed(opts.ignore_nofollow)
        base = base_url(page.final_url, links)
        candidates, rejected = self.crawl.resolver.resolve(followed, base, counts,
                                                           links.encoding)
        walked = recorded_walk()
        if walked is not None and walked.reader is not None \
                and isinstance(page, CrawledPage):  # what the page says of itself
            found = walked.reader.facts()
            canonical = None
            if found.canonical is not None:
                canonical = self.crawl.resolver.judge([found.canonical], base,
                                                      links.encoding)[0][0] or found.canonical
            page.facts.read(found, canonical)
        edges: list[LinkEdge] | None = None
        if opts.walks_edges and isinstance(walked, EdgeWalk):  # every link, resolved
            judged = self.crawl.resolver.judge([edge.href for edge in walked.edges], base,
                                               links.encoding)  # every link, resolved
            edges = link_edges(page.final_url, walked.edges, judged, links.nofollow)
            if isinstance(page, CrawledPage):  # (every page whose links are read: after())
                page.edges, page.anchors = edges, walked.anchors()  # carried to its keepers
        counts["links_extracted"] = len(links.hrefs)
        nofollow = []
        if len(followed) < len(links.hrefs):  # the page says not to follow some
            kept = set(followed)
            nofollow = [href for href in links.hrefs if href not in kept]
            counts["links_nofollow"] = len(nofollow)
        depth = page.depth + 1
        too_deep = opts.max_depth is not None and depth > opts.max_depth
        if opts.check_links and edges is not None:
            page.checks = checks_of(edges, [u for u, why in candidates.items() if not why],
                                    too_deep, self.crawl.scope.excludes)
        elif opts.mirror and edges is not None:  # what the page needs, to save it
            page.checks = requisites_of(edges, self._mirrored)
        if opts.mirror:  # and what its own CSS loads (a style attribute, a <style>)
            # (the mirror's modules and tinycss2: imported by a crawl that mirrors, issue 49)
            from minicrawl.mirror.rewrite import css_urls_in_html

            inline = css_urls_in_html(page.body, base)
            listed = set(page.checks)
            page.checks += [url for url in dict.fromkeys(inline)
                            if url not in listed and self._mirrored(url)]
        self.decisions = LinkDecisions(
            depth, too_deep, opts.max_depth,
            rejected=rejected, repeats=len(followed) - len(rejected) - len(candidates),
            nofollow=nofollow)
        return list(candidates)

    def keep(self, page: Page, entry: Entry) -> None:
        """Between Visited and ToDo: count the links' fates, keep the page, journal the new
        links with it (the state's commit), so a URL is in ToDo only once journaled. Its edges
        and anchors are the page's own (the state reads them there at ``page_kept``); they are
        told too, to those that hear them (the links' join without a state)."""
        if self.decisions is not None:
            self._decided(page, self.decisions, entry, self.counts)
        if isinstance(page, CrawledPage):
            if page.edges is not None:
                self.crawl.events.page_edges(page, page.edges)
            if page.anchors is not None:
                self.crawl.events.page_anchors(page, page.anchors)
        self.crawl.stats.add(self.counts)
        self.crawl.events.page_kept(page, entry.new)

    def _kept_whole(self) -> bool:
        """The check in hand is asked with a GET and its body kept: on the site (a stylesheet's
        ``url()``s are read, a page's ids answer its fragments), or a requisite of a mirror
        from any host if ``--mirror-external-requisites``."""
        opts = self.crawl.options
        return self.on_site or (opts.mirror is not None and opts.mirror_external_requisites)

    def _mirrored(self, url: str) -> bool:
        """``--mirror`` fetches and saves the requisite ``url``: from a host in scope (any, with
        ``--mirror-external-requisites``), unless ``--exclude`` keeps it out."""
        scope = self.crawl.scope
        return not scope.excludes(url) and (self.crawl.options.mirror_external_requisites
                                            or scope.allows_host(host_of(url)))

    def _noted(self, page: Page, prior: Prior | None, failed: bool = True,
               requested: bool = True) -> Page:
        """Count the page (``requested``: a URL never asked for, refused before its request,
        is no page), what changed since ``prior`` (with a state), whether it duplicates one
        recorded, its error (``failed``: not a rule's refusal); a 4xx or 5xx answer or an
        error is a problem (each page once). The page."""
        counts = self.counts
        if requested:
            counts["checked" if page.check else "pages"] = 1
        if page.check and page.status is not None and 200 <= page.status < 300:
            failed = False  # its status is all a check asks: a body cut short is no fault
        if page.status is not None:
            counts[f"status_{page.status // 100}xx"] = 1
        if (page.error and failed) or (page.status or 0) >= 400:
            counts["problems"] = 1
        self.crawl.state.note_change(page, prior, counts)  # with --state: new, changed, unchanged…
        if self.crawl.duplicates is not None and not page.check:  # the same bytes as a page
            # recorded before? (a check claims none: its links are never followed)
            page.duplicate_of = self.crawl.duplicates.check(page, prior)
            if page.duplicate_of is not None:
                counts["content_duplicates"] = 1
                self.crawl.events.duplicate_found(page.worker, page)
        if page.error and failed:
            counts["errors"] = 1
            counts["error_" + error_kind(page.error)] = 1
        return page

    def _refuse(self, item: Item, chain: Chain | None, reason: str,
                counts: dict[str, int]) -> Page:
        """Record ``item`` (or the chain that led to it) as not fetched, for ``reason``."""
        self.crawl.chains.end(visited_key(item.url, item.check))
        origin = chain.item if chain is not None else item
        page = CrawledPage(origin.url, origin.depth, origin.referrer, item.url, error=reason,
                           fetched_at=chain.fetched_at if chain is not None else now(),
                           worker=self.n, check=item.check,
                           redirects=chain.redirects if chain else [],
                           requested=chain.urls if chain else [])
        self.crawl.events.refused(self.n, item.url, reason, next(iter(counts), ""))
        prior = chain.prior if chain is not None else self.crawl.state.prior(origin.url,
                                                                            origin.check)
        self.counts = counts
        # (a chain refused at a redirect's target was requested: its record is a page)
        return self._noted(page, prior, failed=reason not in NOT_REQUESTED,
                           requested=chain is not None and bool(chain.urls))

    def _redirect(self, chain: Chain, item: Item,
                  response: Response) -> tuple[str, str | None, bool]:
        """Offer ``response``'s redirect target to Visited like a link; if it was never seen it
        goes to ToDo and carries the chain on. Returns (final URL, error, whether the target was
        queued). A chain ends without an error at a target out of scope or already seen."""
        opts = self.crawl.options
        target, error = next_hop(chain, item.url, response, sort_query=opts.sort_query,
                                 max_length=opts.max_url_length,
                                 cookies=not opts.no_cookies)
        if error is not None:
            return target, error, False
        hop = Item(target, chain.item.depth, item.url, check=item.check)

        def carry(entry: Entry) -> None:
            """The chain goes on at the target, before it is in ToDo (a worker may take it)."""
            if entry.new:
                self.crawl.events.redirected(item.url, target,
                                             f"VISITED? no → TODO (depth {hop.depth})")
                self.crawl.chains.carry(visited_key(target, item.check), chain)
                self.crawl.state.hop(item.url, hop, chain.item.url)  # replaces the URL fetched

        if target in chain.urls:  # back into its own chain (a cookie wall): that page again,
            carry(Entry([hop]))  # which passed the door already
            self.crawl.door.back([hop])
            return target, None, True
        if item.check and self.crawl.scope.excludes(target):  # never requested: the end
            self.crawl.stats.add(redirects_excluded=1)
            self.crawl.events.redirected(item.url, target, "EXCLUDED → drop")
            return target, None, False
        if item.check:  # a check's target is checked too (never crawled)
            entry = self.crawl.door.enter([], hop.depth, item.url, keep=carry, checks=[target])
        else:
            entry = self.crawl.door.enter([target], hop.depth, item.url, keep=carry)
        if why := entry.refused.get(target):
            self.crawl.stats.add({"redirects_" + why: 1})
            self.crawl.events.redirected(item.url, target, f"{why.upper()} → drop")
            return target, None, False
        if not entry.new:
            self.crawl.stats.add(redirects_to_visited=1)
            self.crawl.events.redirected(item.url, target, "VISITED? yes → drop")
            return target, None, False
        return target, None, True

    def _header_facts(self, response: Response) -> Facts:
        """What an answer's headers say of its page: a canonical link (resolved against the
        URL answered), a language."""
        link, language = header_facts(response.headers)
        canonical = None
        if link is not None:
            canonical = self.crawl.resolver.judge([link], response.url)[0][0] or link
        return Facts(canonical=canonical, lang=language)

    def _decided(self, page: Page, decisions: LinkDecisions, entry: Entry,
                 counts: dict[str, int]) -> None:
        """What the door did with each link, counted and told (before the links enter ToDo, so
        no TAKES line of the trace precedes its TODO line)."""
        if not decisions.too_deep:
            counts["links_out_of_scope"] = 0
        # The door refused only links of the page, in its order, and most pages have few
        # refused: the links are walked once, the refused (if any) again, not each link twice
        refused = entry.refused
        decisions.in_scope = [url for url in page.links if url not in refused] if refused \
            else list(page.links)
        for url, why in refused.items():
            counts["links_" + why] = counts.get("links_" + why, 0) + 1
            if not decisions.too_deep:
                decisions.unwanted[url] = why
        new = [item for item in entry.new if not item.check]
        decisions.new = [item.url for item in new]
        counts["links_filtered"] = len(decisions.in_scope) - len(new)
        counts["links_new"] = len(new)
        if checks := len(entry.new) - len(new):
            counts["checks_new"] = checks
        self.crawl.events.links_decided(page, decisions)

    # -- limits --------------------------------------------------------------------------------

    def _reserve_fetch(self) -> bool:
        """Count one fetch against ``max_pages`` (the whole crawl's, in a shared crawl); False
        (and ToDo closed) once the cap is hit."""
        cap = self.crawl.options.max_pages
        if cap is None:
            return True
        grant = self.crawl.page_count.take(cap)
        opts = self.crawl.options
        if grant is not Grant.GO and (opts.check_links or opts.mirror is not None):
            self.crawl.pages_full.set()  # the checks found so far (a mirror's requisites: what
            # its pages need to be shown) are still asked (before())
        elif grant is not Grant.GO:
            self.crawl.todo.stop()  # the fetches in flight finish; no new one starts
        return grant is not Grant.NONE

    def _sitemap_unchanged(self, item: Item) -> Page | None:
        """With --recrawl: record ``item`` unchanged, without a request, if its sitemap
        <lastmod> is not newer than its recorded fetch (its page when done so)."""
        from minicrawl.sitemaps.reader import unchanged_page  # (only with --sitemaps)

        prior = self.crawl.state.prior(item.url)
        page = unchanged_page(item, prior, self.crawl.lastmod.get(item.url), self.n)
        if page is None:
            return None
        self.crawl.events.lastmod_unchanged(self.n, item.url)
        self.counts = {"sitemap_unchanged": 1}
        return self._noted(page, prior)

