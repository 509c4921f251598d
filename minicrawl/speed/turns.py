"""Turns at work: a ToDo whose takers work at most ``gate.width`` at once.

``--threads 16`` starts sixteen workers, but once the CPU is busy they only make each other wait
for the GIL (:mod:`minicrawl.speed.workers` says how the width is chosen, from the CPU time the
crawl uses). :class:`TakingTurns` is the core's ``Frontier`` with that limit added: ``take``
first waits for a turn, ``done`` gives it back, so a worker holds a turn from taking an item
(or waiting for one) to finishing it. The worker loop is the core's, unchanged; only the ToDo it
is given knows about turns.
"""

from __future__ import annotations

from minicrawl.core.interfaces import Frontier, Item
from minicrawl.speed.gate import TokenGate


class TakingTurns:
    """``todo`` (any Frontier) with at most ``gate.width`` items out, or takers waiting, at
    once. A worker taking a second item before finishing the first needs a second turn."""

    def __init__(self, todo: Frontier, gate: TokenGate) -> None:
        self.todo, self.gate = todo, gate

    def put(self, item: Item) -> None:
        """Queue ``item`` in the ToDo taken in turns."""
        self.todo.put(item)

    def take(self) -> Item | None:
        """The next item, once this worker has a turn (None: the crawl is over, no turn kept)."""
        self.gate.enter()
        try:
            item = self.todo.take()
        except BaseException:
            self.gate.leave()
            raise
        if item is None:
            self.gate.leave()
        return item

    def done(self, item: Item) -> None:
        """``item`` is finished: ToDo hears it, then the turn goes to the next worker waiting."""
        try:
            self.todo.done(item)
        finally:
            self.gate.leave()

    def stop(self) -> None:
        """Stop the ToDo: workers waiting for a turn get one, and then None."""
        self.todo.stop()
