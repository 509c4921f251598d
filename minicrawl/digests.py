"""Duplicate content: the same page served under two URLs is recorded, not crawled, twice.

Visited stops the same *URL* from being fetched twice; it cannot see that ``/a`` and
``/a?ref=nav``, ``/`` and ``/index.php``, or a page and its mirror serve the same bytes. Here
each 200 HTML body's MD5 (the signature ``--recrawl`` compares anyway) is offered to a
**first-wins map** digest → URL. The first page recorded with a body holds the digest; every
later one is recorded with ``duplicate_of`` naming it, its links are not extracted again and
``--save-pages`` does not write it again.

The map's ``claim`` is one atomic step, like Visited's test-and-insert: two workers recording
the same body at the same moment get one holder. Three variants:

* in one process, a dict under a lock (:class:`LocalDigests`);
* with ``--state``, the same dict filled from the ``digests`` table of ``crawl.db`` when the
  crawl opens; a page's row is written in the transaction that records the page
  (:meth:`minicrawl.state.store.CrawlState.commit`), so a resumed crawl or a recrawl knows
  every digest recorded before;
* in a shared crawl (``--redis``), a Redis hash claimed with ``HSETNX`` (:class:`RedisDigests`):
  exact and atomic across processes. Not a Bloom filter: a Bloom filter answers "seen", but the
  record must name *which* URL holds the content, and a false positive would silently drop a
  new page's links.

**Replays.** A page fetched again after a crash (``--state`` resume, a reclaimed Redis entry)
claims its digest again and may find *itself* as the holder — its first claim survived, its
record did not. Its own URL is never a duplicate of itself, so it gets the same answer as the
first time; a page recorded as a duplicate of it stays consistent too (the holder's row is
written with the duplicate's record as well, see :meth:`CrawlState.commit`).

**Recrawls.** The holder of a digest stays its holder (first wins, for good), even if its page
later changes: ``duplicate_of`` names the URL first recorded with those bytes, as an archive's
revisit record names the first capture.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from minicrawl.core.links import is_html
from minicrawl.options import Options
from minicrawl.state.recrawl import UNCHANGED, Prior, body_md5

if TYPE_CHECKING:
    from minicrawl.page import Page
    from minicrawl.shared.conn import SharedRedis
    from minicrawl.state.store import CrawlState, NoState


class LocalDigests:
    """The digests of one process (filled from the crawl state's table with ``--state``)."""

    def __init__(self, known: dict[str, str] | None = None) -> None:
        self._map: dict[str, str] = dict(known or {})
        self._lock = threading.Lock()

    def claim(self, digest: str, url: str) -> str:
        """The URL holding ``digest``: ``url`` if it claims it first (one atomic step)."""
        with self._lock:  # setdefault alone is atomic in CPython; the lock says so on purpose
            return self._map.setdefault(digest, url)

    def holder(self, digest: str) -> str | None:
        """The URL holding ``digest``, or None if no page claimed it."""
        return self._map.get(digest)

    def __len__(self) -> int:
        return len(self._map)


CLAIM_SCRIPT = """
-- KEYS: the digests hash; ARGV: digest, url.  The holder after the claim (first wins).
redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
return redis.call('HGET', KEYS[1], ARGV[1])
"""


class RedisDigests:
    """The digests of a shared crawl: the hash ``mc:{NAME}:digests`` (one round trip a page).

    ``HSETNX`` never overwrites, so a claim is idempotent: a retried call or a replay after a
    reclaim returns the same holder (no replay token needed).
    """

    def __init__(self, shared: SharedRedis) -> None:
        self.shared = shared
        self.key = shared.key("digests")

    def claim(self, digest: str, url: str) -> str:
        """The URL holding ``digest`` in the shared hash: ``url`` if it claims it first
        (``HSETNX``, atomic across processes)."""
        return str(self.shared.eval("claiming a content digest", CLAIM_SCRIPT, [self.key],
                                    [digest, url]))

    def holder(self, digest: str) -> str | None:
        """The URL holding ``digest`` in the shared hash, or None if no page claimed it."""
        return self.shared.call("reading a content digest",
                                lambda: self.shared.client.hget(self.key, digest))

    def __len__(self) -> int:
        return int(self.shared.call("counting content digests",
                                    lambda: self.shared.client.hlen(self.key)))


class Duplicates:
    """Decides, for each recorded page, whether it duplicates an earlier page's content, from a
    first-wins map digest → URL: ``claim(digest, url)`` the URL holding it (``url`` if first),
    ``holder(digest)`` the URL holding it or None."""

    def __init__(self, digests: LocalDigests | RedisDigests) -> None:
        self.digests = digests

    def check(self, page: Page, prior: Prior | None) -> str | None:
        """The URL first recorded with ``page``'s content if it is not ``page`` itself, else
        None. A complete 200 HTML body claims its digest (kept in ``page.digest`` for the
        state); an unchanged page without a body (a 304, a sitemap <lastmod>) is the body
        recorded last time, so its recorded digest is looked up (not claimed: it was then)."""
        if page.status == 200 and page.error is None and page.body \
                and is_html(page.content_type, page.body):
            page.digest = body_md5(page.body)
            holder: str | None = self.digests.claim(page.digest, page.url)
        elif not page.body and page.change == UNCHANGED and prior is not None and prior.md5:
            holder = self.digests.holder(prior.md5)
        else:
            return None
        return holder if holder != page.url else None


def open_duplicates(options: Options, state: CrawlState | NoState,
                    shared: SharedRedis | None) -> Duplicates | None:
    """The duplicate check the options ask for (None with ``--keep-duplicates``)."""
    if options.keep_duplicates:
        return None
    if shared is not None:
        return Duplicates(RedisDigests(shared))
    return Duplicates(LocalDigests(state.digests()))
