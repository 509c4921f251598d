"""The ToDo queue: URLs waiting to be fetched, by host, and how the crawl knows it is over.

It is the core's ``Frontier`` (:mod:`minicrawl.core.interfaces`: ``put``, ``take``, ``done``,
``stop``; its contract suite is ``tests/core/test_todo.py``) with what a polite crawler needs
(the Mercator design: one FIFO queue per host, and hosts ordered by the time they may next be
asked):

* ``take()`` hands out only a URL whose host may be asked *now*: its gap since the host's last
  request has passed and it has fewer than ``per_host`` requests in flight. Taking the URL takes
  that slot (the next start on the host is booked one gap later). Among the hosts that may be
  asked, the oldest URL comes first, so with no pacing the order is the order of ``put``:
  breadth-first. Within a host it always is.
* ``claim``/``release`` are the slot's two ends for :mod:`minicrawl.politeness`: a request
  starts (on the slot ``take`` gave, or a new one), a request ended (the host's next start is
  then at least ``gap`` after the end with ``per_host=1``, and after a ``pause``).
  A slot given with a URL and never used (robots.txt says no) is handed back unbooked by
  ``put_back`` or ``done``, so a refused URL costs its host no gap.
* ``put_back(item)``: the URL could not be fetched yet (its robots.txt was just fetched, or is
  being fetched): it goes back to the *head* of its host's queue, in its old turn.
* ``put(item, not_before=t)`` holds an item back until time ``t`` (a retry with backoff)
  without any worker sleeping on it; it then joins the tail of its host's queue.
* ``take()`` returns ``None`` when the crawl is over: nothing is queued *and* no worker is busy
  (every item handed out has been marked ``done``), or ``stop()`` was called.

That last rule is the whole termination argument: a busy worker may still put new links, so
an empty queue alone does not mean the crawl is done.

Idle hosts' records (no URL queued, none in flight, gap over) are forgotten beyond
``max_hosts``, oldest idle first: memory follows the hosts being crawled, not all hosts seen.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field

from minicrawl.core.interfaces import Item
from minicrawl.urls import host_of

MAX_HOSTS = 50_000  # idle host records kept at most (a few hundred bytes each)


@dataclass(eq=False)
class _Host:
    """One host's queue and clock."""

    gap: float
    queue: deque[tuple[int, Item]] = field(default_factory=deque)  # (seq, item), FIFO
    back: list[tuple[int, Item]] = field(default_factory=list)  # put back: heap by old seq
    in_flight: int = 0  # slots taken (by take or claim) and not yet released
    next_start: float = 0.0  # no request starts before this time
    epoch: int = 0  # heap entries with another epoch are stale

    def waiting(self) -> int:
        return len(self.queue) + len(self.back)

    def head_seq(self) -> int:
        if self.back and (not self.queue or self.back[0][0] < self.queue[0][0]):
            return self.back[0][0]
        return self.queue[0][0]


@dataclass(eq=False)
class _Lease:
    """A slot on a host held by one worker thread."""

    name: str
    host: _Host
    item: Item | None  # the item ``take`` gave with the slot (None: a slot ``claim`` took)
    seq: int  # the item's turn, kept if it is put back
    prev: float  # the host's next_start before this slot booked its own
    booked: float  # the next_start this slot booked
    used: bool = False  # a request started on it
    started: float = 0.0  # when
    released: bool = False


class ToDo:
    """Per-host FIFO queues of :class:`Item`, paced hosts, delayed items and termination.

    ``per_host`` (None: no limit) and ``delay`` (the default gap) are the politeness options;
    ``ToDo()`` is a plain breadth-first queue.
    """

    def __init__(self, per_host: int | None = None, delay: float = 0.0,
                 max_hosts: int = MAX_HOSTS) -> None:
        self.per_host = per_host if per_host is not None else 1 << 30
        self.delay = delay
        self.max_hosts = max_hosts
        self._hosts: dict[str, _Host] = {}
        self._idle: OrderedDict[str, None] = OrderedDict()  # hosts that could be forgotten
        self._due: list[tuple[int, int, str]] = []  # (head seq, epoch, host): may start now
        self._timed: list[tuple[float, int, str]] = []  # (next_start, epoch, host)
        self._later: list[tuple[float, int, Item]] = []  # heap of (not_before, seq, item)
        self._seq = itertools.count()
        self._waiting = 0  # items in host queues
        self._unfinished = 0  # queued + delayed + handed out and not yet done
        self._closed = False
        self._cond = threading.Condition()
        self._local = threading.local()

    # -- putting -----------------------------------------------------------------------------

    def put(self, item: Item, not_before: float | None = None) -> None:
        """Add ``item``; with ``not_before`` (a ``time.monotonic()`` value) hold it until then."""
        with self._cond:
            self._unfinished += 1
            if not_before is None or not_before <= time.monotonic():
                self._enqueue(item)
            else:
                heapq.heappush(self._later, (not_before, next(self._seq), item))
            self._cond.notify()

    def put_many(self, items: list[Item]) -> None:
        """Add several ready items under one lock acquisition (all the new links of a page)."""
        if not items:
            return
        with self._cond:
            self._unfinished += len(items)
            for item in items:
                self._enqueue(item)
            self._cond.notify(len(items))

    def put_back(self, item: Item, not_before: float | None = None) -> None:
        """Give back ``item`` (from this thread's ``take``) unfetched: it returns to the head of
        its host's queue in its old turn; with ``not_before`` the host waits until then."""
        with self._cond:
            self._unfinished += 1
            lease = self._drop_lease(lambda lease: lease.item is item)
            seq = lease.seq if lease is not None else next(self._seq)
            if lease is not None and not lease.released:
                self._free(lease)
            host = self._host(host_of(item.url))
            heapq.heappush(host.back, (seq, item))
            self._waiting += 1
            if not_before is not None:
                host.next_start = max(host.next_start, not_before)
            self._schedule(host_of(item.url), host)
            self._cond.notify()

    def _enqueue(self, item: Item) -> None:
        name = host_of(item.url)
        host = self._host(name)
        host.queue.append((next(self._seq), item))
        self._waiting += 1
        if host.waiting() == 1:  # it had nothing queued: it was in no heap
            self._schedule(name, host)

    # -- taking --------------------------------------------------------------------------------

    def take(self) -> Item | None:
        """The next item whose host may be asked now, waiting if needed (its slot on the host
        is taken); ``None`` once the crawl is over."""
        with self._cond:
            while True:
                if self._closed:
                    return None
                now = time.monotonic()
                self._promote(now)
                while self._due:
                    _, epoch, name = heapq.heappop(self._due)
                    host = self._hosts.get(name)
                    if host is None or host.epoch != epoch:
                        continue
                    if not host.waiting() or host.in_flight >= self.per_host \
                            or host.next_start > now:
                        self._schedule(name, host, now)  # (the same now: no ping-pong)
                        continue
                    return self._take(name, host, now)
                if self._unfinished == 0:
                    self._cond.notify_all()  # wake the other idle workers: we are done
                    return None
                wake = min(self._later[0][0] if self._later else float("inf"),
                           self._timed[0][0] if self._timed else float("inf"))
                self._cond.wait(None if wake == float("inf") else max(0.0, wake - now))

    def _promote(self, now: float) -> None:
        """Delayed items that are due join their hosts; hosts whose gap has passed become due."""
        while self._later and self._later[0][0] <= now:
            self._enqueue(heapq.heappop(self._later)[2])
        while self._timed and self._timed[0][0] <= now:
            _, epoch, name = heapq.heappop(self._timed)
            host = self._hosts.get(name)
            if host is not None and host.epoch == epoch:
                self._schedule(name, host, now)

    def _take(self, name: str, host: _Host, now: float) -> Item:
        seq, item = heapq.heappop(host.back) if host.back and host.head_seq() == host.back[0][0] \
            else host.queue.popleft()
        self._waiting -= 1
        host.in_flight += 1
        prev, host.next_start = host.next_start, now + host.gap
        self._leases().append(_Lease(name, host, item, seq, prev, host.next_start))
        self._schedule(name, host)
        return item

    def done(self, item: Item) -> None:
        """Mark ``item``, which this thread took, as finished (after its links were put); its
        slot on the host, if still held, is handed back."""
        with self._cond:
            if self._unfinished <= 0:
                raise ValueError("done() called more times than items were put")
            lease = self._drop_lease(lambda lease: lease.item is not None)
            if lease is not None and not lease.released:
                self._free(lease)
            self._unfinished -= 1
            if self._unfinished == 0:
                self._cond.notify_all()

    # -- the host's slots (politeness) ---------------------------------------------------------

    def claim(self, name: str, gap: float) -> float:
        """A request to host ``name`` starts now: 0.0 if this thread holds an unused slot on it
        (from ``take``) or one is free now (taken); else the seconds until its gap is over
        (a tiny positive number when its slots are all in flight)."""
        with self._cond:
            host = self._host(name)
            host.gap = gap
            now = time.monotonic()
            for lease in self._leases():
                if lease.host is host and not lease.used and not lease.released:
                    lease.used, lease.started = True, now
                    host.next_start = max(host.next_start, now + gap)
                    return 0.0
            if host.in_flight >= self.per_host:
                return 1e-6
            if host.next_start > now:
                return host.next_start - now
            host.in_flight += 1
            host.next_start = now + gap
            self._leases().append(_Lease(name, host, None, -1, now, host.next_start, used=True,
                                         started=now))
            self._schedule(name, host)
            return 0.0

    def release(self, name: str, gap: float, pause: float = 0.0) -> None:
        """The request this thread started on host ``name`` is over: its slot is free; the next
        start is ``pause`` from now at the earliest, and with ``per_host=1`` (one request at a
        time) ``gap`` from now: the server sees every gap whole. With more in flight the gap runs
        from starts only, or a slow answer would stretch every gap by its own time."""
        with self._cond:
            lease = next((lease for lease in self._leases()
                          if lease.name == name and lease.used and not lease.released), None)
            if lease is None:
                return
            lease.released = True
            if lease.item is None:
                self._leases().remove(lease)
            host = lease.host
            host.in_flight -= 1
            host.gap = gap
            now = time.monotonic()
            # (the gap may have been raised meanwhile: robots.txt's Crawl-delay)
            host.next_start = max(host.next_start, lease.started + gap, now + pause,
                                  now + gap if self.per_host == 1 else 0.0)
            self._schedule(name, host)
            self._cond.notify()

    def _free(self, lease: _Lease) -> None:
        """Hand back a slot (lock held); unused, its booking is undone if no one booked after."""
        host = lease.host
        host.in_flight -= 1
        if not lease.used and host.next_start == lease.booked:
            host.next_start = lease.prev
        elif lease.used:
            host.next_start = max(host.next_start, time.monotonic() + host.gap)
        self._schedule(lease.name, host)
        self._cond.notify()

    def _leases(self) -> list[_Lease]:
        leases = getattr(self._local, "leases", None)
        if leases is None:
            leases = self._local.leases = []
        return leases

    def _drop_lease(self, match) -> _Lease | None:  # noqa: ANN001 - a predicate on _Lease
        leases = self._leases()
        for i, lease in enumerate(leases):
            if match(lease):
                return leases.pop(i)
        return None

    # -- hosts ---------------------------------------------------------------------------------

    def _host(self, name: str) -> _Host:
        host = self._hosts.get(name)
        if host is None:
            if len(self._hosts) >= self.max_hosts:
                self._forget_idle(time.monotonic())
            host = self._hosts[name] = _Host(gap=self.delay)
        return host

    def _forget_idle(self, now: float) -> None:
        """Drop the oldest idle hosts whose gap is over (their record holds nothing needed)."""
        while len(self._hosts) >= self.max_hosts and self._idle:
            name = next(iter(self._idle))
            host = self._hosts.get(name)
            if host is not None and (host.waiting() or host.in_flight or host.next_start > now):
                if host.waiting() or host.in_flight:
                    del self._idle[name]  # not idle after all
                    continue
                return  # the oldest idle host's gap is still running: keep all for now
            del self._idle[name]
            self._hosts.pop(name, None)

    def _schedule(self, name: str, host: _Host, now: float | None = None) -> None:
        """Put ``host`` in the heap it belongs to at ``now`` (lock held); older entries go
        stale."""
        now = time.monotonic() if now is None else now
        host.epoch += 1
        if not host.waiting():
            if host.in_flight == 0:
                self._idle[name] = None
                self._idle.move_to_end(name)
                if len(self._hosts) > self.max_hosts:
                    self._forget_idle(now)
            return
        if host.in_flight >= self.per_host:
            return  # a release reschedules it
        if host.next_start <= now:
            heapq.heappush(self._due, (host.head_seq(), host.epoch, name))
        else:
            heapq.heappush(self._timed, (host.next_start, host.epoch, name))

    # -- stopping ------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop handing out items: every ``take`` now returns ``None`` (Ctrl-C, page cap)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def drain(self) -> list[Item]:
        """Remove and return everything not yet handed out (queued and delayed), oldest first."""
        with self._cond:
            entries = [(seq, item) for host in self._hosts.values()
                       for seq, item in (*host.back, *host.queue)]
            entries += [(seq, item) for _, seq, item in self._later]
            for name, host in self._hosts.items():
                host.queue.clear()
                host.back.clear()
                self._schedule(name, host)
            self._later.clear()
            self._waiting = 0
            self._unfinished -= len(entries)
            self._cond.notify_all()
            return [item for _, item in sorted(entries, key=lambda entry: entry[0])]

    def __len__(self) -> int:
        """Items waiting (queued or delayed), not counting those being fetched."""
        with self._cond:
            return self._waiting + len(self._later)

    @property
    def hosts(self) -> int:
        """Host records kept (hosts with URLs queued or in flight, and recent idle ones)."""
        return len(self._hosts)

    @property
    def unfinished(self) -> int:
        """Items put and not yet marked done (waiting plus in flight)."""
        return self._unfinished

    @property
    def stopped(self) -> bool:
        return self._closed
