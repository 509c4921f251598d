"""ToDo: the URLs waiting to be fetched, first in first out, and the rule that ends the crawl.

The crawl is over when ToDo is empty *and no worker is busy*: a busy worker may be about to put
links. So ToDo counts the items taken and not yet done, and a worker that finds it empty waits
until an item arrives or the last busy worker finishes."""

import threading
from collections import deque

from minicrawl.core.interfaces import Item


class ToDo:
    """A thread-safe FIFO of :class:`Item` that knows when the crawl is over."""

    def __init__(self) -> None:
        self._items: deque[Item] = deque()
        self._busy = 0  # items taken and not yet done
        self._stopped = False
        self._changed = threading.Condition()

    def put(self, item: Item) -> None:
        """Queue ``item`` (after :meth:`stop`, it is dropped)."""
        self.put_many([item])

    def put_many(self, items: list[Item]) -> int:
        """Queue ``items``; how many (none after :meth:`stop`)."""
        with self._changed:
            if self._stopped:
                return 0
            self._items.extend(items)
            self._changed.notify(len(items))
        return len(items)

    def take(self) -> Item | None:
        """The oldest item, waiting while another worker is busy; None once the crawl is over."""
        with self._changed:
            while not self._items and self._busy and not self._stopped:
                self._changed.wait()
            if self._stopped or not self._items:
                self._changed.notify_all()  # the crawl is over: wake every waiting worker
                return None
            self._busy += 1
            return self._items.popleft()

    def done(self, item: Item) -> None:
        """The worker that took ``item`` has finished it (its links, if any, are queued)."""
        with self._changed:
            self._busy -= 1
            if not self._busy and not self._items:
                self._changed.notify_all()

    def stop(self) -> None:
        """End the crawl: queued items are dropped, every ``take`` returns None."""
        with self._changed:
            self._stopped = True
            self._items.clear()
            self._changed.notify_all()
