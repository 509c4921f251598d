"""The page as an output record: one fetched ToDo item, what the server said, and what the crawl
made of it.

The page itself is the core's :class:`~minicrawl.core.interfaces.Page` (re-exported here and as
``minicrawl.Page``); run.py's trip makes a :class:`CrawledPage`, the core's with what run.py
learns of it besides (its facts, its redirect chain), which the core's loop carries as a
``Page``. Every output — the ``--out`` line, the state's row, the report, an ``on_page``
callback — is made from one. :func:`record` is its ``--out`` line.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, NotRequired, TypedDict

from minicrawl.core.interfaces import Page
from minicrawl.records.facts import Facts

if TYPE_CHECKING:
    from minicrawl.records.edges import LinkEdge

__all__ = ["CrawledPage", "Facts", "Page", "PageRecord", "error_of", "now", "record"]

Hop = tuple[str, int | None]  # a request of a redirect chain that redirected: (URL, status)


@dataclass(slots=True)
class CrawledPage(Page):
    """run.py's page: the core's, with what run.py's hooks learn of it besides (the core has a
    line cap, and no use for them)."""

    facts: Facts = field(default_factory=Facts)  # what it says of itself (records/facts.py)
    redirects: list[Hop] = field(default_factory=list)  # the answers that redirected, in order
    requested: list[str] = field(default_factory=list)  # every URL its chain requested (the
    # redirects', and the last one's if it was requested): the URLs whose links lead here
    # Its links as written, when the hooks read them (--links, --check-links, --mirror): they
    # travel with the page to whoever keeps them (the state packs them at its commit), and go
    # with it — a page lives for its trip only. None: not read.
    edges: list[LinkEdge] | None = None  # every link, resolved (records/edges.py)
    anchors: frozenset[str] | None = None  # --check-links: what a #fragment of it may name


class RedirectHop(TypedDict):
    """One redirect of a record's chain: the URL requested and the status it answered."""

    url: str
    status: int | None


class PageRecord(TypedDict):
    """A page as one output record (:func:`record`): the ``--out`` line without ``seq``."""

    url: str
    final_url: str
    status: int | None
    depth: int
    referrer: str | None
    content_type: str | None
    bytes: int  # of the body
    links: int  # canonical links on the page
    new: int  # of them, how many entered ToDo
    elapsed_ms: float
    fetched_at: str
    error: str | None
    change: str | None
    saved: str | None
    duplicate_of: str | None
    sitemap: NotRequired[bool]  # only for a sitemap file read with --sitemaps (then True)
    noindex: NotRequired[bool]  # only for a page that asks not to be indexed (then True)
    check: NotRequired[bool]  # only for a URL checked, not crawled (--check-links: then True)
    # What the page says of itself (README: the --out fields; null where not known)
    title: str | None
    description: str | None
    canonical: str | None
    lang: str | None
    words: int | None
    links_in: int | None  # filled at the crawl's end, where true (records/linksin.py)
    redirects: list[RedirectHop]  # the redirects that led to final_url, in order


def record(page: Page) -> PageRecord:
    """``page`` as one JSON-ready output record (a new dict each call)."""
    out: PageRecord = {
        "url": page.url, "final_url": page.final_url, "status": page.status,
        "depth": page.depth, "referrer": page.referrer, "content_type": page.content_type,
        "bytes": len(page.body), "links": len(page.links), "new": page.new,
        "elapsed_ms": page.elapsed_ms, "fetched_at": page.fetched_at,
        "error": error_of(page.status, page.error),
        "change": page.change, "saved": page.saved, "duplicate_of": page.duplicate_of,
        "title": None, "description": None, "canonical": None, "lang": None, "words": None,
        "links_in": None, "redirects": [],
    }
    if isinstance(page, CrawledPage):
        facts = page.facts
        out["title"], out["description"], out["canonical"] = \
            facts.title, facts.description, facts.canonical
        out["lang"], out["words"] = facts.lang, facts.words
        out["redirects"] = [{"url": url, "status": status} for url, status in page.redirects]
    if page.sitemap:
        out["sitemap"] = True
    if page.noindex:
        out["noindex"] = True  # crawled, but the page asks not to be indexed
    if page.check:
        out["check"] = True  # its answer is all that was wanted: its links were not followed
    return out


def error_of(status: int | None, error: str | None) -> str | None:
    """What went wrong, as every output says it: the error, else ``HTTP 404`` for an answer of
    4xx or 5xx (a 503 given up after its retries already says ``HTTP 503 (gave up…)``), else
    None. The crawl counts a 4xx as a problem, not an error (``errors``: no answer, a body cut
    short…); a record says both the same way."""
    if error is None and status is not None and status >= 400:
        return f"HTTP {status}"
    return error


# The second now() last formatted, and its text up to the seconds: pages fetched within one
# second share it, and a page's now() only adds its milliseconds (issue 49: datetime's
# now().isoformat() a page cost ~2 µs, 20 in a crawl's caches). One tuple: threads read it whole.
_second: tuple[int, str] = (-1, "")


def now() -> str:
    """The current UTC time as a record's ``fetched_at`` (ISO 8601, milliseconds, ``Z``): what
    ``datetime.now(UTC).isoformat(timespec="milliseconds")`` says, ``Z`` for ``+00:00``."""
    global _second
    seconds, nanoseconds = divmod(time.time_ns(), 1_000_000_000)  # (datetime's clock, floored)
    second, prefix = _second
    if seconds != second:
        prefix = datetime.fromtimestamp(seconds, UTC).isoformat()[:19]  # YYYY-MM-DDTHH:MM:SS
        _second = (seconds, prefix)
    return f"{prefix}.{nanoseconds // 1_000_000:03d}Z"
