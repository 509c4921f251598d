"""ToDo in Redis: one queue for many processes, nothing lost when one of them dies.

:class:`RedisToDo` is run.py's ``PoliteFrontier`` (:mod:`minicrawl.seams`: the core's ``Frontier``
and more; its contract suite is ``tests/core/test_todo.py``), as
:class:`minicrawl.frontier.todo.ToDo` is, so the crawl loop does not know which one it
has. Two differences the contract allows for: an item a killed process held is handed out again
(to be fetched again; the replay tokens of :mod:`minicrawl.redis.conn` keep its effects from
doubling), and ``stop`` stops this process only: the queue stays for the others.

Why a Stream with a consumer group (and not an LMOVE reliable queue)
--------------------------------------------------------------------
Items are entries ``{j: [url, depth, referrer, attempt]}`` of the stream ``mc:{NAME}:todo:stream``.
A worker takes one with ``XREADGROUP`` (it then sits in the group's pending entries list, the PEL,
under this process's consumer name) and acknowledges it with ``XACK`` once the page's links are in
ToDo and its ``--out`` line is flushed to the OS (:mod:`minicrawl.records.output`). A process killed
with ``kill -9`` leaves its entries in the PEL; ``XAUTOCLAIM`` hands entries
idle longer than ``reclaim_after`` seconds to a live process, which fetches them again. The PEL
*is* the in-flight list, with idle times and delivery counts kept by Redis: the LMOVE pattern needs
a processing list per worker, a registry of those lists and a reaper deciding which are dead, all
of which we would have to write and get right. A live worker's long fetch must not look dead, so a
heartbeat thread re-claims this process's own in-flight entries (``XCLAIM``, resetting their idle
time) every ``reclaim_after / 4`` seconds.

Termination across processes
----------------------------
``mc:{NAME}:todo:unfinished`` counts items put and not yet acknowledged (the local ToDos count
the items queued and the items taken and not yet done; this one counts both at once):
incremented in the same script that adds entries, decremented in the same script that
acknowledges one — and only if ``XACK`` really removed it from the PEL, so an entry processed
twice (reclaimed from a slow but live process) is counted down once. A killed process's entries
stay counted until whoever reclaims them acknowledges them. ``take`` returns ``None`` when, in one
atomic script, nothing is ready, nothing is reclaimable, the counter is 0 and no process is still
putting its seeds (``todo:starting``: each process registers there until its first ``take``, so a
process started a moment after another cannot see an empty crawl before the first one's seeds are
in and quit). A process that leaves before its first ``take`` (refused as it joins, stopped)
withdraws its own registration as it closes: else the others could not end for
``STARTING_GRACE_MS``.

Delayed items (a retry: its ``Item.not_before``, a time on this process's ``time.monotonic()``,
which no other process shares) are put as a delay from now: they wait in the sorted set
``todo:delayed`` by due time (Redis's clock, one for all machines) and are moved into the stream
when due; a payload never holds ``not_before`` (a taken item's is 0.0). If the crawl's keys
vanish (Redis restarted without persistence) every process stops with :class:`RedisUnavailable`
instead of taking the empty queue for a finished crawl.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid

from minicrawl.core.interfaces import Item
from minicrawl.errors import RedisUnavailable
from minicrawl.redis.conn import ScriptCall, SharedRedis, reply_int, reply_list, reply_str

log = logging.getLogger("minicrawl")

GROUP = "workers"
#: How long a process counts as "still putting its seeds" if it dies before its first take.
STARTING_GRACE_MS = 30_000
#: Items per script call when putting many.
BATCH = 1000
#: Takers an item may have: one more reclaim after this many died holding it and it is given up
#: (a page that kills every process that fetches it would otherwise go round for ever).
MAX_TAKERS = 4

INIT_SCRIPT = """
-- KEYS: stream, meta, starting; ARGV: group, consumer, grace ms, new epoch
pcall(redis.call, 'XGROUP', 'CREATE', KEYS[1], ARGV[1], '0', 'MKSTREAM')  -- exists: fine
redis.call('SET', KEYS[2], ARGV[4], 'NX')
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[3]), ARGV[2])
return redis.call('GET', KEYS[2])
"""

PUT_SCRIPT = """
-- KEYS: stream, delayed, unfinished, token; ARGV: token ttl, delay ms, payloads...
if redis.call('EXISTS', KEYS[4]) == 1 then return 0 end  -- a replay: already put
local delay = tonumber(ARGV[2])
if delay > 0 then
  local t = redis.call('TIME')
  local due = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + delay
  for i = 3, #ARGV do redis.call('ZADD', KEYS[2], due, ARGV[i]) end
else
  for i = 3, #ARGV do redis.call('XADD', KEYS[1], '*', 'j', ARGV[i]) end
end
redis.call('INCRBY', KEYS[3], #ARGV - 2)
redis.call('SET', KEYS[4], 1, 'EX', ARGV[1])
return #ARGV - 2
"""

POLL_SCRIPT = """
-- KEYS: stream, delayed, unfinished, starting, cursor, meta, stats, abandoned, chains
-- ARGV: group, consumer, min idle ms, epoch, '1' on this process's first poll, max takers
if redis.call('GET', KEYS[6]) ~= ARGV[4] then return {'lost'} end
-- An item, with the redirect chain waiting at its URL, if any (redis/chains.py): one trip.
local function taken(id, payload)
  return {'item', id, payload, redis.call('HGET', KEYS[9], cjson.decode(payload)[1]) or ''}
end
if ARGV[5] == '1' then redis.call('ZREM', KEYS[4], ARGV[2]) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, 100)) do
  redis.call('XADD', KEYS[1], '*', 'j', m)
  redis.call('ZREM', KEYS[2], m)
end
-- Entries a dead process took (a live one renews its own, even a hung worker's): the cursor
-- walks the whole PEL over successive polls.
local c = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3],
                     redis.call('GET', KEYS[5]) or '0-0', 'COUNT', 1)
redis.call('SET', KEYS[5], c[1])
if #c[2] > 0 then
  local id, payload = c[2][1][1], c[2][1][2][2]
  -- Deliveries: the first take and every reclaim (a heartbeat's XCLAIM JUSTID counts none).
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], id, id, 1)
  if #p == 1 and tonumber(p[1][4]) > tonumber(ARGV[6]) then
    -- Every one of its takers died holding it: given up, counted, kept to be looked at.
    redis.call('XACK', KEYS[1], ARGV[1], id)
    redis.call('XDEL', KEYS[1], id)
    redis.call('DECR', KEYS[3])
    redis.call('HINCRBY', KEYS[7], 'todo_abandoned', 1)
    redis.call('RPUSH', KEYS[8], payload)
    return {'abandoned', payload}
  end
  redis.call('HINCRBY', KEYS[7], 'todo_reclaimed', 1)
  return taken(id, payload)
end
local r = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', 1, 'STREAMS', KEYS[1], '>')
if r and #r[1][2] > 0 then return taken(r[1][2][1][1], r[1][2][1][2][2]) end
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
if tonumber(redis.call('GET', KEYS[3]) or '0') <= 0 and redis.call('ZCARD', KEYS[4]) == 0 then
  return {'done'}
end
return {'wait'}
"""

LEAVE_SCRIPT = """
-- KEYS: starting; ARGV: consumer.  This process's own registration only: another's still holds.
return redis.call('ZREM', KEYS[1], ARGV[1])
"""

DONE_SCRIPT = """
-- KEYS: stream, unfinished; ARGV: group, entry id
if redis.call('XACK', KEYS[1], ARGV[1], ARGV[2]) == 1 then
  redis.call('XDEL', KEYS[1], ARGV[2])
  return redis.call('DECR', KEYS[2])
end
return -1  -- already acknowledged (a replay, or the entry was reclaimed and finished elsewhere)
"""

HEARTBEAT_SCRIPT = """
-- KEYS: stream; ARGV: group, consumer, entry ids...  Resets the idle time of entries still ours.
local kept = 0
for i = 3, #ARGV do
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  if #p == 1 and p[1][2] == ARGV[2] then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'JUSTID')
    kept = kept + 1
  end
end
return kept
"""

LEN_SCRIPT = """
-- KEYS: stream, delayed; ARGV: group.  Entries waiting: not delivered, plus delayed.
local pending = redis.call('XPENDING', KEYS[1], ARGV[1])[1]
return redis.call('XLEN', KEYS[1]) - pending + redis.call('ZCARD', KEYS[2])
"""

def _encode(item: Item, nonce: str | None = None) -> str:
    # (not ``not_before``: a monotonic time means nothing to another process; it is a delay)
    fields: list[str | int | None] = [item.url, item.depth, item.referrer, item.attempt]
    if nonce is not None:  # delayed items are sorted-set members, which must be unique
        fields.append(nonce)
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False)


def _decode(payload: str) -> Item:
    return Item(*json.loads(payload)[:4])  # a delayed item's nonce follows its four fields


class RedisToDo:
    """The crawl's ToDo, shared by every process of crawl ``shared.name`` (see the module doc)."""

    def __init__(self, shared: SharedRedis, reclaim_after: float = 30.0) -> None:
        self._shared = shared
        self._reclaim_ms = max(1, round(reclaim_after * 1000))
        self._consumer = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        k = shared.key
        self._stream, self._delayed = k("todo:stream"), k("todo:delayed")
        self._unfinished, self._starting = k("todo:unfinished"), k("todo:starting")
        self._cursor, self._meta, self._stats = k("todo:cursor"), k("todo:epoch"), k("stats")
        self._abandoned = k("todo:abandoned")  # items every taker died with (MAX_TAKERS)
        self._chains = k("chains")  # redirect chains at their targets (redis/chains.py)
        #: URL taken → the redirect chain waiting at it as stored, "" for none: read in the
        #: same poll, so that RedisChains needs no round trip of its own per item.
        self.chains_taken: dict[str, str] = {}
        proposed = uuid.uuid4().hex
        self._epoch = reply_str(shared.eval(
            "joining the crawl", INIT_SCRIPT, [self._stream, self._meta, self._starting],
            [GROUP, self._consumer, STARTING_GRACE_MS, proposed]))
        #: Whether the crawl was under way (or over) before this process came: not started here.
        self.joined = self._epoch != proposed
        self._first_poll = True
        self._local = threading.local()  # ids this thread took and has not finished (a worker
        # holds one; ``done`` acknowledges the oldest)
        self._inflight: set[str] = set()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._ended = threading.Event()  # close(): the heartbeat ends, items in flight or not
        self.failure: RedisUnavailable | None = None
        self._heartbeat = threading.Thread(target=self._beat, name="todo-heartbeat", daemon=True)
        self._heartbeat.start()

    @property
    def consumer(self) -> str:
        """This process's consumer name in the group (host-pid-random)."""
        return self._consumer

    # ----------------------------------------------------------------- putting

    def put(self, item: Item) -> None:
        """Add ``item`` (one with a ``not_before`` ahead is held until then)."""
        self.put_many([item])

    def put_back(self, item: Item, not_before: float | None = None) -> None:
        """Give back an item that could not be fetched yet (its host's slot is booked in the
        host gate, which keeps its turn): it returns at ``not_before``."""
        self._put_later(item, 0.0 if not_before is None else not_before)

    def put_many(self, items: list[Item]) -> int:
        """Add several items: one script call for all the new links of a page (and one for each
        held until its ``not_before``: a retry). How many were queued: none when the put is a
        replay (another process seeded the same URLs, or this page's links were put before its
        worker was killed)."""
        ready = [item for item in items if not item.not_before]
        queued = self._put([_encode(item) for item in ready], 0,
                           [item.url for item in ready]) if ready else 0
        return queued + sum(self._put_later(item, item.not_before)
                            for item in items if item.not_before)

    def _put_later(self, item: Item, not_before: float) -> int:
        """Put ``item`` to be taken at ``not_before`` (this process's ``time.monotonic()``),
        written as the delay from now: Redis's clock makes it a due time."""
        delay = max(0, round((not_before - time.monotonic()) * 1000))
        payload = _encode(item, uuid.uuid4().hex[:8]) if delay else _encode(item)
        return self._put([payload], delay, [item.url])

    def _put(self, payloads: list[str], delay_ms: int, urls: list[str]) -> int:
        shared = self._shared
        token = shared.tokens.token(urls)
        calls: list[ScriptCall] = [
            (PUT_SCRIPT,
             [self._stream, self._delayed, self._unfinished,
              shared.key(f"todo:token:{token}.{start}")],
             [shared.token_ttl, delay_ms, *payloads[start:start + BATCH]])
            for start in range(0, len(payloads), BATCH)]
        return sum(map(reply_int, shared.eval_many("putting URLs in ToDo", calls)))

    # ----------------------------------------------------------------- taking

    def take(self) -> Item | None:
        """The next item (possibly one reclaimed from a dead process); ``None`` once the crawl is
        over everywhere, after ``stop()``, or when Redis is lost (see ``failure``)."""
        keys = [self._stream, self._delayed, self._unfinished, self._starting, self._cursor,
                self._meta, self._stats, self._abandoned, self._chains]
        pause = 0.002
        while not self._closed.is_set():
            first = self._first_poll
            try:
                answer = reply_list(self._shared.eval(
                    "taking an item from ToDo", POLL_SCRIPT, keys,
                    [GROUP, self._consumer, self._reclaim_ms, self._epoch, "1" if first else "0",
                     MAX_TAKERS]))
            except RedisUnavailable as e:
                self._fail(e)
                return None
            self._first_poll = False
            if answer[0] == "item":
                entry_id = reply_str(answer[1])
                with self._lock:
                    self._inflight.add(entry_id)
                ids = self._ids()
                ids.append(entry_id)
                item = _decode(reply_str(answer[2]))
                self.chains_taken[item.url] = reply_str(answer[3])
                self._shared.tokens.begin(entry_id, item.url)
                return item
            if answer[0] == "abandoned":  # told once, by the process that gave it up
                log.warning("gave up %s: %d processes died fetching it (kept in Redis as %s)",
                            _decode(reply_str(answer[1])).url, MAX_TAKERS, self._abandoned)
                continue
            if answer[0] == "done":
                return None
            if answer[0] == "lost":
                self._fail(RedisUnavailable(
                    f"the state of crawl {self._shared.name!r} disappeared from Redis at "
                    f"{self._shared.url} (server restarted without persistence, or keys "
                    f"deleted): stopping rather than taking an empty ToDo for a finished crawl"))
                return None
            # Nothing ready but items in flight elsewhere: their links may come. Poll gently.
            time.sleep(pause)
            pause = min(pause * 2, 0.02)
        return None

    def abandoned(self) -> list[Item]:
        """The items given up because every process that took them died (``MAX_TAKERS``)."""
        payloads = reply_list(self._shared.call(
            "reading abandoned items", lambda: self._shared.client.lrange(self._abandoned, 0, -1)))
        return [_decode(reply_str(p)) for p in payloads]

    def done(self, item: Item) -> None:
        """Acknowledge ``item``, the one this thread took and has not finished (after its links
        were put). It is found by thread, not by value: the Frontier contract has the worker
        that took an item finish it. Without Redis it stays unacknowledged, for another process
        to reclaim."""
        ids = self._ids()
        if not ids:
            raise ValueError("done() called more times than items were taken")
        entry_id = ids.pop(0)
        self._shared.tokens.end()
        with self._lock:
            self._inflight.discard(entry_id)
        if self.failure is not None:
            return
        try:
            self._shared.eval("acknowledging a ToDo item", DONE_SCRIPT,
                              [self._stream, self._unfinished], [GROUP, entry_id])
        except RedisUnavailable as e:
            self._fail(e)

    def _ids(self) -> list[str]:
        ids = getattr(self._local, "ids", None)
        if ids is None:
            ids = self._local.ids = []
        return ids

    def _beat(self) -> None:
        interval = self._reclaim_ms / 4000
        while not self._ended.wait(interval):
            with self._lock:
                ids = sorted(self._inflight)
            if not ids or self.failure is not None:
                if self._closed.is_set():
                    return  # nothing in flight will ever be taken again here
                continue
            try:
                self._shared.eval("keeping in-flight items", HEARTBEAT_SCRIPT, [self._stream],
                                  [GROUP, self._consumer, *ids])
            except RedisUnavailable as e:
                self._fail(e)
            except Exception:  # the heartbeat must outlive a surprise; reclaim is the fallback
                log.exception("ToDo heartbeat failed")

    # ----------------------------------------------------------------- stopping

    def _fail(self, error: RedisUnavailable) -> None:
        if self.failure is None:  # the crawl raises it at the end: told once, there
            self.failure = error
        self._closed.set()

    def stop(self) -> None:
        """Stop handing out items in this process (Ctrl-C, page cap); the crawl goes on elsewhere.
        Items in flight here are still acknowledged when their workers finish."""
        self._closed.set()

    def close(self) -> None:
        """:meth:`stop`, and stop keeping this process's items in flight: the heartbeat thread
        has ended when this returns (a beat under way finishes first: in an outage, once its
        retries give up). An item taken and not done is left for another process to reclaim,
        as a killed process's is. Closed before its first :meth:`take`, this process no longer
        counts as putting its seeds: the others may see the crawl end at once. The connection
        is the caller's to close; calling it again does nothing."""
        leaving = not self._ended.is_set()  # (again: no round trip, on a connection closed)
        self._closed.set()
        self._ended.set()
        self._heartbeat.join()
        if leaving and self._first_poll and self.failure is None:  # registered by INIT_SCRIPT
            try:
                self._shared.eval("leaving the crawl", LEAVE_SCRIPT, [self._starting],
                                  [self._consumer])
            except RedisUnavailable:  # the registration lapses after STARTING_GRACE_MS
                pass

    def __len__(self) -> int:
        """Items waiting in the shared queue (ready or delayed), not counting those in flight."""
        if self.failure is not None:
            return 0
        try:
            return reply_int(self._shared.eval("measuring ToDo", LEN_SCRIPT,
                                               [self._stream, self._delayed], [GROUP]))
        except RedisUnavailable:
            return 0

    @property
    def unfinished(self) -> int:
        """Items put and not yet acknowledged, by all processes (waiting plus in flight)."""
        if self.failure is not None:
            return 0
        try:
            return int(self._shared.call("measuring ToDo", lambda: self._shared.client.get(
                self._unfinished)) or 0)
        except RedisUnavailable:
            return 0

    @property
    def stopped(self) -> bool:
        """True once this process stopped taking items (``stop()``, or Redis lost)."""
        return self._closed.is_set()

    def figures(self) -> dict[str, int]:
        """Nothing: the items wait in Redis, not in this process's memory or on its disk."""
        return {}
