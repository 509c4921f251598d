"""Visited in Redis: the local Bloom filter's bits, in Redis bitmaps shared by every process.

The core's Bloom filter, as :class:`minicrawl.visited.BloomFilter` is — m from the core's
:func:`~minicrawl.core.visited.bits_for` for ``capacity`` and ``error_rate``, k = 8 — with its bit
array in Redis, split into S shard keys ``mc:NAME:visited:{TAG}`` of m/S bits each. A URL is
routed to one shard by a hash of its own (BLAKE2b with another salt than the positions', so the
route is independent of them), and its 8 bits all live in that shard, at the core's
:func:`~minicrawl.core.visited.positions` for the shard's m/S bits (computed in a batch by
:func:`minicrawl.visited.batch.positions_many`): each shard is the core's filter for about n/S
URLs in m/S bits, so the false-positive rate is the whole filter's. One shard per
URL is what makes the test-and-set atomic on a cluster, where a command or script may only touch
one slot.

**Atomic test-and-set, one round trip per page.** ``add_many`` groups a page's URLs by shard and
sends one Lua script per shard, all in one pipeline. The script runs a ``BITFIELD`` with k
``SET u1`` operations per URL (one per 200 URLs), which sets the bits and returns their old
values in order: a URL is new when one of its old bits was 0. A script runs alone on its
server, so two processes offering the same URL get "new" exactly once. Separate GETBIT/SETBIT
calls (the usual recipe) race: both callers read the bits before either sets them
(``bench/bench_redis.py`` counts it).

**Replays.** The script stores its answer under the write's replay token when it found something
new (see :mod:`minicrawl.redis.conn`): a retried call, or the process that reclaims a killed
worker's ToDo entry, gets the original answer, so URLs the dead worker marked seen but never
queued are queued by the replay instead of being lost.

**Numbers.** ``fill_ratio`` and ``current_fp_rate`` come from BITCOUNT over the shards, ``len``
from per-shard counters of new URLs; both are cached for a second or two, they are for the live
view and the stats, not for the crawl's decisions.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from hashlib import blake2b

import numpy as np

from minicrawl.core.visited import HASHES, bits_for
from minicrawl.errors import RedisUnavailable, VisitedMismatch
from minicrawl.redis.conn import ScriptArg, SharedRedis, reply_str, shard_tags
from minicrawl.visited.batch import FAMILY, positions_many
from minicrawl.visited.bloom import new_urls
from minicrawl.visited.sizing import MAX_BITS, FilterNumbers

#: Salt of the hash that routes a URL to its shard: not the positions' (the core's SEED), so
#: the route says nothing about where a URL's bits are in its shard.
ROUTE_SALT = b"minicrawl-route"
#: A Redis string holds at most 2**32 bits.
MAX_SHARD_BITS = 1 << 32
#: URLs per script call: long enough to amortise the call, short enough not to stall the server.
BATCH = 1000

ADD_SCRIPT = """
-- KEYS: bitmap, count, token; ARGV: k, token ttl, the k bit offsets of each URL packed as
-- little-endian uint32 (one argument: far cheaper to send and parse than one per offset).
-- Returns one character per URL: '1' new, '0' seen.
local done = redis.call('GET', KEYS[3])
if done then return done end
local k = tonumber(ARGV[1])
local packed = ARGV[3]
local bits = #packed / 4
local per = math.floor(1600 / k) * k   -- bits per BITFIELD call: Lua's unpack() is bounded
local out, new, pos = {}, 0, 1
for first = 1, bits, per do
  local ops, off = {}, 0
  for i = first, math.min(first + per - 1, bits) do
    off, pos = struct.unpack('<I4', packed, pos)
    ops[#ops + 1] = 'SET'; ops[#ops + 1] = 'u1'; ops[#ops + 1] = off; ops[#ops + 1] = 1
  end
  local old = redis.call('BITFIELD', KEYS[1], unpack(ops))
  for u = 1, #old, k do
    local fresh = '0'
    for j = u, u + k - 1 do
      if old[j] == 0 then fresh = '1'; break end
    end
    if fresh == '1' then new = new + 1 end
    out[#out + 1] = fresh
  end
end
local res = table.concat(out)
if new > 0 then
  redis.call('INCRBY', KEYS[2], new)
  redis.call('SET', KEYS[3], res, 'EX', ARGV[2])
end
return res
"""


def auto_shards(shared: SharedRedis) -> int:
    """The shard count when none is asked for: the crawl's own if it exists; else one per
    cluster primary (the fewest script calls per page that still spread the bits over every
    node: measured 35 k URLs/s with 3 shards on 3 nodes against 15 k with 16), else 1."""
    raw = shared.call("reading Visited settings",
                      lambda: shared.client.get(f"mc:{shared.name}:visited:meta"))
    if raw is not None:
        return int(json.loads(raw)["shards"])
    if shared.cluster:
        return max(1, len(shared.call("reading the cluster's nodes",
                                      shared.client.get_primaries)))
    return 1


class RedisBloomVisited(FilterNumbers):
    """A Bloom filter of URLs in Redis, shared by every process of crawl ``shared.name``.

    One of run.py's Visited (:data:`minicrawl.visited.make.Visited`): ``add_new`` (the core's
    ``SeenSet``), ``add``, ``add_many`` (True only the first time a URL is offered, by any
    process, or to a replay of that call: its token), ``in``, ``len``.
    """

    def __init__(self, shared: SharedRedis, capacity: int = 1_000_000,
                 error_rate: float = 0.001, shards: int = 16) -> None:
        self._shared = shared
        self._capacity = capacity
        self._error_rate = error_rate
        self._shards = shards
        m = bits_for(capacity, error_rate)
        self._shard_bits = -(-m // shards)
        if self._shard_bits > min(MAX_SHARD_BITS, MAX_BITS):
            raise ValueError(f"{m} bits in {shards} shards is more than 2**32 bits per Redis "
                             f"string: use more --visited-shards")
        self._m = self._shard_bits * shards
        prefix = f"mc:{shared.name}:visited:"
        self._keys = [f"{prefix}{{{tag}}}" for tag in shard_tags(shards)]
        self._count_keys = [key + ":count" for key in self._keys]
        self._meta_key = prefix + "meta"
        self._cache: dict[str, tuple[float, int]] = {}
        self._check_meta()

    @classmethod
    def attach(cls, shared: SharedRedis) -> RedisBloomVisited | None:
        """The Visited of an existing crawl, sized as it was created (None if there is none)."""
        raw = shared.call("reading Visited settings",
                          lambda: shared.client.get(f"mc:{shared.name}:visited:meta"))
        if raw is None:
            return None
        meta = json.loads(raw)
        cls._check_family(shared, meta)
        return cls(shared, meta["capacity"], meta["error_rate"], meta["shards"])

    @staticmethod
    def _check_family(shared: SharedRedis, meta: dict[str, object]) -> None:
        """Refuse a crawl whose Visited an older minicrawl keeps, at other positions."""
        if meta.get("family") != FAMILY:
            raise VisitedMismatch(
                f"crawl {shared.name!r} keeps its Visited filter with the {meta.get('family')!r} "
                f"hash family of an older minicrawl, whose bits this one cannot read: finish it "
                f"with the minicrawl that started it, or give another --crawl name")

    def _check_meta(self) -> None:
        # The first process records the filter's shape; a process sized differently would read
        # and write other bits, and silently re-crawl or skip pages: refuse it.
        meta = {"family": FAMILY, "hashes": HASHES, "shards": self._shards,
                "shard_bits": self._shard_bits, "capacity": self._capacity,
                "error_rate": self._error_rate}
        client = self._shared.client
        self._shared.call("recording Visited settings",
                          lambda: client.set(self._meta_key, json.dumps(meta), nx=True))
        saved = json.loads(self._shared.call("reading Visited settings",
                                             lambda: client.get(self._meta_key)))
        self._check_family(self._shared, saved)
        shape = ("family", "hashes", "shards", "shard_bits")
        if any(saved.get(f) != meta[f] for f in shape):
            raise VisitedMismatch(
                f"crawl {self._shared.name!r} keeps its Visited filter with capacity "
                f"{saved.get('capacity')}, error rate {saved.get('error_rate')}, "
                f"{saved.get('shards')} shards; this process asks for capacity {self._capacity}, "
                f"error rate {self._error_rate}, {self._shards} shards. Use the same "
                f"--expected-urls, --error-rate and --visited-shards, or another --crawl name.")

    # ----------------------------------------------------------------- where the bits are

    def locate(self, urls: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(shard number of each URL, (n, 8) bit offsets of each URL within its shard: the
        core's positions for the shard's m)."""
        offsets = positions_many(urls, self._shard_bits)  # TypeError for a non-str first
        if self._shards == 1:
            return np.zeros(len(urls), dtype=np.int64), offsets
        raw = b"".join(blake2b(url.encode("utf-8", "surrogatepass"), digest_size=8,
                               salt=ROUTE_SALT).digest() for url in urls)
        route = np.frombuffer(raw, dtype="<u8") % np.uint64(self._shards)
        return route.astype(np.int64), offsets

    def shard_key(self, shard: int) -> str:
        """The Redis key of the bitmap of shard number ``shard``."""
        return self._keys[shard]

    # ----------------------------------------------------------------- the Visited interface

    def add(self, url: str) -> bool:
        """Insert ``url``; True if no process had offered it before (or a false positive)."""
        return self.add_many([url])[0]

    def add_new(self, urls: list[str]) -> list[str]:
        """Visited as the core sees it (``SeenSet``): the URLs of ``urls`` no process offered."""
        return new_urls(urls, self.add_many(urls))

    def add_many(self, urls: Iterable[str]) -> list[bool]:
        """``add`` for each URL, in order; one pipelined round trip for a page's links."""
        urls = urls if isinstance(urls, (list, tuple)) else list(urls)
        if not urls:
            return []
        shard, offsets = self.locate(urls)
        token = self._shared.tokens.token(urls)
        ttl = self._shared.token_ttl
        calls: list[tuple[str, list[str], list[ScriptArg]]] = []
        rows_of_call: list[np.ndarray] = []
        for s in np.unique(shard).tolist():
            rows = np.flatnonzero(shard == s)  # in the caller's order: in-batch repeats work
            for start in range(0, len(rows), BATCH):
                part = rows[start:start + BATCH]
                key = self._keys[s]
                calls.append((ADD_SCRIPT, [key, self._count_keys[s], f"{key}:t:{token}.{start}"],
                              [HASHES, ttl, offsets[part].astype("<u4").tobytes()]))
                rows_of_call.append(part)
        results = self._shared.eval_many("adding URLs to Visited", calls)
        new = np.zeros(len(urls), dtype=bool)
        for part, res in zip(rows_of_call, results, strict=True):
            new[part] = np.frombuffer(reply_str(res).encode(), dtype=np.uint8) == ord("1")
        if new.any():
            self._cache.clear()  # the numbers changed: the next reading (the summary) is fresh
        return new.tolist()

    def __contains__(self, url: object) -> bool:
        """True if all 8 bits of ``url`` are set (seen by some process, or a false positive)."""
        if not isinstance(url, str):
            return False
        shard, offsets = self.locate([url])
        ops: list[str | int] = []
        for off in offsets[0].tolist():
            ops += ["GET", "u1", off]
        key = self._keys[int(shard[0])]
        bits: list[int] = self._shared.call("reading Visited", lambda: (
            self._shared.client.execute_command("BITFIELD_RO", key, *ops)))
        return all(bits)

    def __len__(self) -> int:
        """URLs added as new by all processes (cached for a second)."""
        return self._cached("count", 1.0, lambda: sum(self._pipeline("GET", self._count_keys)))

    # ----------------------------------------------------------------- numbers

    def _pipeline(self, command: str, keys: list[str]) -> list[int]:
        """``command key`` for each key, in one pipeline: the integer answers (a GET of a missing
        key: 0)."""
        def run() -> list[int]:
            pipe = self._shared.client.pipeline(transaction=False)
            for key in keys:
                pipe.execute_command(command, key)
            return [int(v or 0) for v in pipe.execute()]
        return self._shared.call("reading Visited stats", run)

    def _cached(self, name: str, max_age: float, compute: Callable[[], int]) -> int:
        now = time.monotonic()
        at, value = self._cache.get(name, (-max_age - 1.0, 0))
        if now - at > max_age:
            try:
                value = compute()
                self._cache[name] = (now, value)
            except RedisUnavailable:
                pass  # the last value known; the crawl reports the failure itself
        return value

    @property
    def count(self) -> int:
        """URLs added as new by all processes: ``len`` (cached for a second)."""
        return len(self)

    @property
    def bits_set(self) -> int:
        """Set bits over all shards (BITCOUNT, cached for two seconds)."""
        return self._cached("bits_set", 2.0, lambda: sum(self._pipeline("BITCOUNT", self._keys)))

    @property
    def shards(self) -> int:
        """How many bitmaps (Redis keys, spread over cluster slots) the bits are in."""
        return self._shards

    @property
    def nbytes(self) -> int:
        """Bytes of the bitmaps once full size: ⌈m/8⌉ (Redis grows a bitmap as bits are set)."""
        return self._shards * -(-self._shard_bits // 8)

    @property
    def fill_ratio(self) -> float:
        return self.bits_set / self._m

    def __repr__(self) -> str:
        return (f"RedisBloomVisited(crawl={self._shared.name!r}, bits={self._m}, "
                f"shards={self._shards}, capacity={self._capacity})")
