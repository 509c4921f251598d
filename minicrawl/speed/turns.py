"""Turns at work: a ToDo whose takers work at most ``gate.width`` at once.

``--threads 16`` starts sixteen workers, but once the CPU is busy they only make each other wait
for the GIL (:mod:`minicrawl.speed.workers` says how the width is chosen, from the CPU time the
crawl uses). :class:`TakingTurns` is the core's ``Frontier`` with that limit added: ``take``
first waits for a turn, which the worker keeps while it works, item after item, until the gate
narrows. The worker loop is the core's, unchanged; only the ToDo it
is given knows about turns.
"""

from __future__ import annotations

import threading

from minicrawl.core.interfaces import Frontier, Item
from minicrawl.speed.gate import TokenGate


class TakingTurns:
    """``todo`` (any Frontier) with at most ``gate.width`` workers holding an item, or waiting
    for one, at once. A turn is a thread's: it keeps it from item to item (handing it over
    after every item made the threads take turns on the GIL too), and gives it back when the
    gate narrows or ToDo says the crawl is over."""

    def __init__(self, todo: Frontier, gate: TokenGate) -> None:
        self.todo, self.gate = todo, gate
        self._held = threading.local()  # .turn: this thread holds one

    def put(self, item: Item) -> None:
        """Queue ``item`` in the ToDo taken in turns."""
        self.todo.put(item)

    def take(self) -> Item | None:
        """The next item, once this worker has a turn (None: the crawl is over, no turn kept)."""
        if not getattr(self._held, "turn", False):
            self.gate.enter()
            self._held.turn = True
        try:
            item = self.todo.take()
        except BaseException:
            self._leave()
            raise
        if item is None:
            self._leave()
        return item

    def done(self, item: Item) -> None:
        """``item`` is finished: ToDo hears it; the turn goes to the next worker waiting only if
        the gate is narrowing."""
        try:
            self.todo.done(item)
        except BaseException:
            self._leave()
            raise
        if self.gate.narrowing:
            self._leave()

    def stop(self) -> None:
        """Stop the ToDo: workers waiting for a turn get one, and then None."""
        self.todo.stop()

    def _leave(self) -> None:
        if getattr(self._held, "turn", False):
            self._held.turn = False
            self.gate.leave()
