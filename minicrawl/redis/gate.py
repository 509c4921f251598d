"""Per-host politeness across processes: the host's pace, slots and page count, kept in Redis.

A per-process delay is not polite when ten processes crawl the same host: each waits its delay and
the host sees ten times the rate. :class:`RedisHostGate` is the pace
(:class:`~minicrawl.seams.HostPace`) of a shared crawl: every request of every process to a
host asks it first, atomically, in one Lua script on the host's keys (Redis's clock, so machines
need not agree on the time):

* ``mc:NAME:host:{HOST}`` (hash): ``next``, the time the next request may start (the gap after the
  last start, and after the last end with ``--per-host 1``, and after a Retry-After pause);
  ``booked``, the last slot handed to a waiting URL; ``dur``, the mean request time.
* ``mc:NAME:lease:{HOST}`` (sorted set): the requests in flight, each a lease that expires unless
  its process renews it (a heartbeat every ``lease / 4`` seconds). ``--per-host`` counts them, so
  it holds across processes, and a process killed with ``kill -9`` frees its slots when its leases
  expire instead of keeping them forever.
* ``mc:NAME:book:{HOST}`` (sorted set): URLs that had to wait, each with the slot booked for it.
  A URL that must wait is not sent to the back of the line: it gets the next free slot, one gap
  after the last booked, and goes back to ToDo until then; when it returns, that slot is its own
  (a URL without a booking may not take the host while others are booked). A URL refused
  (robots.txt, the host's page cap) gives its booking up at once; bookings whose URL never came
  back (its process died) lapse after a grace time.
* ``mc:NAME:pages:{HOST}`` (set): the requests the host has had, for ``--max-pages-per-host``, by
  lease id: counted in the same script that takes the slot, so the cap holds exactly across
  processes, and a call retried after a lost answer (a dropped connection) counts once.

run.py's worker never sleeps on the gate: an answer to wait is a WAIT until ``now + wait``
(the item goes back to ToDo until then; the core's worker, given a pace, sleeps instead).
"""

from __future__ import annotations

import itertools
import logging
import threading
import uuid

from minicrawl.core.interfaces import Item
from minicrawl.errors import RedisUnavailable
from minicrawl.redis.conn import SharedRedis, reply_int
from minicrawl.seams import FULL, GO, Turn

log = logging.getLogger("minicrawl")

#: A booking whose URL has not come back this long after its slot is dropped.
BOOKING_GRACE_MS = 3000

TAKE_SCRIPT = """
-- KEYS: host hash, leases, bookings, pages
-- ARGV: gap ms, per_host, lease ms, url, lease id, cap (-1: none), grace ms, mode
-- mode 'page': a request for url; 'robots': its robots.txt first (url keeps its booking, no
-- page counted); 'book': only book url a slot (it waits for something else meanwhile).
-- Returns 0: go (slot taken, page counted); -1: the host had its cap; else ms to wait.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local gap, n, lease, cap = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]),
                           tonumber(ARGV[6])
-- The pages are the leases that counted: a call retried after a lost answer counts once.
if redis.call('SISMEMBER', KEYS[4], ARGV[5]) == 1 then return 0 end
if cap >= 0 and redis.call('SCARD', KEYS[4]) >= cap then
  redis.call('ZREM', KEYS[3], ARGV[4])  -- refused: its booking, if any, holds up no one
  return -1
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)  -- leases of processes gone
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - tonumber(ARGV[7]))
local nxt = tonumber(redis.call('HGET', KEYS[1], 'next') or '0')
local busy = redis.call('ZCARD', KEYS[2]) >= n
local mine = redis.call('ZSCORE', KEYS[3], ARGV[4])
local mode = ARGV[8]
if mode == 'book' and mine then return math.max(tonumber(mine) - now, 50) end
if mode ~= 'book' and not busy and nxt <= now
    and (mine or redis.call('ZCARD', KEYS[3]) == 0) then
  if mine and mode == 'page' then redis.call('ZREM', KEYS[3], ARGV[4]) end
  redis.call('ZADD', KEYS[2], now + lease, ARGV[5])
  redis.call('HSET', KEYS[1], 'next', now + gap)
  if cap >= 0 then redis.call('SADD', KEYS[4], ARGV[5]) end
  redis.call('PEXPIRE', KEYS[1], gap + lease + 600000)
  redis.call('PEXPIRE', KEYS[2], lease + 600000)
  return 0
end
if mine and mode ~= 'book' then  -- it holds a booking: it waits for the gap or a free slot
  if busy then return math.max(nxt - now, 10) end
  return math.max(nxt - now, 1)
end
-- Book the next free slot: one spacing after the last booked, and not before the host is free.
local spacing = gap
if n == 1 then  -- the next start waits for the end too: add the usual request time, capped
  spacing = gap + math.min(tonumber(redis.call('HGET', KEYS[1], 'dur') or '0'), gap / 10)
end
local last = tonumber(redis.call('HGET', KEYS[1], 'booked') or '0')
local slot = math.max(now + 1, nxt, last + spacing)
redis.call('ZADD', KEYS[3], slot, ARGV[4])
redis.call('HSET', KEYS[1], 'booked', slot)
redis.call('PEXPIRE', KEYS[3], slot - now + tonumber(ARGV[7]) + 600000)
redis.call('PEXPIRE', KEYS[1], slot - now + lease + 600000)
return slot - now
"""

RELEASE_SCRIPT = """
-- KEYS: host hash, leases; ARGV: lease id, gap ms, pause ms, lease ms, per_host
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local held = redis.call('ZSCORE', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local nxt = math.max(tonumber(redis.call('HGET', KEYS[1], 'next') or '0'),
                     now + tonumber(ARGV[3]))
if ARGV[5] == '1' then nxt = math.max(nxt, now + tonumber(ARGV[2])) end  -- one at a time
if held then  -- its start (or last renewal); the gap may have been raised since
  local started = tonumber(held) - tonumber(ARGV[4])
  nxt = math.max(nxt, started + tonumber(ARGV[2]))
  -- the request's time, for spacing the bookings of a one-at-a-time host
  local took = math.max(0, now - started)
  local dur = tonumber(redis.call('HGET', KEYS[1], 'dur') or took)
  redis.call('HSET', KEYS[1], 'dur', math.floor(0.8 * dur + 0.2 * took))
end
redis.call('HSET', KEYS[1], 'next', nxt)
redis.call('PEXPIRE', KEYS[1], nxt - now + 600000)
return 1
"""

RENEW_SCRIPT = """
-- KEYS: leases; ARGV: lease ms, lease ids...  Renews the leases still held.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[i]) end
return 1
"""


class RedisHostGate:
    """The per-host pace, slots and page counts shared by the processes of one crawl."""

    def __init__(self, shared: SharedRedis, per_host: int = 1, lease: float = 30.0) -> None:
        self._shared = shared
        self.per_host = per_host
        self._lease_ms = max(1000, round(lease * 1000))
        self._prefix = uuid.uuid4().hex[:12]
        self._ids = itertools.count()
        self._leases: dict[tuple[Item, str], list[str]] = {}  # (item, host) → its lease ids
        self._held: dict[str, str] = {}  # lease id → host, for the heartbeat
        self._lock = threading.Lock()
        self._full: set[str] = set()  # hosts the gate said had their cap (never un-full)
        self._closed = threading.Event()  # close(): the heartbeat ends
        self._heartbeat = threading.Thread(target=self._renew_loop, name="gate-heartbeat",
                                           daemon=True)
        self._heartbeat.start()

    def key(self, kind: str, host: str) -> str:
        """The Redis key of ``host``'s ``kind`` (host, lease, book, pages); the host is the hash
        tag: a host's keys share a cluster slot, hosts spread over nodes."""
        return f"mc:{self._shared.name}:{kind}:{{{host.lower()}}}"

    def take(self, item: Item, host: str, gap: float = 0.0) -> float:
        """The core's Pace: 0.0 if a request for ``item`` starts on ``host`` now, else the
        seconds to wait (:meth:`take_turn` without a cap)."""
        return self.take_turn(item, host, gap).wait

    def take_turn(self, item: Item, host: str, gap: float = 0.0, cap: int | None = None,
                  robots: bool = False) -> Turn:
        """Go: a request for ``item`` (or, with ``robots``, for its robots.txt first) starts now
        (slot leased to the item, page counted against ``cap``); full: the host had its ``cap``
        pages; else wait the seconds until the slot booked for its URL (the caller puts the item
        back in ToDo until then)."""
        return self._ask(item, host, gap, cap, "robots" if robots else "page")

    def book(self, item: Item, host: str, gap: float = 0.0) -> float:
        """Book ``item`` its turn on ``host`` while it waits for something else (its robots.txt,
        fetched by another worker): the seconds until its slot."""
        return self._ask(item, host, gap, None, "book").wait

    def _ask(self, item: Item, host: str, gap: float, cap: int | None, mode: str) -> Turn:
        url = item.url
        lease_id = f"{self._prefix}:{next(self._ids)}"
        keys = [self.key(kind, host) for kind in ("host", "lease", "book", "pages")]
        answer = reply_int(self._shared.eval(
            "asking for a host slot", TAKE_SCRIPT, keys,
            [max(0, round(gap * 1000)), self.per_host, self._lease_ms, url, lease_id,
             -1 if cap is None or mode != "page" else cap,
             max(BOOKING_GRACE_MS, round(4 * gap * 1000)), mode]))
        if answer == 0:
            with self._lock:
                self._leases.setdefault((item, host), []).append(lease_id)
                self._held[lease_id] = host
            return GO
        if answer < 0:  # (the script's word for full)
            self._full.add(host)
            return FULL
        return Turn(False, answer / 1000)

    def forget(self, item: Item, host: str) -> None:
        """``item`` was refused (robots.txt): the slot booked for it goes now, not after the
        grace time, so the URLs booked after it need not wait behind it."""
        self._shared.call("dropping a host booking",
                          lambda: self._shared.client.zrem(self.key("book", host), item.url))

    def release(self, item: Item, host: str, gap: float = 0.0, pause: float = 0.0) -> None:
        """``item``'s request to ``host`` is over: its lease is given back."""
        with self._lock:
            ids = self._leases.get((item, host))
            if not ids:
                return
            lease_id = ids.pop(0)
            if not ids:
                del self._leases[(item, host)]
            self._held.pop(lease_id, None)
        self._shared.eval("giving back a host slot", RELEASE_SCRIPT,
                          [self.key("host", host), self.key("lease", host)],
                          [lease_id, max(0, round(gap * 1000)), max(0, round(pause * 1000)),
                           self._lease_ms, self.per_host])

    def full(self, host: str, cap: int) -> bool:
        """True once the gate refused a page of ``host`` for its cap (no round trip)."""
        return host in self._full

    def in_flight(self, host: str) -> int:
        """Unexpired leases on ``host``, by all processes (for tests and status)."""
        seconds, micros = self._shared.call("reading leases", self._shared.client.time)
        now_ms = int(seconds) * 1000 + int(micros) // 1000
        return int(self._shared.call("reading leases", lambda: self._shared.client.zcount(
            self.key("lease", host), now_ms, "+inf")))

    def close(self) -> None:
        """Stop renewing this process's leases: the heartbeat thread has ended when this
        returns (a renewal under way finishes first: in an outage, once its retries give up).
        A lease still held lapses after its lease time, as a killed process's does. The
        connection is the caller's to close."""
        self._closed.set()
        self._heartbeat.join()

    def _renew_loop(self) -> None:
        while not self._closed.wait(self._lease_ms / 4000):
            with self._lock:
                by_host: dict[str, list[str]] = {}
                for lease_id, host in self._held.items():
                    by_host.setdefault(host, []).append(lease_id)
            if not by_host:
                continue
            try:
                self._shared.eval_many("renewing host slots", [
                    (RENEW_SCRIPT, [self.key("lease", host)], [self._lease_ms, *ids])
                    for host, ids in by_host.items()])
            except RedisUnavailable:
                return  # the crawl stops on its own; the leases lapse
            except Exception:  # the heartbeat must outlive a surprise; expiry is the fallback
                log.exception("host gate heartbeat failed")
