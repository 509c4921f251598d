"""The worker: one thread's loop — take a URL from ToDo, its trip, tell the observers, done."""

import threading
from collections.abc import Sequence

from minicrawl.core.interfaces import Frontier, Observer
from minicrawl.core.trip import Trip


class Worker:
    """Visits items from ``todo`` on its own ``trip``; ToDo, the observers and the page cap
    (``budget``) are shared by all workers of a crawl."""

    def __init__(self, todo: Frontier, trip: Trip, observers: Sequence[Observer] = (),
                 budget: threading.Semaphore | None = None) -> None:
        self.todo, self.trip, self.observers, self.budget = todo, trip, observers, budget
        self.failure: Exception | None = None  # an observer's: it stops the crawl (run raises)

    def run(self) -> None:
        """The loop, in the calling thread; it returns once ToDo says the crawl is over."""
        while (item := self.todo.take()) is not None:
            try:
                if self.budget is not None and not self.budget.acquire(blocking=False):
                    self.todo.stop()  # the page cap is reached: no more fetching, by anyone
                    continue
                page = self.trip.visit(item)
                try:
                    for observer in self.observers if page is not None else ():
                        observer.on_page(page)
                except Exception as exc:  # the observer's bug: no worker dies of it silently
                    self.failure = self.failure or exc
                    self.todo.stop()
            finally:
                self.todo.done(item)
