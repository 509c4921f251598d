"""The state of a crawl without ``--state``: it remembers nothing.

So the crawler asks the same questions with a state or without (``prior``, ``journal``, ``hop``,
``note_change``) and gets empty answers: no ``if`` in the worker loop says which.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from minicrawl.events import CrawlObserver

if TYPE_CHECKING:
    from collections.abc import Iterator

    from minicrawl.core.interfaces import Item
    from minicrawl.page import Page
    from minicrawl.records.output import Output
    from minicrawl.state.recrawl import Prior
    from minicrawl.visited.make import Visited


class NoState(CrawlObserver):
    """The state of a crawl without ``--state``: it remembers nothing, so the crawler asks the
    same questions either way (``prior``, ``journal``, ``hop``) and gets empty answers."""

    existed = False
    visited: Visited | None = None

    def start(self, recrawl: bool) -> tuple[Iterator[Item], dict[str, int]]:
        """Nothing to resume or recrawl: no items for ToDo, no counters."""
        return iter(()), {}

    def journal(self, items: list[Item]) -> None:
        """Does nothing: without a state no item is journaled."""

    def attach_output(self, output: Output) -> None:
        """Does nothing: the ``--out`` file writes each record as it hears of it."""

    def hop(self, done: str, hop: Item, chain: str) -> None:
        """Does nothing: no journal in which the redirect ``hop`` would replace ``done``."""

    def prior(self, url: str, check: bool = False) -> Prior | None:
        """Always None: no earlier fetch of ``url`` is recorded."""
        return None

    def note_change(self, page: Page, prior: Prior | None, counts: dict[str, int]) -> None:
        """Does nothing: no earlier crawl to compare with, so ``page.change`` stays None."""

    def digests(self) -> Iterator[tuple[str, str]]:
        """Always empty: no content digest was recorded before this run."""
        return iter(())
