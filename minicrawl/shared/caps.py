"""The page cap of a shared crawl: ``--max-pages`` counted once for all its processes.

Each process asks :meth:`RedisPageCap.take` before a request; one Lua script checks the count and
adds one, so N processes with ``--max-pages 30`` fetch 30 pages together, never 31. (The count
is of requests granted: a process killed with a granted request in flight has used its page.)
"""

from __future__ import annotations

from minicrawl.shared.conn import SharedRedis

TAKE_SCRIPT = """
-- KEYS: the count; ARGV: cap.  The count with this page in it, or 0 if the cap was reached.
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n >= tonumber(ARGV[1]) then return 0 end
return redis.call('INCR', KEYS[1])
"""


class RedisPageCap:
    """``--max-pages`` for the whole shared crawl (``mc:{NAME}:pages``)."""

    def __init__(self, shared: SharedRedis) -> None:
        self._shared = shared
        self._key = shared.key("pages")

    def take(self, cap: int) -> int:
        """Count one more page: the crawl's count with it (at most ``cap``), or 0 (refused)."""
        return int(self._shared.eval("counting a page", TAKE_SCRIPT, [self._key], [cap]))
