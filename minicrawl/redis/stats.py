"""Crawl counters shared by every process of a crawl, in the Redis hash ``mc:{NAME}:stats``.

:class:`RedisStats` is a :class:`minicrawl.stats.Stats` whose ``add`` also adds to the hash (one
pipelined round trip per call, which the crawler makes once per page), and whose ``counts``,
``elapsed`` and ``snapshot`` describe the whole crawl: every process then ends with the same
numbers, and ``run.py --redis URL --crawl NAME --status`` prints them from anywhere. ``stats[name]``
stays this process's own count (e.g. whether *this* process was interrupted).

The hash also holds ``started_at_ms`` (Redis's clock when the first process joined),
``finished_at_ms`` (the last process to finish) and ``processes`` (how many joined).
"""

from __future__ import annotations

from minicrawl.errors import RedisUnavailable
from minicrawl.redis.conn import SharedRedis, reply_int
from minicrawl.stats import Stats, StatsSnapshot, StatValue

#: Fields of the hash that are not counters.
META = ("started_at_ms", "finished_at_ms", "processes")

JOIN_SCRIPT = """
-- KEYS: stats.  Returns Redis's clock in ms.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSETNX', KEYS[1], 'started_at_ms', now)
redis.call('HINCRBY', KEYS[1], 'processes', 1)
return now
"""

FINISH_SCRIPT = """
-- KEYS: stats.  finished_at_ms = the latest finish of any process.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now > tonumber(redis.call('HGET', KEYS[1], 'finished_at_ms') or '0') then
  redis.call('HSET', KEYS[1], 'finished_at_ms', now)
end
return now
"""

NOW_SCRIPT = """
local t = redis.call('TIME')
return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""


def read_shared(shared: SharedRedis) -> dict[str, int]:
    """The crawl's stats hash as ints (empty if the crawl never started)."""
    raw = shared.call("reading stats", lambda: shared.client.hgetall(shared.key("stats")))
    return {name: int(value) for name, value in raw.items()}


def shared_elapsed(shared: SharedRedis, fields: dict[str, int]) -> float:
    """Seconds from the first process's start to the last one's finish (or to now)."""
    started = fields.get("started_at_ms")
    if started is None:
        return 0.0
    end = fields.get("finished_at_ms") or reply_int(shared.eval("reading the clock", NOW_SCRIPT,
                                                                [shared.key("stats")], []))
    return max(0.0, (end - started) / 1000)


class RedisStats(Stats):
    """Thread-safe counters, kept locally and added to the crawl's shared hash."""

    def __init__(self, shared: SharedRedis) -> None:
        super().__init__()
        self._shared = shared
        self._key = shared.key("stats")
        shared.eval("joining the crawl's stats", JOIN_SCRIPT, [self._key], [])
        self._finish_recorded = False

    def add(self, counts: dict[str, int] | None = None, **more: int) -> None:
        super().add(counts, **more)
        merged = dict(counts or {})
        for name, value in more.items():
            merged[name] = merged.get(name, 0) + value
        if not merged or self._shared.failure is not None:
            return

        def run() -> None:
            pipe = self._shared.client.pipeline(transaction=False)
            for name, value in merged.items():
                pipe.hincrby(self._key, name, value)
            pipe.execute()

        try:
            self._shared.call("adding to the shared stats", run)
        except RedisUnavailable:
            pass  # kept locally; the crawl stops and reports the failure through ToDo

    def counts(self) -> dict[str, int]:
        """The whole crawl's counters (this process's own if Redis is lost)."""
        if self._shared.failure is None:
            try:
                return {k: v for k, v in read_shared(self._shared).items() if k not in META}
            except RedisUnavailable:
                pass
        return super().counts()

    @property
    def elapsed(self) -> float:
        if self._shared.failure is None:
            try:
                if self.finished is not None and not self._finish_recorded:
                    self._shared.eval("recording the finish", FINISH_SCRIPT, [self._key], [])
                    self._finish_recorded = True
                return shared_elapsed(self._shared, read_shared(self._shared))
            except RedisUnavailable:
                pass
        return super().elapsed

    def snapshot(self, **extra: StatValue) -> StatsSnapshot:
        """The whole crawl's stats, plus ``processes`` (how many joined it)."""
        snap = super().snapshot(**extra)
        if self._shared.failure is None:
            try:
                snap["processes"] = read_shared(self._shared).get("processes", 0)
            except RedisUnavailable:
                pass
        return snap
