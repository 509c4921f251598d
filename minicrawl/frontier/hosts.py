"""The hosts' pace in one process: each host in a named state, and the request slots on it.

A host is in one of three states (:class:`HostState`) at any moment:

* READY: a request may start now;
* RESTING: its gap is running — since the last start, and with ``per_host=1`` since the last
  end (the server sees every gap whole), or a Retry-After pause — until ``next_start``;
* BUSY: ``per_host`` requests are in flight; the next waits for one to end.

A request holds a *slot* on its host from start to end. The slot belongs to the ToDo item it is
for, not to a thread: the polite ToDo (:mod:`minicrawl.frontier.todo`) takes one for an item
when it hands the item out (the host was READY), and the item's first request — its robots.txt, or
the page — uses it. A slot handed back unused (robots.txt refused the URL, the URL went back to
ToDo) is unbooked: a URL that made no request costs its host no gap.

:class:`Hosts` is one process's pace (a :class:`~minicrawl.seams.HostPace`: the core's ``Pace``
and more); the ToDo asks it "may this host be fetched now?" (:meth:`Hosts.state`) and is told
when a host's state changes. The two share one lock: choosing an item and booking its host's
slot are one step.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from minicrawl.core.interfaces import Item
from minicrawl.seams import FULL, GO, Turn

MAX_HOSTS = 50_000  # idle host records kept at most (a hundred bytes each)
# All of a host's slots are in flight: ask again in this many seconds (a request ends when it
# ends; the polite ToDo is told at once, a caller that sleeps polls: the shared gate's poll too)
BUSY_POLL = 0.01


class HostState(Enum):
    READY = "ready"
    RESTING = "resting"
    BUSY = "busy"


@dataclass(eq=False)
class Slot:
    """One request's hold on a host."""

    host: str
    prev: float  # the host's next_start before this slot booked its own
    booked: float  # the next_start this slot booked
    used: bool = False  # a request started on it
    started: float = 0.0  # when


@dataclass(eq=False)
class _Host:
    gap: float
    in_flight: int = 0  # slots out (taken and not yet ended or handed back)
    next_start: float = 0.0  # no request starts before this time
    quiet_until: float = 0.0  # a Retry-After: not even on a slot booked before it came


class Hosts:
    """Every host's state and slots: at most ``per_host`` slots out per host (None: no limit),
    and ``delay`` the gap until the host's own (robots.txt's Crawl-delay) is given.

    ``on_change(host)`` is called (lock held) when a host may have become READY: the ToDo sets
    it. The page count per host is not a cache: forgetting it would let a host have more than
    ``max_pages_per_host`` pages, so it is kept (one int per host) when that cap is asked for.
    """

    def __init__(self, per_host: int | None = None, delay: float = 0.0,
                 max_hosts: int = MAX_HOSTS) -> None:
        self.per_host = per_host if per_host is not None else 1 << 30
        self.delay, self.max_hosts = delay, max_hosts
        self.on_change: Callable[[str], None] = lambda host: None
        self.lock = threading.RLock()  # the ToDo waits on it too
        self._hosts: OrderedDict[str, _Host] = OrderedDict()  # least recently used first
        self._slots: dict[Item, list[Slot]] = {}  # the slots each item holds
        self._pages: dict[str, int] = {}  # requests per host, when a cap is asked for

    # -- the question the ToDo asks ---------------------------------------------------------

    def state(self, name: str, now: float) -> HostState:
        """The host's state at ``now`` (a host never asked is READY; lock held)."""
        host = self._hosts.get(name)
        if host is None:
            return HostState.READY
        if host.in_flight >= self.per_host:
            return HostState.BUSY
        return HostState.RESTING if host.next_start > now else HostState.READY

    def next_start(self, name: str) -> float:
        """When a RESTING host becomes READY."""
        host = self._hosts.get(name)
        return host.next_start if host is not None else 0.0

    def rest(self, name: str, until: float) -> None:
        """Keep ``name`` RESTING until ``until`` at least (an item put back to wait for it)."""
        with self.lock:
            host = self._host(name)
            host.next_start = max(host.next_start, until)

    def hand_out(self, item: Item, name: str, now: float) -> None:
        """The READY host ``name`` gets a request for ``item``: a slot is booked for it (the
        next start one gap on) and held until the item's request uses it or gives it back."""
        with self.lock:
            host = self._host(name)
            prev, host.next_start = host.next_start, now + host.gap
            host.in_flight += 1
            self._slots.setdefault(item, []).append(Slot(name, prev, host.next_start))

    # -- the HostPace: asked by politeness for each request ------------------------------------

    def take(self, item: Item, host: str, gap: float = 0.0) -> float:
        """The core's Pace: 0.0 if a request for ``item`` starts on ``host`` now, else the
        seconds to wait (:meth:`take_turn` without a cap)."""
        return self.take_turn(item, host, gap).wait

    def take_turn(self, item: Item, host: str, gap: float = 0.0, cap: int | None = None,
                  robots: bool = False) -> Turn:
        """A request for ``item`` on ``host``: go if ``item`` holds an unused slot on it or one
        is free (taken); else wait while the host rests (or, BUSY, :data:`BUSY_POLL`); full
        once it had ``cap`` pages (not counted for ``robots``)."""
        with self.lock:
            if not robots and cap is not None and self._pages.get(host, 0) >= cap:
                return FULL
            now = time.monotonic()
            record = self._host(host)
            record.gap = gap = max(gap, self.delay)
            slot = next((s for s in self._slots.get(item, ()) if s.host == host and not s.used),
                        None)
            if slot is not None and record.quiet_until > now:  # booked before a Retry-After
                return Turn(False, record.quiet_until - now)
            if slot is None:
                state = self.state(host, now)
                if state is HostState.BUSY:
                    return Turn(False, BUSY_POLL)
                if state is HostState.RESTING:
                    return Turn(False, record.next_start - now)
                record.in_flight += 1
                slot = Slot(host, record.next_start, now + gap)
                self._slots.setdefault(item, []).append(slot)
            slot.used, slot.started = True, now
            record.next_start = max(record.next_start, now + gap)
            if not robots and cap is not None:
                self._pages[host] = self._pages.get(host, 0) + 1
            return GO

    def release(self, item: Item, host: str, gap: float = 0.0, pause: float = 0.0) -> None:
        """``item``'s request to ``host`` is over: the slot is free. The next start is ``pause``
        from now at the earliest, and with ``per_host=1`` ``gap`` from now. With more in flight
        the gap runs from starts only, or a slow answer would stretch every gap by its time."""
        with self.lock:
            slots = self._slots.get(item, [])
            slot = next((s for s in slots if s.host == host and s.used), None)
            if slot is None:
                return
            slots.remove(slot)
            if not slots:
                del self._slots[item]
            record = self._host(host)
            record.in_flight -= 1
            record.gap = gap = max(gap, self.delay)
            now = time.monotonic()
            # (the gap may have been raised meanwhile: robots.txt's Crawl-delay)
            record.next_start = max(record.next_start, slot.started + gap, now + pause,
                                    now + gap if self.per_host == 1 else 0.0)
            record.quiet_until = max(record.quiet_until, now + pause)
            self.on_change(host)

    def give_back(self, item: Item) -> None:
        """``item`` is done or back in ToDo: a slot it still holds is freed; one never used is
        unbooked too (if nobody booked after it), so a URL that made no request costs no gap."""
        with self.lock:
            for slot in self._slots.pop(item, ()):
                record = self._host(slot.host)
                record.in_flight -= 1
                if not slot.used and record.next_start == slot.booked:
                    record.next_start = slot.prev
                elif slot.used:  # a request that was never said to end (a bug): a gap anyway
                    record.next_start = max(record.next_start, time.monotonic() + record.gap)
                self.on_change(slot.host)

    def full(self, host: str, cap: int) -> bool:
        """True once ``host`` had ``cap`` pages."""
        return self._pages.get(host, 0) >= cap

    def book(self, item: Item, host: str, gap: float = 0.0) -> float:
        """0.0: nothing to book here: ``item`` keeps its turn in its host's line in the polite
        ToDo (put back, it returns to the head of the line)."""
        return 0.0

    def forget(self, item: Item, host: str) -> None:
        """Nothing booked here (see :meth:`book`): a slot ``item`` holds goes with ``done``."""

    # -- records -------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._hosts)

    def _host(self, name: str) -> _Host:
        """The host's record, most recently used last; beyond ``max_hosts`` the oldest READY
        records with nothing in flight are forgotten (a fresh record says the same)."""
        host = self._hosts.get(name)
        if host is not None:
            self._hosts.move_to_end(name)
            return host
        now = time.monotonic()
        while len(self._hosts) >= self.max_hosts:
            old = next((n for n, h in itertools.islice(self._hosts.items(), 64)
                        if not h.in_flight and h.next_start <= now), None)
            if old is None:
                break  # every record holds a slot or a gap: over the bound for a while
            del self._hosts[old]
        host = self._hosts[name] = _Host(self.delay)
        return host
