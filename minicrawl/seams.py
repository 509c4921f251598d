"""run.py's seams: what its parts promise beyond the core's (:mod:`minicrawl.core.interfaces`).

The core's worker needs a ``Frontier`` and a ``Pace``; run.py's trip asks more of them — an item
given back to wait for its turn, a retry held until its time, a host's page cap, a turn kept while
robots.txt is fetched — and it has two parts the core has not: the page cap and the redirect
chains. Each Protocol here is implemented by this process's part and by the shared crawl's (in
Redis); the crawler, the trip and the robots gate hold the Protocol, never the union of the two
classes. Each has its contract test over every implementation: ``tests/core/test_todo.py``
(PoliteFrontier), ``tests/test_host_pace.py`` (HostPace), ``tests/test_seams.py`` (PageCap,
Redirects). They live here, not in the core: the core's student needs none of them.

Each lists every method, the core's Protocol's too: no class here has two bases
(``tests/test_package_shape.py``), and a reader sees the whole seam in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Protocol

from minicrawl.core.interfaces import Item

if TYPE_CHECKING:
    from minicrawl.visit.redirects import Chain


class PoliteFrontier(Protocol):
    """run.py's ToDo: a core ``Frontier`` (``put``, ``put_many``, ``take``, ``done``, ``stop``:
    the same contract) that also holds items back until a time, and takes back an item it handed
    out that could not be fetched yet.

    Contract: ``put`` and ``put_many`` hold an item whose ``not_before`` (``time.monotonic()``; a
    retry's backoff, put back through the door) is still ahead until then, without a worker
    sleeping on it; ``take`` hands it out with ``not_before`` 0.0, as any other item (equal and
    hashed as one that never waited). ``put_back(item, not_before)`` gives back an item ``take``
    handed out and its worker did not fetch (politeness said wait: the host rests): it is handed
    out again, once, not before ``not_before`` — a local ToDo puts it at the head of its host's
    line when its worker calls ``done``. ``len`` counts the items waiting (delayed too), not those
    in flight; ``unfinished``, those put and not yet done (waiting and in flight); ``stopped`` is
    True once ``stop`` was called (or a shared ToDo lost Redis). ``figures`` says where the waiting
    items are (``todo_in_memory``, ``todo_on_disk``, …: the ``todo_*`` stats), what it knows of it.
    """

    def put(self, item: Item) -> None: ...
    def put_many(self, items: list[Item]) -> int: ...
    def put_back(self, item: Item, not_before: float | None = None) -> None: ...
    def take(self) -> Item | None: ...
    def done(self, item: Item) -> None: ...
    def stop(self) -> None: ...
    def __len__(self) -> int: ...
    @property
    def unfinished(self) -> int: ...
    @property
    def stopped(self) -> bool: ...
    def figures(self) -> dict[str, int]: ...


@dataclass(frozen=True, slots=True)
class Turn:
    """A host pace's answer for one request: go now, wait and ask again, or never."""

    go: bool  # it starts now, on a slot held for its item until ``release``
    wait: float = 0.0  # not now: ask again in this many seconds (when all of the host's slots
    # are in flight, their requests end in their own time: then a short poll)
    full: bool = False  # never: the host had its page cap (asked with a ``cap`` only)


GO = Turn(True)
FULL = Turn(False, full=True)


class HostPace(Protocol):
    """run.py's pace: the core's ``Pace`` (``take``, ``release``: the same contract) with the
    page cap per host and the turns a shared crawl keeps for URLs that wait.

    Contract: ``take_turn`` is ``take`` with the whole answer (:class:`Turn`); with a ``cap``,
    a host that had ``cap`` pages is ``full`` (and the page, when it goes, is counted: check and
    count are one step, across processes too); ``robots``: the request is the item's robots.txt,
    before its page: not counted, and the item keeps its turn. ``take(item, host, gap)`` is
    ``take_turn(item, host, gap)``'s wait (0.0: go). ``full(host, cap)`` is True once the host
    is known to have had ``cap`` pages. ``book`` keeps ``item`` a turn on ``host`` while it
    waits for something else (its robots.txt, fetched by another worker) and answers the seconds
    until it (0.0: a local ToDo keeps the turn in the host's line); ``forget`` gives it up (the
    item was refused), so the items behind it need not wait for it.
    """

    def take(self, item: Item, host: str, gap: float = 0.0) -> float: ...
    def take_turn(self, item: Item, host: str, gap: float = 0.0, cap: int | None = None,
                  robots: bool = False) -> Turn: ...
    def release(self, item: Item, host: str, gap: float = 0.0, pause: float = 0.0) -> None: ...
    def full(self, host: str, cap: int) -> bool: ...
    def book(self, item: Item, host: str, gap: float = 0.0) -> float: ...
    def forget(self, item: Item, host: str) -> None: ...


class Grant(Enum):
    """The page cap's answer for one fetch."""

    GO = "go"  # fetch it
    LAST = "last"  # fetch it: the cap's last page (no new fetch starts after it)
    NONE = "none"  # do not: the cap was reached


class PageCap(Protocol):
    """``--max-pages``: this process's fetches, or a shared crawl's, all processes'.

    Contract: ``take(cap)`` counts one fetch and answers GO, LAST (the ``cap``-th) or NONE (none
    left: not counted); of any number of threads (processes) asking at once, exactly ``cap``
    are granted.
    """

    def take(self, cap: int) -> Grant: ...


class Redirects(Protocol):
    """Redirect chains waiting at their targets in ToDo (:mod:`minicrawl.visit.redirects`).

    Contract: ``carry(target, chain)`` (called before ``target`` enters ToDo) makes ``chain``
    the one ``waiting_at(target)`` answers — in any process of a shared crawl — until the one
    that found it there calls ``end(target)`` (the chain was recorded, refused or failed); a URL
    no chain waits at answers None.
    """

    def waiting_at(self, url: str) -> Chain | None: ...
    def carry(self, target: str, chain: Chain) -> None: ...
    def end(self, url: str) -> None: ...
