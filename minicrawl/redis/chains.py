"""Redirect chains of a shared crawl: a chain rides in Redis with its target.

A redirect's target waits in the shared ToDo, and any process may take it. The chain that led
there (:class:`minicrawl.visit.redirects.Chain`: the item that started it, when, the URLs
fetched so far, their time, the redirects' statuses) is kept in the hash ``mc:{NAME}:chains``
under the target, so whichever process takes the target carries the chain on and writes its one
record — also after the process that started it was killed. (A shared crawl keeps no state: a
chain has no ``prior``.)
"""

from __future__ import annotations

import json

from minicrawl.core.interfaces import Item
from minicrawl.redis.conn import SharedRedis
from minicrawl.redis.todo import RedisToDo
from minicrawl.visit.redirects import Chain


class RedisChains:
    """Redirect targets waiting in the shared ToDo → the chain that led there: the answers of
    :class:`minicrawl.visit.redirects.Chains`, for every process of the crawl. The chain at an
    item ``todo`` handed out came with it (read in the same poll); a write when a chain goes on,
    a delete when it ends."""

    def __init__(self, shared: SharedRedis, todo: RedisToDo | None = None) -> None:
        self._shared, self._key, self._todo = shared, shared.key("chains"), todo
        self._found: set[str] = set()  # targets this process found a chain at (to delete)

    def waiting_at(self, url: str) -> Chain | None:
        """The chain ``url`` is the next hop of, if it is one (whoever queued it)."""
        raw = self._todo.chains_taken.pop(url, None) if self._todo is not None else None
        if raw is None:  # not an item taken from ``todo``: ask Redis
            client = self._shared.client
            raw = self._shared.call("reading a redirect chain",
                                    lambda: client.hget(self._key, url)) or ""
        if not raw:
            return None
        self._found.add(url)
        item, fetched_at, urls, elapsed_ms, *rest = json.loads(raw)
        # (redirects: one carried by a process before them has its URLs, not their statuses)
        redirects = [tuple(hop) for hop in rest[0]] if rest else [(url, None) for url in urls]
        return Chain(Item(*item), fetched_at, None, urls, elapsed_ms, redirects)

    def carry(self, target: str, chain: Chain) -> None:
        """``chain`` goes on at ``target`` (call before ``target`` enters ToDo)."""
        origin = chain.item
        value = json.dumps([[origin.url, origin.depth, origin.referrer, origin.attempt],
                            chain.fetched_at, chain.urls, chain.elapsed_ms, chain.redirects],
                           ensure_ascii=False)
        client = self._shared.client
        self._shared.call("keeping a redirect chain", lambda: client.hset(self._key, target, value))

    def end(self, url: str) -> None:
        """The chain waiting at ``url`` (if this process found one) is over."""
        if url in self._found:
            self._found.discard(url)
            client = self._shared.client
            self._shared.call("ending a redirect chain", lambda: client.hdel(self._key, url))
