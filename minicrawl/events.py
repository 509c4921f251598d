"""The points where the crawl tells others what it did: what watches it and what keeps it.

The crawl's worker loop (the core's, with run.py's trip: :mod:`minicrawl.visit.hooks`) does the
model's work — take, admit, fetch, extract, Visited, ToDo — and at each step that someone may
care about it calls one *point* on ``crawler.events``. Whatever watches or keeps the crawl is
a :class:`CrawlObserver` that overrides the points it needs; the loop knows none of them by name:

=====================  ====================================================================
point                  who hears it (today)
=====================  ====================================================================
``crawl_started``      the report's sampler starts, the WARC writer starts
``resumed``            trace (``--state``: the journal back in ToDo)
``seeds_queued``       trace
``taken``              trace (a worker took a ToDo item)
``fetched``            trace (one request answered)
``retrying``           trace (back to ToDo, later)
``redirected``         trace (a redirect target, and what Visited said); the links' join (a
                       hop); the report (its redirect chains)
``refused``            trace (robots.txt, a host cap: not fetched); the links' join
``gave_up``            trace (a redirect chain that ended in an error)
``links_decided``      trace (every link of a page, and its fate)
``page_edges``         the links' join: the ``--links`` file, ``--check-links`` (every link
                       of a page as written: its line, text, element, kind, and the URL it
                       leads to; the page carries them too, ``CrawledPage.edges``: the
                       state reads them there at ``page_kept``)
``page_anchors``       ``--check-links``: the links' join (the ids and ``<a name>``s of a
                       page: what a link's ``#fragment`` may name; ``CrawledPage.anchors``)
``duplicate_found``    trace (a page's body is one recorded before: ``page.duplicate_of``)
``sitemap_read``       trace (``--sitemaps``: one sitemap file read; its record follows)
``sitemap_queued``     trace (the sitemaps' URLs Visited had not seen, into ToDo)
``lastmod_unchanged``  trace (``--recrawl``: a sitemap ``<lastmod>`` spared the request)
``page_kept``          page saver, then the state's commit — *before* the page's new links
                       enter ToDo (the resume argument in :mod:`minicrawl.state.store`) —
                       then the WARC archive (a duplicate is archived as a revisit)
``on_page``            the ``--out`` file (with ``--state``: the state's writer writes it,
                       after the commit at ``page_kept``), the report, the summary's first
                       problems, the ``on_page`` callback, the ``links_in`` count: the
                       core's ``Observer`` point, told by the core's worker loop once the
                       page's links are in ToDo (:class:`Events` is the core ``Observer`` it
                       tells)
``crawl_finished``     each closes its files; the links' join makes its one pass (the
                       ``--links`` file, the broken links), then the report is drawn; last,
                       the ``--out`` file is written again with its ``links_in`` (where true)
=====================  ====================================================================

A point nobody overrides costs one call of a no-op, so a crawl that watches nothing pays next
to nothing. Observers hear a point in the order they were given.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minicrawl.core.interfaces import Item, Response
    from minicrawl.page import Page
    from minicrawl.records.edges import LinkEdge
    from minicrawl.stats import Stats, StatsSnapshot

log = logging.getLogger("minicrawl")


@dataclass
class LinkDecisions:
    """What the crawl decided for each link of one page (for ``links_decided``).

    ``page.links`` are the page's distinct canonical links; ``rejected`` the hrefs that are no
    URL to crawl, with why; ``in_scope`` the links offered to Visited and ``new`` those it had
    never seen (into ToDo), in order; ``unwanted`` why each other link was dropped;
    ``nofollow`` the hrefs not followed because the page says so (rel=nofollow, a robots
    ``<meta>``, X-Robots-Tag).
    """

    depth: int
    too_deep: bool
    max_depth: int | None
    in_scope: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)
    unwanted: dict[str, str] = field(default_factory=dict)
    repeats: int = 0  # hrefs that repeat a link already on the page
    nofollow: list[str] = field(default_factory=list)


class CrawlObserver:
    """Hears the crawl at its points; every point does nothing unless overridden."""

    critical = False  # True: its failure at page_kept fails the page and stops the crawl

    def crawl_started(self) -> None:
        """Once, first thing in ``run``: before the state's journal is read and seeds queued."""

    def resumed(self, items: Sequence[Item]) -> None:
        """With ``--state``: the journal's ``items`` (or a recrawl's pages), next into ToDo."""

    def seeds_queued(self, fresh: Sequence[str], seen: Sequence[str]) -> None:
        """The seeds new to Visited (``fresh``: into ToDo at depth 0) and those it had."""

    def taken(self, worker: int, item: Item) -> None:
        """Worker ``worker`` took ``item``, admitted and counted: its request starts now."""

    def fetched(self, worker: int, response: Response) -> None:
        """Worker ``worker``'s request came back: answered, or failed (``response.error``)."""

    def retrying(self, worker: int, item: Item, attempts: int, wait: float) -> None:
        """``item`` failed, worth a retry: back in ToDo in ``wait`` s, ``attempts`` at most."""

    def redirected(self, source: str, target: str, decision: str) -> None:
        """``source`` redirects to ``target``; ``decision`` (a trace line): dropped, or ToDo."""

    def refused(self, worker: int, url: str, reason: str, kind: str) -> None:
        """``url`` is not fetched, for ``reason``; ``kind``: its stats counter, or ""."""

    def gave_up(self, worker: int, url: str, reason: str) -> None:
        """``url``'s fetch (or redirect chain) ended in the error ``reason``: recorded with it."""

    def links_decided(self, page: Page, decisions: LinkDecisions) -> None:
        """Every link of an HTML ``page`` and its fate, before the new ones enter ToDo."""

    def page_edges(self, page: Page, edges: Sequence[LinkEdge]) -> None:
        """Links recorded (``--links``, ``--check-links``): every link of an HTML ``page`` (its
        requisites too), as written and resolved, before its links enter ToDo."""

    def page_anchors(self, page: Page, anchors: frozenset[str]) -> None:
        """With ``--check-links``: what a ``#fragment`` of a link to the HTML ``page`` may name
        (its elements' ids, its ``<a>``s' names), when known, before its links enter ToDo."""

    def duplicate_found(self, worker: int, page: Page) -> None:
        """``page``'s body is that of ``page.duplicate_of``: its links are not followed."""

    def sitemap_read(self, page: Page) -> None:
        """One sitemap file read (``--sitemaps``), as a page record, before it is kept."""

    def sitemap_queued(self, fresh: Sequence[Item], seen: int) -> None:
        """The sitemaps' URLs new to Visited, now in ToDo; ``seen``: how many were not new."""

    def lastmod_unchanged(self, worker: int, url: str) -> None:
        """``--recrawl``: ``url``'s sitemap <lastmod> spared its request; recorded unchanged."""

    def page_kept(self, page: Page, new: Sequence[Item]) -> None:
        """Keep the page (and the links about to enter ToDo) before they do; may raise to stop
        the crawl (a state that cannot write)."""

    def on_page(self, page: Page) -> None:
        """``page``'s record is final and its new links are in ToDo (after ``page_kept``): the
        core's ``Observer``, as the core's worker loop tells it."""

    def crawl_finished(self, stats: StatsSnapshot) -> None:
        """Once, at the end, even after a failure, with the final stats: close files here."""

POINTS = tuple(name for name in vars(CrawlObserver)
               if not name.startswith("_") and name != "critical")
# A watcher failing must not fail the page: once a page is kept its record exists (failing it
# would record it twice), and before, its links may already be in Visited (failing it would
# lose them). Only a critical observer (the state) may stop the crawl there. Failing at the
# start of the crawl, or at its end (each closes its files), is the crawl's failure.
GUARDED = tuple(point for point in POINTS if point not in ("crawl_started", "crawl_finished"))


class Events:
    """The crawl's observers behind one object: ``events.fetched(worker, response)`` calls
    ``fetched`` on each observer that overrides it, in order. ``events.on_page(page)`` makes it
    the one core ``Observer`` the core's worker loop is given."""

    # The points, each set in __init__; their arguments are those of CrawlObserver's.
    crawl_started: Callable[[], None]
    resumed: Callable[[Sequence[Item]], None]
    seeds_queued: Callable[[Sequence[str], Sequence[str]], None]
    taken: Callable[[int, Item], None]
    fetched: Callable[[int, Response], None]
    retrying: Callable[[int, Item, int, float], None]
    redirected: Callable[[str, str, str], None]
    refused: Callable[[int, str, str, str], None]
    gave_up: Callable[[int, str, str], None]
    links_decided: Callable[[Page, LinkDecisions], None]
    page_edges: Callable[[Page, Sequence[LinkEdge]], None]
    page_anchors: Callable[[Page, frozenset[str]], None]
    duplicate_found: Callable[[int, Page], None]
    sitemap_read: Callable[[Page], None]
    sitemap_queued: Callable[[Sequence[Item], int], None]
    lastmod_unchanged: Callable[[int, str], None]
    page_kept: Callable[[Page, Sequence[Item]], None]
    on_page: Callable[[Page], None]
    crawl_finished: Callable[[StatsSnapshot], None]

    def __init__(self, observers: Iterable[CrawlObserver] = (),
                 stats: Stats | None = None) -> None:
        self.observers = list(observers)
        for point in POINTS:
            default = getattr(CrawlObserver, point)
            hearing = [getattr(o, point) if o.critical or point not in GUARDED
                       else _guarded(o, point, stats) for o in self.observers
                       if getattr(type(o), point, default) is not default]
            setattr(self, point, _fan_out(hearing))
        self.crawl_finished = _fan_out_all(
            [o.crawl_finished for o in self.observers
             if type(o).crawl_finished is not CrawlObserver.crawl_finished])


def _fan_out(hearing: list[Callable[..., None]]) -> Callable[..., None]:
    if not hearing:
        return _nothing
    if len(hearing) == 1:
        return hearing[0]

    def fan_out(*args: object) -> None:
        for listener in hearing:
            listener(*args)
    return fan_out


def _guarded(observer: CrawlObserver, point: str, stats: Stats | None) -> Callable[..., None]:
    """``observer.point``, its failures told in one line and counted, never raised."""
    listener = getattr(observer, point)

    def guarded(*args: object) -> None:
        try:
            listener(*args)
        except Exception as e:
            log.error("%s failed at %s: %s: %s", type(observer).__name__, point,
                      type(e).__name__, e)
            if stats is not None:
                stats.add(observer_errors=1)
    return guarded


def _fan_out_all(hearing: list[Callable[..., None]]) -> Callable[..., None]:
    """Like ``_fan_out``, but every listener is called even if one fails (each must close its
    files); the first failure is raised after."""
    def fan_out(*args: object) -> None:
        failure: BaseException | None = None
        for listener in hearing:
            try:
                listener(*args)
            except BaseException as e:  # noqa: BLE001 - raised again below
                failure = failure or e
        if failure is not None:
            raise failure
    return fan_out


def _nothing(*args: object) -> None:
    return None


class Callback(CrawlObserver):
    """The library's ``on_page``: called for each recorded page; its failures are counted
    (``callback_errors``) and told in one line per kind of exception (not a traceback per page),
    never allowed to take the crawl down."""

    def __init__(self, callback: Callable[[Page], None], stats: Stats) -> None:
        self.callback = callback
        self.stats = stats
        self._told: set[type[BaseException]] = set()
        self._lock = threading.Lock()

    def on_page(self, page: Page) -> None:
        try:
            self.callback(page)
        except Exception as e:  # the caller's bug must not take the crawl down
            self.stats.add(callback_errors=1)
            with self._lock:
                told, _ = type(e) in self._told, self._told.add(type(e))
            if not told:
                log.error("on_page callback failed: %s: %s (at %s; more of this kind are only "
                          "counted, as callback_errors)", type(e).__name__,
                          str(e).splitlines()[0][:200] if str(e) else "", page.url)
