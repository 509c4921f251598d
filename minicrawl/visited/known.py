"""The URLs the door asked Visited about lately: not asked again.

A page's links are mostly the links of the pages before it (a site's navigation, its pages
linking each other): in a crawl more than 99 % of the URLs the door offers Visited were offered
before, and each costs Visited its eight positions (a BLAKE2b digest, eight modulos) and a test
of its bits under the filter's lock, to answer "seen" again. :class:`KnownVisited` stands between
the door and Visited and remembers the URLs that went through: Visited only ever grows (a Bloom
filter's bits never go back to 0, an exact set is never emptied mid-crawl; a recrawl's forgotten
pages are revived at their first offer, which went through), so a URL offered once is seen for
good and the answer is Visited's own. Its memory is a :class:`minicrawl.memo.Memo` bounded as
the link memories are (a third of Visited's URLs, above ``memo.FLOOR``; 2 MB): its URLs are the
strings the link memories hold, most of them. Not before a shared crawl's Visited: a page re-run
by another process must offer the URLs its first run offered, whose answer Redis keeps under a
token made of them (:mod:`minicrawl.redis.conn`).

bench/manyhosts.py's 3,200 pages of 40 links replayed into run.py's Visited (issue 49): 1.18 µs
a URL without it, 0.14 with it (0.045 → 0.005 ms a page, best of 6).
"""

from __future__ import annotations

from collections.abc import Callable

from minicrawl.core.interfaces import SeenSet
from minicrawl.memo import Memo

KNOWN_BYTES = 2 << 20  # what its entries may take, as _known_bytes estimates them
KNOWN_OVERHEAD = 100  # bytes an entry takes beyond its URL's characters (the dict's slot, None)


class KnownVisited:
    """The door's Visited (``SeenSet``): ``visited``, asked only about URLs it was not asked
    about lately. Its figures are ``visited``'s: run.py reads them there (``Crawler.visited``)."""

    def __init__(self, visited: SeenSet, budget: Callable[[], int] | None = None) -> None:
        """``budget``: how many URLs Visited holds (the memory's bound follows it), or None
        (``KNOWN_BYTES`` alone bound it)."""
        self.inner = visited
        self._known: Memo[str, None] = Memo(KNOWN_BYTES, _known_bytes, budget)

    def add_new(self, urls: list[str]) -> list[str]:
        """The URLs of ``urls`` not seen before, now remembered (Visited's answer: those it
        was asked about before are seen)."""
        known = self._known.data  # read without a call: most URLs are found here
        rest = [url for url in urls if url not in known]
        if not rest:
            return []
        new = self.inner.add_new(rest)
        # Remembered once Visited has them: a thread that finds one here may say "seen".
        put = self._known.put
        for url in rest:
            put(url, None)
        return new

    def __contains__(self, url: object) -> bool:
        return url in self.inner  # type: ignore[operator]

    def __len__(self) -> int:
        return len(self.inner)  # type: ignore[arg-type]


def _known_bytes(url: str, _: None) -> int:
    return KNOWN_OVERHEAD + len(url)
