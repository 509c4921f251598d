"""A crawl's pages handed to the caller as they are fetched (:meth:`Crawler.pages
<minicrawl.crawler.Crawler.pages>`): the crawl runs in a thread of its own and its pages come
through a queue a few pages a worker long."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator

from minicrawl.page import Page


class PageFeed:
    """The pages of one run, as it fetches them: the crawl's ``on_page`` is :meth:`on_page`
    (``told`` still told each page first), :meth:`pages` runs it and yields them."""

    def __init__(self, threads: int, told: Callable[[Page], None] | None = None) -> None:
        self.handoff: queue.Queue[Page | None] = queue.Queue(maxsize=4 * threads)
        self.told = told
        self.left = threading.Event()  # the caller stopped reading (not: the crawl stopped)

    def on_page(self, page: Page) -> None:
        """A page fetched (from a worker thread): to the caller."""
        if self.told:
            self.told(page)
        self.hand(page)

    def hand(self, page: Page | None) -> None:
        """To the caller, unless the caller has left (then nobody reads it)."""
        while not self.left.is_set():
            try:
                self.handoff.put(page, timeout=0.2)
                return
            except queue.Full:
                continue

    def pages(self, run: Callable[[], object], stop: Callable[[], None]) -> Iterator[Page]:
        """``run`` the crawl in the background and yield each page as it is fetched; a caller
        that stops reading ``stop``s the crawl; the crawl's error, if it raised one, is raised
        here once its pages are read."""
        failed: list[BaseException] = []

        def crawl() -> None:
            try:
                run()
            except BaseException as e:  # handed to the caller: the crawl's error is theirs
                failed.append(e)
            finally:
                self.hand(None)  # the end mark

        runner = threading.Thread(target=crawl, daemon=True)
        runner.start()
        try:
            while (page := self.handoff.get()) is not None:
                yield page
        finally:  # the caller stopped early: stop the crawl too
            self.left.set()
            stop()
            runner.join()
        if failed:
            raise failed[0]
