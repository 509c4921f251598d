"""The worker: one thread's loop — take a URL from ToDo, fetch it, extract its links, ask
Visited about each, put the new ones in ToDo, tell the observers. Each step is one named call.
"""

from __future__ import annotations

from collections.abc import Sequence

from minicrawl.core.fetch import Fetcher, Response
from minicrawl.core.interfaces import Admission, Frontier, Item, Observer, Page, SeenSet
from minicrawl.core.limits import Budget, Politeness
from minicrawl.core.links import extract_links, is_html
from minicrawl.core.urls import resolve


class Worker:
    """Crawls URLs from ``todo`` until the crawl is over. The parts are shared by all workers
    of a crawl, except the fetcher, which is this worker's own."""

    def __init__(self, todo: Frontier, visited: SeenSet, fetcher: Fetcher,
                 admission: Sequence[Admission] = (), observers: Sequence[Observer] = (),
                 politeness: Politeness | None = None, budget: Budget | None = None) -> None:
        self.todo, self.visited, self.fetcher = todo, visited, fetcher
        self.admission, self.observers = admission, observers
        self.politeness, self.budget = politeness, budget

    def run(self) -> None:
        """Take → visit → done, until ToDo says the crawl is over."""
        while (item := self.todo.take()) is not None:
            try:
                if self.budget is not None and not self.budget.spend():
                    self.todo.stop()  # the page cap is reached: no more fetching, by anyone
                    continue
                self.visit(item)
            except Exception as exc:  # a bug costs one page, not the worker
                self.report(Page(item.url, item.depth, item.referrer,
                                 error=f"internal error: {exc!r}"[:300]))
            finally:
                self.todo.done(item)

    def visit(self, item: Item) -> Page:
        """One URL's trip: fetch it, find its links, queue the new ones, report the page."""
        if self.politeness is not None:
            self.politeness.wait_turn(item.url)
        response = self.fetcher.fetch(item.url)
        page = Page(item.url, item.depth, item.referrer, response.status, response.content_type,
                    len(response.body), redirect=None, error=response.error,
                    elapsed=response.elapsed)
        links = self.links_of(page, response)
        # A redirect's target is the same page under another name: it keeps the page's depth.
        depth = item.depth if page.redirect else item.depth + 1
        page.links, page.new = len(links), self.enqueue_new(links, depth, item.url)
        self.report(page)
        return page

    def links_of(self, page: Page, response: Response) -> list[str]:
        """The canonical URLs the answer leads to: a redirect's target, or an HTML page's
        links (resolved against its ``<base href>`` when it has one)."""
        if response.location is not None and page.status in (301, 302, 303, 307, 308):
            page.redirect = resolve(page.url, response.location)
            return [page.redirect] if page.redirect else []
        if page.status != 200 or page.error or not is_html(page.content_type):
            return []
        hrefs, base_href = extract_links(response.body, page.content_type)
        base = (resolve(page.url, base_href) if base_href else None) or page.url
        return list(dict.fromkeys(url for href in hrefs if (url := resolve(base, href))))

    def enqueue_new(self, links: list[str], depth: int, referrer: str | None) -> int:
        """Offer each link to admission, then to Visited; put the new ones in ToDo. Returns
        how many were new."""
        new = 0
        for url in links:
            if all(rule.admits(url, depth) for rule in self.admission) \
                    and self.visited.add_if_new(url):
                self.todo.put(Item(url, depth, referrer))
                new += 1
        return new

    def report(self, page: Page) -> None:
        """Tell every observer about the finished page."""
        for observer in self.observers:
            observer.on_page(page)
