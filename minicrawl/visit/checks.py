"""What ``--check-links`` adds to run.py's trip: the URLs a page leads to that the crawl does not
follow, checked once each, never crawled.

A page's *checks* (:func:`checks_of`) are the URLs of its edges (:mod:`minicrawl.records.edges`)
that the crawl will not fetch as pages: its requisites (images, scripts, stylesheets…, on the
site or off it), its page links out of scope, past ``--max-depth``, marked nofollow, or a
``<link>`` the crawl does not follow (rel=search, author…) — all but traps
and what ``--exclude`` keeps out. The hooks put them on the page (``Page.checks``) and the trip
offers them at the door with its links, where Visited keeps them apart from the URLs to crawl
(:mod:`minicrawl.core.door`).

A stylesheet on the site, checked, is read (:func:`stylesheet_edges`): what it loads (``url()``,
``@import``: :mod:`minicrawl.html.css`) are its edges, checks of their own, reported against
the stylesheet and its line, not against every page that uses it.

With ``--mirror`` a page's *requisites* (:func:`requisites_of`: its edges of kind requisite,
from the hosts in scope, and what its own CSS loads) are its checks, and a stylesheet's
``url()``s are too: a requisite is a check — the same ``Item(check=True)`` through the door,
kept apart in Visited, never crawled, not counted by ``--max-pages`` — that is always asked with
a GET and whose body is kept, for :mod:`minicrawl.mirror.saver` to write. No second crawler, no
second queue: only how it is asked and what is kept differ.

A check is asked as :func:`method_for` says: GET on the site (a stylesheet's ``url()``s are
read; a page's ids answer its ``#fragments``), HEAD off it — its status is all that is wanted —
unless a HEAD of it failed (:func:`head_failed`: a 4xx or 5xx; some servers refuse HEAD, 405 or
501, or lie with a 404): then a GET, later, in its host's turn, as any request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from minicrawl.records.edges import REQUISITE, LinkEdge

if TYPE_CHECKING:
    from minicrawl.core.interfaces import Item, Page, Response
    from minicrawl.resolve import LinkResolver

TRAP = "trap"  # the traps rule's reason (minicrawl.admission): a link not worth a request


def checks_of(edges: Sequence[LinkEdge], followed: Iterable[str], too_deep: bool,
              excluded: Callable[[str], bool]) -> list[str]:
    """The URLs of ``edges`` to check, each once, in page order: all but those the crawl will
    follow (``followed``, unless ``too_deep``: then the door refuses them all), traps and those
    ``excluded`` (``--exclude``: never requested)."""
    crawled = set() if too_deep else set(followed)
    urls = dict.fromkeys(edge.url for edge in edges if edge.url is not None
                         and edge.url not in crawled and edge.why != TRAP)
    return [url for url in urls if not excluded(url)]


def requisites_of(edges: Sequence[LinkEdge], wanted: Callable[[str], bool]) -> list[str]:
    """The URLs of ``edges`` a page (or a stylesheet) needs to be shown — its requisites: images,
    scripts, stylesheets, icons, fonts, media — each once, in order, that ``wanted`` allows
    (``--mirror``: the hosts in scope, ``--exclude``), traps left out."""
    urls = dict.fromkeys(edge.url for edge in edges if edge.url is not None
                         and edge.kind == REQUISITE and edge.why != TRAP)
    return [url for url in urls if wanted(url)]


def method_for(item: Item, whole: bool, heads_failed: set[str]) -> str:
    """How to ask for the check ``item``: GET if its body is ``whole``ly wanted (on the site; a
    mirror's requisite), else HEAD unless one failed."""
    return "GET" if whole or item.url in heads_failed else "HEAD"


def head_failed(method: str, response: Response) -> bool:
    """True if ``response`` to a HEAD is worth a GET: an HTTP error status (HEAD refused, or
    answered otherwise than a GET would be); no answer at all would not change with a GET."""
    return method == "HEAD" and response.status is not None and response.status >= 400


def stylesheet_edges(page: Page, resolver: LinkResolver) -> list[LinkEdge] | None:
    """The edges of ``page`` if it is a stylesheet (``text/css``, answered 200): each URL it
    loads, resolved against it as the crawl resolves links; else None."""
    media, _, parameters = (page.content_type or "").partition(";")
    if page.status != 200 or media.strip().lower() != "text/css":
        return None
    charset = next((value.strip().strip('"') for name, _, value in
                    (p.strip().partition("=") for p in parameters.split(";"))
                    if name.strip().lower() == "charset"), None)
    from minicrawl.html.css import css_links  # (tinycss2: a crawl that meets CSS, issue 49)

    links = css_links(page.body, charset)
    judged = resolver.judge([link.href for link in links], page.final_url)
    return [LinkEdge(page.final_url, url, why, link.href, "", "css", link.how, link.line,
                     REQUISITE, False) for link, (url, why) in zip(links, judged, strict=True)]
