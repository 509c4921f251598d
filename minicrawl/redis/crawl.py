"""A crawl shared by many processes through Redis: building its parts, and ``--status``.

``Crawler`` calls :func:`open_shared_crawl` when ``options.redis`` is set and gets the shared
ToDo (:mod:`minicrawl.redis.todo`), Visited (:mod:`minicrawl.redis.visited`), stats
(:mod:`minicrawl.redis.stats`), per-host gate (:mod:`minicrawl.redis.gate`), page cap
(:mod:`minicrawl.redis.caps`) and redirect chains (:mod:`minicrawl.redis.chains`), all on one
connection (:mod:`minicrawl.redis.conn`). run.py's worker loop is the same with them: the
data still flows seed → ToDo → worker → fetch → links → Visited → ToDo, only ToDo, Visited, the
pace, the counts and the chains live in Redis.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field

from minicrawl.jsontypes import JSON
from minicrawl.options import Options
from minicrawl.redis.caps import RedisPageCap
from minicrawl.redis.chains import RedisChains
from minicrawl.redis.conn import SharedRedis, reply_int
from minicrawl.redis.gate import RedisHostGate
from minicrawl.redis.stats import META, RedisStats, read_shared, shared_elapsed
from minicrawl.redis.todo import GROUP, LEN_SCRIPT, RedisToDo
from minicrawl.redis.visited import RedisBloomVisited, auto_shards


@dataclass
class SharedCrawl:
    """The shared parts of one process's crawl."""

    redis: SharedRedis
    todo: RedisToDo
    visited: RedisBloomVisited
    stats: RedisStats
    host_gate: RedisHostGate
    pages: RedisPageCap
    chains: RedisChains  # redirect chains, carried on by whichever process takes the target
    closed: bool = field(default=False, init=False)

    def __enter__(self) -> SharedCrawl:
        """The crawl's run (``with shared: ...``), which :meth:`close` ends; RuntimeError once
        it is closed (its heartbeats cannot start again)."""
        if self.closed:
            raise RuntimeError("this Crawler's run of the shared crawl (--redis) is over: it "
                               "left the crawl, its connection closed; make a new Crawler to "
                               "join the crawl again")
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """This process leaves the crawl: ToDo's and the host gate's heartbeats have ended when
        this returns, then the connection is closed; calling it again does nothing. What is
        still held here — an item taken and not done, a host slot leased (a Ctrl-C that did
        not wait for the pages in flight) — is left as a killed process's is: the item
        reclaimed by another process after ``--reclaim-after``, the lease lapsed."""
        if self.closed:
            return
        self.closed = True
        with ExitStack() as stack:  # each even if one before raised; the last pushed goes first:
            stack.callback(self.redis.close)  # the connection after the heartbeats beating on it
            stack.callback(self.host_gate.close)
            stack.callback(self.todo.close)


def connect(options: Options, seeds: Sequence[str] = ()) -> SharedRedis:
    """The crawl's connection, with replay tokens kept long enough to outlive a reclaim."""
    assert options.redis, "connect() needs options.redis"
    # A token must still be there when a killed worker's entry is reclaimed (after
    # reclaim_after of idleness) and re-run, or when a write is retried (within redis_retry).
    ttl = 600 + 4 * options.reclaim_after + options.redis_retry
    return SharedRedis(options.redis, options.crawl, retry_for=options.redis_retry,
                       token_ttl=ttl, seeds=seeds)


def open_shared_crawl(options: Options, seeds: Sequence[str]) -> SharedCrawl:
    """Join (or start) crawl ``options.crawl`` on ``options.redis``."""
    if getattr(options, "state", None):
        raise ValueError("--redis and --state both keep the crawl's state: the shared crawl "
                         "keeps it in Redis, so give one of them")
    if options.visited not in ("bloom", "auto"):
        raise ValueError("--redis shares a Bloom filter between processes; --visited exact "
                         "is a set inside one process")
    shared = connect(options, seeds)
    # Refused part way (its Visited sized otherwise, Redis lost): what was opened is closed,
    # the last first (no heartbeat left beating, no connection open in a process that goes on)
    with ExitStack() as opened:
        opened.callback(shared.close)
        visited = RedisBloomVisited(shared, options.expected_urls, options.filter_error_rate,
                                    options.visited_shards or auto_shards(shared))
        # A slot lease outlives a live request through heartbeats, a killed process by
        # reclaim_after.
        gate = RedisHostGate(shared, options.per_host, options.reclaim_after)
        opened.callback(gate.close)
        todo = RedisToDo(shared, options.reclaim_after)
        opened.callback(todo.close)
        crawl = SharedCrawl(shared, todo, visited, RedisStats(shared), gate,
                            RedisPageCap(shared), RedisChains(shared, todo))
        opened.pop_all()  # joined: the crawl's close() closes them
    return crawl


def crawl_status(options: Options) -> JSON:
    """The shared stats of crawl ``options.crawl``, read without joining it: name, state,
    counters, timing, ToDo and Visited figures, ready for JSON."""
    from minicrawl.visited.make import describe

    shared = connect(options)
    try:
        fields = read_shared(shared)
        if not fields:
            return {"crawl": shared.name, "state": "unknown (no such crawl in this Redis)"}
        unfinished = int(shared.call("reading ToDo", lambda: shared.client.get(
            shared.key("todo:unfinished"))) or 0)
        waiting = reply_int(shared.eval("measuring ToDo", LEN_SCRIPT,
                                        [shared.key("todo:stream"), shared.key("todo:delayed")],
                                        [GROUP]))
        elapsed = shared_elapsed(shared, fields)
        counts = {k: v for k, v in sorted(fields.items()) if k not in META}
        status: JSON = {
            "crawl": shared.name, "state": "running" if unfinished else "finished",
            "processes": fields.get("processes", 0), **counts,
            "elapsed_s": round(elapsed, 3),
            "pages_per_s": round(counts.get("pages", 0) / elapsed, 2) if elapsed > 0 else 0.0,
            "todo_left": waiting, "in_flight": max(0, unfinished - waiting),
        }
        visited = RedisBloomVisited.attach(shared)
        if visited is not None:
            status.update(describe(visited))
            status["visited_shards"] = visited.shards
        return status
    finally:
        shared.close()


def print_status(options: Options) -> int:
    """``run.py --redis URL --crawl NAME --status``: print the shared stats; exit status."""
    status = crawl_status(options)
    width = max(len(k) for k in status)
    for name, value in status.items():
        print(f"{name:<{width}}  {value}")
    return 0
