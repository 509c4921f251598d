"""What a page is when its answer names no type: the MIME Sniffing standard's rule, which the
core's :func:`minicrawl.core.links.is_html` asks for a page with no Content-Type (or one that
names no type).
"""

import re

# The MIME Sniffing standard's HTML patterns (7.1, "identifying an unknown MIME type").
_HTML_SIGNATURE = re.compile(rb"[\t\n\x0c\r ]*<(?:!doctype html|html|head|script|iframe|h1|div|"
                             rb"font|table|a|style|title|b|body|br|p|!--)[ >]", re.IGNORECASE)


def sniffs_html(body: bytes) -> bool:
    """True if ``body`` starts, after blanks, with one of the MIME Sniffing standard's HTML
    signatures (``<!DOCTYPE HTML``, ``<html``, ``<a``, ``<!--``… then a space or ``>``: a tab or
    newline there is no match), in its first 512 bytes, as browsers sniff an unknown type."""
    return _HTML_SIGNATURE.match(body[:512]) is not None
