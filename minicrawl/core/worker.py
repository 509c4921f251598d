"""The worker: one thread's loop — take a URL from ToDo, visit it, tell the observers, done —
and the visit (:class:`Trip`): fetch the URL, extract its links, offer them at the door (which
asks Visited about each and puts the new ones in ToDo). Each step is one named call.
"""

import threading
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext

from minicrawl.core.door import Door
from minicrawl.core.fetch import Fetcher
from minicrawl.core.interfaces import Frontier, Item, Observer, Pace, Page, Response, Visitor
from minicrawl.core.links import base_url, extract_links, follows_links
from minicrawl.core.urls import host_of, resolve


class Worker:
    """Visits items from ``todo`` until the crawl is over, with its own ``visitor`` (a
    :class:`Trip`); ToDo, the observers and the page cap are shared by all workers of a crawl."""

    def __init__(self, todo: Frontier, visitor: Visitor, observers: Sequence[Observer] = (),
                 budget: threading.Semaphore | None = None) -> None:
        self.todo, self.visitor, self.observers, self.budget = todo, visitor, observers, budget
        self.failure: Exception | None = None  # an observer's: it stops the crawl (run raises)

    def run(self) -> None:
        """Take → visit → tell the observers → done, until ToDo says the crawl is over."""
        while (item := self.todo.take()) is not None:
            try:
                if self.budget is not None and not self.budget.acquire(blocking=False):
                    self.todo.stop()  # the page cap is reached: no more fetching, by anyone
                    continue
                try:
                    page = self.visitor.visit(item)
                except Exception as exc:  # a bug costs one page, not the worker
                    page = Page(item.url, item.depth, item.referrer, item.url,
                                error=f"internal error: {exc!r}"[:300])
                try:
                    for observer in self.observers if page is not None else ():
                        observer.on_page(page)
                except Exception as exc:  # the observer's bug: no worker dies of it silently
                    self.failure = self.failure or exc
                    self.todo.stop()
            finally:
                self.todo.done(item)


class Trip:
    """One URL's trip, the core's :class:`Visitor`: fetch, links, and through the crawl's
    ``door`` into ToDo; the ``pace`` is the crawl's, the ``fetcher`` this worker's own. A page's
    word not to follow its links (nofollow) is obeyed unless ``ignore_nofollow``. ``parsing``:
    the crawl's parsing slot (a lock: one worker parses at a time), or None for no limit."""

    def __init__(self, door: Door, fetcher: Fetcher, pace: Pace | None = None,
                 ignore_nofollow: bool = False,
                 parsing: AbstractContextManager[object] | None = None) -> None:
        self.door, self.fetcher, self.pace = door, fetcher, pace
        self.ignore_nofollow = ignore_nofollow
        self.parsing = parsing if parsing is not None else nullcontext()

    def visit(self, item: Item) -> Page:
        """One URL's trip: fetch it, find its links, queue the new ones; what was learned."""
        answer = self.fetch(item)
        page = Page(item.url, item.depth, item.referrer, item.url, answer.status, answer.headers,
                    answer.body, elapsed_ms=answer.elapsed * 1000, error=answer.error)
        page.links = self.links_of(page, answer.location)
        # A redirect's target is the same page under another name: it keeps the page's depth.
        depth = item.depth if page.redirect else item.depth + 1
        page.new = len(self.door.enter(page.links, depth, item.url).new)
        return page

    def fetch(self, item: Item) -> Response:
        """GET the item's URL once its host's pace allows (http and https of a host share it)."""
        if self.pace is None:
            return self.fetcher.fetch(item.url)
        host = host_of(item.url)  # "host[:port]": either scheme, without user:password@
        while (wait := self.pace.take(item, host)) > 0:
            time.sleep(wait)
        try:
            return self.fetcher.fetch(item.url)
        finally:
            self.pace.release(item, host)

    def links_of(self, page: Page, location: str | None) -> list[str]:
        """The canonical URLs the answer leads to: a redirect's target (``location``, kept as
        ``page.redirect``), or, if its links are followed (``follows_links``), those they lead
        to, less those it says not to follow, resolved against its base."""
        if location is not None:
            page.redirect = resolve(page.url, location)
            return [page.redirect] if page.redirect else []
        if not follows_links(page):
            return []
        # Parsing is CPU work, and Python runs one thread's code at a time (the GIL): workers
        # that parse at once only hand the GIL to each other, each hand-off a switch between
        # threads (Java docs, 16 workers, 2 cores: ~180 a page, twice the CPU). So they take
        # turns here, one at a time, while the others wait on the network: lxml builds the tree
        # without the GIL, so one parser keeps a second core busy beside Python's one; a second
        # parser only added switches (bench/README.md). A Lock: waiting for it is done in C.
        with self.parsing:
            links = extract_links(page.body, page.headers)
            page.noindex = links.noindex
            base = base_url(page.url, links)
            hrefs = links.followed(self.ignore_nofollow)
            return list(dict.fromkeys(url for href in hrefs
                                      if (url := resolve(base, href, links.encoding))))
