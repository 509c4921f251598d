"""Does a link's ``#fragment`` name a part of its target page? The HTML standard's rule for the
*indicated part* of a document (7.4.6.4, "find a potential indicated element"), given the
page's anchors — its elements' ids and its ``<a>``s' names (:class:`~minicrawl.html.edges.
AnchorWalk`):

1. an empty fragment (``page.html#``) indicates the top of the page;
2. an element whose id is the fragment as written, or an ``<a>`` whose name is;
3. else the same for the fragment percent-decoded (as UTF-8: ``#caf%C3%A9`` finds ``id=café``);
4. else ``top`` (any case) indicates the top of the page.

Anything else names nothing there: a browser opens the page at its top, and the reader lands
somewhere else than the link promised — a warning of its own kind, not a broken link.
"""

from __future__ import annotations

from collections.abc import Container
from urllib.parse import unquote


def fragment_of(href: str) -> str | None:
    """The fragment of the link ``href`` as written (after its first ``#``), or None if none."""
    at = href.find("#")
    return None if at < 0 else href[at + 1:]


def names_a_part(fragment: str, anchors: Container[str]) -> bool:
    """True if ``fragment`` indicates a part of a page whose anchors are ``anchors``."""
    if not fragment or fragment in anchors:
        return True
    decoded = unquote(fragment, errors="replace") if "%" in fragment else fragment
    return decoded in anchors or decoded.lower() == "top"
