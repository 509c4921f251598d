"""The link edge: one link of one page, as the crawl records it for ``--links`` — the walk's
:class:`~minicrawl.html.edges.Edge` (the href as written, where it is, what it says) with the page
it is on and the URL it leads to, as the crawl resolved it.

run.py's hooks make them (:func:`link_edges`) from the walk's edges of each page whose links
they resolve, put them on the page (``CrawledPage.edges``: the state packs them from there at
its commit) and tell the observers at ``page_edges`` (:mod:`minicrawl.events`); the
``--links`` file (:mod:`minicrawl.records.links`) joins them with what became of each target.
A page's edges are kept as one row, :func:`pack_edges`'s (a JSON array of arrays: a row an edge
cost ~10× the CPU), in the join's scratch file or, with ``--state``, in the state's ``edges``
table (:mod:`minicrawl.state.db`), its anchors beside them (:func:`pack_anchors`).

Every reader of a packed value reads it back through :func:`unpack`, which checks it has the
shape its packer gave it (:func:`is_urls`, :func:`is_edges`): a value damaged in the file (not
JSON, a blob, another shape, nested past the parser's depth) is None there, never an exception.
:class:`Damaged` counts those a run skipped, by file and column, and tells them in one line.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass
from types import NoneType
from typing import TYPE_CHECKING, TypeAlias, TypeGuard, TypeVar

if TYPE_CHECKING:
    from minicrawl.core.interfaces import Page  # (not minicrawl.page's: it imports this)
    from minicrawl.html.edges import Edge

log = logging.getLogger("minicrawl")
T = TypeVar("T")

PAGE, REQUISITE, EXTERNAL = "page", "requisite", "external"  # the kinds of edge
OUT_OF_SCOPE = "out_of_scope"  # the scope's reason (minicrawl.scope): a link leaving the site


@dataclass(slots=True)
class LinkEdge:
    """One link of one page: where it is, what it says, where it leads."""

    page: str  # the page it is on (its URL once its redirects are followed: whose source it is)
    url: str | None  # the canonical URL it leads to, or None: then ``why`` says why there is none
    why: str | None  # why ``url`` is None ("not http(s)", why it is malformed), or why the
    # crawl leaves the target out ("out_of_scope", "trap"), else None
    href: str  # as written, its fragment kept
    text: str  # what it says: its text, an image's alt… (minicrawl.html.edges)
    tag: str  # the element: a, img, link, script… ("header": a Refresh header)
    attr: str  # the attribute: href, src, srcset… ("content" of a meta refresh)
    line: int | None  # the line of the page's source, or None (unknown: minicrawl.html.edges)
    kind: str  # "page" (a link the crawl follows), "requisite" (loaded to show the page: never
    # crawled) or "external" (a page link out of the crawl's scope)
    nofollow: bool  # the link or its page says not to follow it (rel, robots <meta>, header)


def link_edges(page: str, edges: Sequence[Edge], judged: Sequence[tuple[str | None, str | None]],
               nofollow: bool) -> list[LinkEdge]:
    """The edges of the page at ``page``: the walk's ``edges`` and, for each, what the crawl's
    resolver ``judged`` of its href (canonical URL and why unwanted, or None and why no URL);
    ``nofollow``: the page says to follow none of its links."""
    return [LinkEdge(page, url, why, edge.href, edge.text, edge.tag, edge.attr, edge.line,
                     EXTERNAL if edge.kind == PAGE and why == OUT_OF_SCOPE else edge.kind,
                     edge.nofollow or nofollow)
            for edge, (url, why) in zip(edges, judged, strict=True)]


_pack = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def pack_edges(edges: Sequence[LinkEdge]) -> str:
    """A page's edges as the one row they are kept in (the links' join reads them back, in
    this order: url, why, href, text, tag, attr, line, kind, nofollow; ``page`` is the row's)."""
    return _pack([[edge.url, edge.why, edge.href, edge.text, edge.tag, edge.attr, edge.line,
                   edge.kind, edge.nofollow] for edge in edges])


def pack_anchors(anchors: Set[str]) -> str:
    """A page's anchors (what a ``#fragment`` may name) as the one row they are kept in."""
    return _pack(sorted(anchors))


def pack_urls(urls: Sequence[str]) -> str:
    """URLs (a page's links the crawl follows, the URLs its redirect chain requested) as the one
    row they are kept in."""
    return _pack(list(urls))


def pack_hops(page: Page) -> str | None:
    """The URLs of ``page``'s redirect chain after its first (the record's own), to where it
    ended — each leads to the next, so a link to one leads where the chain ended — as one row;
    None when there are fewer than two (no hop of its own to say). A chain that ended at a
    redirect it could not follow (an error) has no hop past its last redirect."""
    urls = [url for url, _ in getattr(page, "redirects", ())]
    if page.error is None or page.status is None or not 300 <= page.status < 400:
        urls.append(page.final_url)
    return _pack(urls[1:]) if len(urls) > 2 else None


# -- reading them back ---------------------------------------------------------------------------

Shape: TypeAlias = Callable[[object], TypeGuard[T]]
# A packed edge, as pack_edges wrote it: url, why, href, text, tag, attr, line, kind, nofollow
# (a JSON array: a list when read, unpacked as the tuple it stands for)
EdgeRow: TypeAlias = tuple[str | None, str | None, str, str, str, str, int | None, str, bool]
_EDGE_TYPES = ((str, NoneType), (str, NoneType), str, str, str, str, (int, NoneType), str, bool)


def is_urls(value: object) -> TypeGuard[list[str]]:
    """``value`` is what :func:`pack_urls`, :func:`pack_anchors` and :func:`pack_hops` pack: a
    list of strings."""
    return type(value) is list and all(type(item) is str for item in value)


def is_edges(value: object) -> TypeGuard[list[EdgeRow]]:
    """``value`` is what :func:`pack_edges` packs: a list of edges, each of its nine fields of
    its type (its readers unpack nine, and hand each field on as it is). ~0.3 µs an edge, about
    what parsing it costs."""
    return type(value) is list and all(
        type(row) is list and len(row) == 9 and all(map(isinstance, row, _EDGE_TYPES))
        for row in value)


def unpack(packed: object, shape: Shape[T]) -> T | None:
    """The value ``packed`` holds, if it has the ``shape`` its packer gave it; else None: it was
    damaged where it was kept (a file edited, a disk's fault, a bug of a writer)."""
    if type(packed) is not str:  # a blob, a number: the packers write text
        return None
    try:
        value = json.loads(packed)
    except (ValueError, RecursionError):  # not JSON; nested past the parser's depth
        return None
    return value if shape(value) else None


# What a damaged value of each column held, so what the run goes without (the line says it)
HELD = {
    "edges.edges": "a page's links: left out of the links",
    "pages.edges": "a page's links: left out of the links",
    "edges.anchors": "a page's anchors: links to its #fragments not checked",
    "anchors.names": "a page's anchors: links to its #fragments not checked",
    "edges.hops": "a redirect chain's hops: a link to one may show it not fetched, or fetch "
                  "it again",
    "linksin.links": "a page's links, as links_in counts them: no count written",
    "linksin.requested": "the URLs a redirect chain requested: no links_in count written",
}


class Damaged:
    """The packed values a run found damaged and skipped (:meth:`read`), each counted once
    whoever read it (by file, column and row), told in one line at the end (:meth:`tell`): a
    damaged value is the file's fault, never the run's end. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[tuple[str, str], set[object]] = {}  # (file, column) → damaged rows

    def read(self, where: str | os.PathLike[str], column: str, row: object, packed: object,
             shape: Shape[T]) -> T | None:
        """:func:`unpack` of ``packed``, the value of ``column`` of ``row`` (its key) in the
        file ``where``; None, counted, if damaged."""
        value = unpack(packed, shape)
        if value is None:
            with self._lock:
                self._rows.setdefault((os.fspath(where), column), set()).add(row)
        return value

    def count(self, *columns: str) -> int:
        """The values of ``columns`` (of any file) skipped so far."""
        with self._lock:
            return sum(len(rows) for (_, column), rows in self._rows.items()
                       if column in columns)

    def tell(self) -> int:
        """The values skipped since the last call, in one warning line (none: no line); how
        many."""
        with self._lock:
            found, self._rows = self._rows, {}
        if not found:
            return 0
        files: dict[str, list[str]] = {}
        for (where, column), rows in sorted(found.items()):
            files.setdefault(where, []).append(
                f"{len(rows)} in {column} ({HELD.get(column, 'skipped')})")
        total = sum(map(len, found.values()))
        log.warning("%d damaged value%s skipped — %s", total, "s" if total > 1 else "",
                    "; ".join(f"{where}: {', '.join(parts)}" for where, parts in files.items()))
        return total
