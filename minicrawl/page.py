"""The Page record: one fetched ToDo item, what the server said, and what the crawl made of it.

Every output — the ``--out`` line, the state's row, the report, an ``on_page`` callback — is
made from a :class:`Page`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import NotRequired, TypedDict


class PageRecord(TypedDict):
    """A page as one output record (:meth:`Page.record`): the ``--out`` line without ``seq``."""

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


@dataclass
class Page:
    """One fetched ToDo item: what the server said and what links it had."""

    url: str
    depth: int
    referrer: str | None
    final_url: str
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    links: list[str] = field(default_factory=list)  # canonical URLs found on the page
    new: int = 0  # how many of them entered ToDo
    elapsed_ms: float = 0.0
    fetched_at: str = ""
    error: str | None = None
    worker: int = 0
    change: str | None = None  # with --state: new, changed, unchanged or gone
    saved: str | None = None  # with --save-pages: the file holding the body
    duplicate_of: str | None = None  # the URL first recorded with this body (minicrawl.digests)
    digest: str | None = None  # the body's MD5, once computed
    sitemap: bool = False  # a sitemap file read with --sitemaps, not a page

    @property
    def content_type(self) -> str | None:
        """The Content-Type header (``text/html; charset=utf-8``), or None if none came."""
        return self.headers.get("content-type")

    def record(self) -> PageRecord:
        """The page as one JSON-ready output record (a new dict each call)."""
        record: PageRecord = {
            "url": self.url, "final_url": self.final_url, "status": self.status,
            "depth": self.depth, "referrer": self.referrer, "content_type": self.content_type,
            "bytes": len(self.body), "links": len(self.links), "new": self.new,
            "elapsed_ms": self.elapsed_ms, "fetched_at": self.fetched_at, "error": self.error,
            "change": self.change, "saved": self.saved, "duplicate_of": self.duplicate_of,
        }
        if self.sitemap:
            record["sitemap"] = True
        return record


def now() -> str:
    """The current UTC time as a record's ``fetched_at`` (ISO 8601, milliseconds, ``Z``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
