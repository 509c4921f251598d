"""Links: the URLs a browser would follow from a page, read from its bytes, and what the page
says about following them. :func:`extract_links` does it in three steps:

1. **Decode** the page as a browser does (:mod:`minicrawl.html.encoding`: a byte order mark,
   the Content-Type's charset, a ``<meta>``, else windows-1252; a later ``<meta>`` naming
   another encoding has 1–3 done again in it).
2. **Parse** it with lxml: libxml2 reads the bytes as the HTML standard says, without the GIL.
3. **Walk** the elements that can be links (:mod:`minicrawl.html.walk`: ``<a href>``,
   ``<area href>``, frames, ``<link rel=next>``…, a refresh), mending where libxml2's tree is no
   browser's (a ``<template>``'s content, an ``<a>`` in MathML, a frame outside a frameset).

Hrefs are kept as written, only the fragment cut. A page's ``nofollow`` (robots ``<meta>``,
X-Robots-Tag) and an HTML link's ``rel=nofollow`` are applied by :meth:`Links.followed`.
"""

from collections.abc import Mapping
from contextlib import AbstractContextManager

from minicrawl.core.interfaces import Links, Page
from minicrawl.core.urls import resolve
from minicrawl.html.encoding import sniff
from minicrawl.html.meta import ROBOT
from minicrawl.html.mime import is_html
from minicrawl.html.walk import walk
from minicrawl.http.answer import undone


def follows_links(page: Page) -> bool:
    """True if ``page``'s links are followed, the one rule of both crawlers: it answered 200, is
    HTML (:func:`is_html`), and its body is the page as sent, its coding undone — whole or cut
    short (the size cap, a slow drip, a lost connection: the links up to the cut are real, as a
    browser shows a page cut short). A body kept as received (br without brotli) or empty (over
    the cap by its Content-Length: not read) gives none."""
    return page.status == 200 and bool(page.body) and is_html(page.content_type, page.body) \
        and undone(page.headers.get("content-encoding", ""))


def extract_links(body: bytes, headers: Mapping[str, str] | None = None, robot: str = ROBOT,
                  parsing: AbstractContextManager[object] | None = None) -> Links:
    """The links of the HTML page ``body`` whose answer's headers are ``headers`` (any case;
    Content-Type, X-Robots-Tag and Refresh are read); ``robot``: our name to robots <meta>s
    and X-Robots-Tag (besides ``robots``); ``parsing``: held while libxml2 parses (a slot)."""
    said = [(name.lower(), value) for name, value in (headers or {}).items()]  # repeats too
    encoding, certain = sniff(body, next((v for n, v in said if n == "content-type"), None))
    page = walk(body, encoding, robot, parsing)
    if not certain and page.declared not in (None, encoding):
        # A <meta> the prescan did not see (past 1024 bytes): the browser decodes again.
        encoding = page.declared
        page = walk(body, encoding, robot, parsing)
    page.heard(said)  # X-Robots-Tag, Refresh
    hrefs, nofollowed = page.found()
    return Links(hrefs, page.base, encoding, nofollow=page.says("nofollow"),
                 noindex=page.says("noindex"), nofollowed=nofollowed)


def base_url(page_url: str, links: Links) -> str:
    """The URL the page's relative links resolve against: its first ``<base href>`` made
    absolute, else the page's own. A ``<base>`` that is no http(s) URL leaves none
    (``about:blank``, against which only an absolute href resolves), as in Chromium."""
    if links.base is None:
        return page_url
    return resolve(page_url, links.base, links.encoding) or "about:blank"
