"""The page cap of a shared crawl: ``--max-pages`` counted once for all its processes.

Each process asks :meth:`RedisPageCap.take` before a request; one Lua script checks the count and
adds one, so N processes given ``--max-pages 30`` fetch 30 together, never 31 (each sends its
own cap: give them the same). The count is of requests granted — a retry, a redirect's next hop
and a page fetched again after a kill -9 each count — as in one process.
"""

from __future__ import annotations

import uuid

from minicrawl.redis.conn import SharedRedis, reply_int
from minicrawl.seams import Grant

TAKE_SCRIPT = """
-- KEYS: the count, this call's token; ARGV: cap, token ms.  The count with this page in it, or 0
-- if the cap was reached. A call retried after a lost answer gets the first answer again.
local done = redis.call('GET', KEYS[2])
if done then return tonumber(done) end
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
local answer = 0
if n < tonumber(ARGV[1]) then answer = redis.call('INCR', KEYS[1]) end
redis.call('SET', KEYS[2], answer, 'PX', ARGV[2])
return answer
"""


class RedisPageCap:
    """``--max-pages`` for the whole shared crawl (``mc:{NAME}:pages``)."""

    def __init__(self, shared: SharedRedis) -> None:
        self._shared = shared
        self._key = shared.key("pages")

    def take(self, cap: int, token: str | None = None) -> Grant:
        """Count one more page against ``cap``: GO, LAST (the crawl's ``cap``-th), or NONE
        (refused: the cap was reached). The same ``token`` (one per call unless given) always
        gets the same answer (a :class:`~minicrawl.seams.PageCap`)."""
        token_key = self._shared.key(f"pages:token:{token or uuid.uuid4().hex}")
        ttl_ms = round((self._shared.retry_for + 60) * 1000)  # outlives the call's retries
        count = reply_int(self._shared.eval("counting a page", TAKE_SCRIPT,
                                            [self._key, token_key], [cap, ttl_ms]))
        if count == 0:  # (the script's word for refused)
            return Grant.NONE
        return Grant.LAST if count == cap else Grant.GO
