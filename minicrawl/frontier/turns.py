"""Turns at work: a ToDo whose takers work at most ``gate.width`` at once.

``--threads 16`` starts sixteen workers, but once the CPU is busy they only make each other wait
for the GIL (:mod:`minicrawl.workers` says how the width is chosen, from the CPU time the
crawl uses). :class:`TakingTurns` is the core's ``Frontier`` with that limit added: ``take``
first waits for a turn, which the worker keeps while it works, item after item, until the gate
narrows. The worker loop is the core's, unchanged; only the ToDo it
is given knows about turns.

A turn held by a worker waiting inside ToDo (no item for it: the one host BUSY with
``--per-host`` requests, or RESTING, or nothing queued) helps nobody: :class:`Waiting` adds up
that time, and the work limit narrows by it instead of widening (:mod:`minicrawl.workers`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from minicrawl.core.interfaces import Frontier, Item
from minicrawl.frontier.gate import TokenGate


class Waiting:
    """Seconds that workers holding a turn spent waiting inside ToDo's ``take``, added up over
    all of them (one cell per thread, written only by its thread: no lock on the way)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._cells: list[list[float | None]] = []  # per thread: [seconds waited, since]
        self._mine = threading.local()

    def begin(self) -> None:
        """This thread starts waiting for an item."""
        cell = getattr(self._mine, "cell", None)
        if cell is None:
            cell = self._mine.cell = [0.0, None]
            self._cells.append(cell)  # list.append is atomic under the GIL
        cell[1] = self._clock()

    def end(self) -> None:
        """This thread has its item (or None)."""
        cell = self._mine.cell
        cell[0] += self._clock() - cell[1]
        cell[1] = None

    def total(self) -> float:
        """Seconds waited so far by all threads, counting the waits going on now."""
        now = self._clock()
        return sum(waited + (now - since if since is not None else 0.0)
                   for waited, since in list(self._cells))


class TakingTurns:
    """``todo`` (any Frontier) with at most ``gate.width`` workers holding an item, or waiting
    for one, at once. A turn is a thread's: it keeps it from item to item (handing it over
    after every item made the threads take turns on the GIL too), and gives it back when the
    gate narrows or ToDo says the crawl is over."""

    def __init__(self, todo: Frontier, gate: TokenGate, waiting: Waiting | None = None) -> None:
        self.todo, self.gate = todo, gate
        self.waiting = waiting if waiting is not None else Waiting()  # turns held for nothing
        self._held = threading.local()  # .turn: this thread holds one

    def put(self, item: Item) -> None:
        """Queue ``item`` in the ToDo taken in turns."""
        self.todo.put(item)

    def put_many(self, items: list[Item]) -> int:
        """Queue ``items`` in the ToDo; how many it took."""
        return self.todo.put_many(items)

    def take(self) -> Item | None:
        """The next item, once this worker has a turn (None: the crawl is over, no turn kept)."""
        if not getattr(self._held, "turn", False):
            self.gate.enter()
            self._held.turn = True
        self.waiting.begin()
        try:
            item = self.todo.take()
        except BaseException:
            self._leave()
            raise
        finally:
            self.waiting.end()
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
