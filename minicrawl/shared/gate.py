"""Per-host politeness across processes: one next-allowed time per host, kept in Redis.

A per-process delay is not polite when ten processes crawl the same host: each waits its delay and
the host sees ten times the rate. :class:`RedisHostGate` keeps, for each host, the time its next
request may start (``mc:NAME:host:{HOST}``, Redis's clock, so machines need not agree on the time)
and hands out slots atomically: ``reserve(host, delay)`` books the next free slot and returns how
long the caller must wait for it. Callers that must not sleep (a worker other hosts need) can
instead put the item back in ToDo with ``not_before = now + wait``.

This is the shared half of :mod:`minicrawl.politeness` (per-host delay, robots.txt, slots, for
one process): once its own slot check passes, ``Politeness.admit`` asks the gate
``try_start(host, gap)``; a non-zero answer is a WAIT until ``now + answer``.
"""

from __future__ import annotations

from minicrawl.shared.conn import SharedRedis

RESERVE_SCRIPT = """
-- KEYS: the host's key; ARGV: delay ms.  Returns the ms to wait for the booked slot.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local at = math.max(now, tonumber(redis.call('GET', KEYS[1]) or '0'))
local delay = tonumber(ARGV[1])
-- The key outlives the slot a little, then disappears: idle hosts cost no memory.
redis.call('SET', KEYS[1], at + delay, 'PX', at + delay - now + 60000)
return at - now
"""

TRY_SCRIPT = """
-- KEYS: the host's key; ARGV: gap ms.  0: go now (the next start is booked gap ms later);
-- otherwise the ms until the host is free, nothing booked.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local free = tonumber(redis.call('GET', KEYS[1]) or '0')
if free > now then return free - now end
redis.call('SET', KEYS[1], now + tonumber(ARGV[1]), 'PX', tonumber(ARGV[1]) + 60000)
return 0
"""


class RedisHostGate:
    """Shared per-host next-allowed times for the processes of one crawl."""

    def __init__(self, shared: SharedRedis) -> None:
        self._shared = shared

    def key(self, host: str) -> str:
        # The host is the hash tag: hosts spread over the cluster's nodes.
        return f"mc:{self._shared.name}:host:{{{host.lower()}}}"

    def reserve(self, host: str, delay: float) -> float:
        """Book ``host``'s next request slot, ``delay`` seconds after the previous one (by any
        process); return the seconds to wait before sending the request (0.0 if none)."""
        waited = self._shared.eval("booking a host slot", RESERVE_SCRIPT, [self.key(host)],
                                   [max(0, round(delay * 1000))])
        return int(waited) / 1000

    def try_start(self, host: str, gap: float) -> float:
        """Start a request on ``host`` now if no process started one less than its gap ago:
        0.0 (go; the next start is booked ``gap`` seconds on), else the seconds until it is
        free (nothing booked: the caller puts the URL back in ToDo with that not-before)."""
        waited = self._shared.eval("asking for a host slot", TRY_SCRIPT, [self.key(host)],
                                   [max(0, round(gap * 1000))])
        return int(waited) / 1000
