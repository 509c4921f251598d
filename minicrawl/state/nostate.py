"""The state of a crawl without ``--state``: it remembers nothing.

So the crawler asks the same questions with a state or without (``prior``, ``journal``, ``hop``,
``note_change``) and gets empty answers: no ``if`` in the worker loop says which.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from minicrawl.events import CrawlObserver

if TYPE_CHECKING:
    from minicrawl.bloom.visited import Visited
    from minicrawl.core.interfaces import Item
    from minicrawl.output import Output
    from minicrawl.page import Page
    from minicrawl.state.recrawl import Prior


class NoState(CrawlObserver):
    """The state of a crawl without ``--state``: it remembers nothing, so the crawler asks the
    same questions either way (``prior``, ``journal``, ``hop``) and gets empty answers."""

    existed = False
    visited: Visited | None = None

    def start(self, recrawl: bool) -> tuple[list[Item], dict[str, int]]:
        return [], {}

    def journal(self, items: list[Item]) -> None:
        pass

    def attach_output(self, output: Output) -> None:
        pass  # no state: the --out file writes each record as it hears of it

    def hop(self, done: str, hop: Item, chain: str) -> None:
        pass

    def prior(self, url: str) -> Prior | None:
        return None

    def note_change(self, page: Page, prior: Prior | None, counts: dict[str, int]) -> None:
        pass  # no earlier crawl to compare with: page.change stays None

    def digests(self) -> dict[str, str]:
        return {}
