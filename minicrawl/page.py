"""The page as an output record: one fetched ToDo item, what the server said, and what the crawl
made of it.

The page itself is the core's :class:`~minicrawl.core.interfaces.Page` (re-exported here and as
``minicrawl.Page``); every output — the ``--out`` line, the state's row, the report, an
``on_page`` callback — is made from one. :func:`record` is its ``--out`` line.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import NotRequired, TypedDict

from minicrawl.core.interfaces import Page

__all__ = ["Page", "PageRecord", "now", "record"]


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


def record(page: Page) -> PageRecord:
    """``page`` as one JSON-ready output record (a new dict each call)."""
    out: PageRecord = {
        "url": page.url, "final_url": page.final_url, "status": page.status,
        "depth": page.depth, "referrer": page.referrer, "content_type": page.content_type,
        "bytes": len(page.body), "links": len(page.links), "new": page.new,
        "elapsed_ms": page.elapsed_ms, "fetched_at": page.fetched_at, "error": page.error,
        "change": page.change, "saved": page.saved, "duplicate_of": page.duplicate_of,
    }
    if page.sitemap:
        out["sitemap"] = True
    if page.noindex:
        out["noindex"] = True  # crawled, but the page asks not to be indexed
    if page.check:
        out["check"] = True  # its answer is all that was wanted: its links were not followed
    return out


def now() -> str:
    """The current UTC time as a record's ``fetched_at`` (ISO 8601, milliseconds, ``Z``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
