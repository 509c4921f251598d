"""Incremental recrawl: ask for a page only if it changed, and say what changed.

A page recorded by an earlier run (its :class:`Prior`) is fetched with a conditional GET:
``If-None-Match`` with its ETag, ``If-Modified-Since`` with its Last-Modified. The answer is
classified by :func:`classify`:

* ``304 Not Modified`` → ``unchanged``, and no body crossed the network;
* 404 or 410 → ``gone`` (``unchanged`` if it was already missing last time);
* a full answer → compare status, MD5 of the body and size with the record: all equal →
  ``unchanged`` (a dynamic server that sends no validators, or a fresh date each time), else
  ``changed``; a redirect to the URL recorded as its target is ``unchanged`` too (the target
  is compared under its own URL);
* no record, or a page that was missing (or gone and forgotten) and is back → ``new``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minicrawl.page import Page

NEW, CHANGED, UNCHANGED, GONE = "new", "changed", "unchanged", "gone"
CHANGES = (NEW, CHANGED, UNCHANGED, GONE)
GONE_STATUSES = (404, 410)
REDIRECTS = (301, 302, 303, 307, 308)


@dataclass(frozen=True)
class Prior:
    """What the crawl state recorded for a URL the last time it was fetched."""

    status: int | None
    etag: str | None
    last_modified: str | None
    md5: str | None
    size: int
    saved: str | None = None
    forgotten: bool = False  # gone and forgotten (--forget-gone): treated as never seen
    final_url: str | None = None  # where its redirects led, if any

    def request_headers(self) -> dict[str, str]:
        """The conditional-GET headers this record allows (empty when it has no validators)."""
        headers = {}
        if self.etag:
            headers["If-None-Match"] = self.etag
        if self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers


def body_md5(body: bytes) -> str:
    """The content signature compared between runs (MD5 is fine here: no adversary to beat)."""
    return hashlib.md5(body, usedforsecurity=False).hexdigest()


def classify(prior: Prior | None, status: int | None, body: bytes,
             final_url: str | None = None) -> str:
    """``new``, ``changed``, ``unchanged`` or ``gone`` for a page fetched with ``prior`` known
    (``final_url``: where the fetch ended after redirects)."""
    if prior is None:
        return NEW
    if prior.forgotten:  # offered again by a link: back, or still gone (and stays forgotten)
        return GONE if status in GONE_STATUSES else NEW
    was_missing = prior.status in GONE_STATUSES
    if status in GONE_STATUSES:
        return UNCHANGED if was_missing else GONE
    if was_missing:
        return NEW  # it came back
    if status == 304:
        return UNCHANGED
    if status in REDIRECTS and final_url is not None and final_url == prior.final_url:
        return UNCHANGED  # still redirects to the page recorded (not fetched again: seen)
    if status == prior.status and len(body) == prior.size and body_md5(body) == prior.md5:
        return UNCHANGED
    return CHANGED


def note_change(page: Page, prior: Prior | None, counts: dict[str, int]) -> None:
    """Set ``page.change`` against what was recorded before (``prior``) and count it; an
    unchanged page keeps the copy saved then (and a 304 counts the bytes it spared)."""
    page.change = classify(prior, page.status, page.body, page.final_url)
    counts["change_" + page.change] = 1
    if page.change == UNCHANGED and prior is not None:
        page.saved = prior.saved  # the copy saved then is still the page
        if page.status == 304:
            counts["bytes_saved_304"] = prior.size
