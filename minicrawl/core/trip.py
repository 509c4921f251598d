"""The trip: what a worker does with a URL taken from ToDo — fetch it, extract its links, offer
them at the door (Visited, then ToDo) — and where a crawler adds to it (``interfaces.Hooks``)."""

import time
from contextlib import AbstractContextManager, nullcontext

from minicrawl.core.door import Door
from minicrawl.core.interfaces import Client, Entry, Go, Hooks, Item, Links, Pace, Page, Response
from minicrawl.core.links import base_url, extract_links, follows_links
from minicrawl.core.urls import host_of, resolve
from minicrawl.html.meta import ROBOT


class Trip:
    """One worker's trips, with a crawler's ``hooks`` (none: :class:`CoreHooks`). The ``door``,
    ``pace`` and ``parsing`` slot (None: no limit) are the crawl's, the ``client`` this worker's."""

    def __init__(self, door: Door, client: Client, pace: Pace | None = None,
                 hooks: Hooks | None = None,
                 parsing: AbstractContextManager[object] | None = None) -> None:
        self.door, self.client, self.pace = door, client, pace
        self.hooks = hooks if hooks is not None else CoreHooks()
        self.parsing = parsing if parsing is not None else nullcontext()

    def visit(self, item: Item) -> Page | None:
        """One URL's trip: may it go (``before``), fetch it, its page (``after``), its links
        through the door. The page, once its new links are in ToDo, or None (see :class:`Hooks`)."""
        try:
            return self._visit(item)
        except Exception as exc:  # a bug costs one page, not the worker
            return self.hooks.failed(item, exc)

    def _visit(self, item: Item) -> Page | None:
        go = self.hooks.before(item)
        page = self.hooks.after(item, self.fetch(item, go)) if isinstance(go, Go) else go
        if page is None:  # back in ToDo: its trip goes on later
            return None
        if page.redirect:  # a redirect's target is the same page under another name: same depth
            page.links = [page.redirect]
        elif follows_links(page) and self.hooks.follows(page):
            page.links = self.links_of(page)
        depth = page.depth if page.redirect else page.depth + 1
        page.new = len(self.door.enter(page.links, depth, page.final_url, checks=page.checks,
                                       keep=lambda entry: self.hooks.keep(page, entry)).new)
        return page

    def fetch(self, item: Item, go: Go = Go()) -> Response:  # noqa: B008 (frozen: one is safe)
        """Ask for the item's URL as ``go`` says once its host's pace allows (http, https alike)."""
        if self.pace is None:
            return self.client.fetch(item.url, go.headers, go.method)
        host = host_of(item.url)
        while (wait := self.pace.take(item, host)) > 0:
            time.sleep(wait)
        try:
            return self.client.fetch(item.url, go.headers, go.method)
        finally:
            self.pace.release(item, host)

    def links_of(self, page: Page) -> list[str]:
        """The canonical URLs ``page``'s links lead to (the hooks resolve those it follows)."""
        # One worker parses at a time (the slot is held by libxml2's parse only): it needs no
        # GIL, so one core parses while the other runs the walks, resolving and fetching, Python
        # one thread at a time anyway; two parses at once leave no core for them (bench/README.md).
        links = extract_links(page.body, page.headers, self.hooks.robot, self.parsing)
        page.noindex = links.noindex
        return self.hooks.resolve(page, links)


class CoreHooks:
    """The core's own :class:`Hooks`, the plain trip: every item fetched as it is, each answer its
    page (a redirect's: its target), its links followed as it says (all if ``ignore_nofollow``)."""

    robot = ROBOT

    def __init__(self, ignore_nofollow: bool = False) -> None:
        self.ignore_nofollow = ignore_nofollow

    def before(self, item: Item) -> Go | Page | None:
        return Go()

    def after(self, item: Item, answer: Response) -> Page | None:
        page = Page(item.url, item.depth, item.referrer, item.url, answer.status, answer.headers,
                    answer.body, elapsed_ms=answer.elapsed * 1000, error=answer.error)
        if answer.location is not None:
            page.redirect = resolve(page.url, answer.location)
        return page

    def follows(self, page: Page) -> bool:
        return True

    def resolve(self, page: Page, links: Links) -> list[str]:
        base = base_url(page.final_url, links)
        return list(dict.fromkeys(url for href in links.followed(self.ignore_nofollow)
                                  if (url := resolve(base, href, links.encoding))))

    def keep(self, page: Page, entry: Entry) -> None:
        pass

    def failed(self, item: Item, error: Exception) -> Page | None:
        return Page(item.url, item.depth, item.referrer, item.url,
                    error=f"internal error: {error!r}"[:300])
