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
"""

from __future__ import annotations

import json
from collections.abc import Sequence, Set
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minicrawl.core.interfaces import Page  # (not minicrawl.page's: it imports this)
    from minicrawl.html.edges import Edge

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
