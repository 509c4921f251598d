"""Is a page HTML? Its Content-Type says so (:func:`is_html`), or, when its answer names no type,
the MIME Sniffing standard's rule (:func:`sniffs_html`).
"""

import re

# The MIME Sniffing standard's HTML patterns (7.1, "identifying an unknown MIME type").
_HTML_SIGNATURE = re.compile(rb"[\t\n\x0c\r ]*<(?:!doctype html|html|head|script|iframe|h1|div|"
                             rb"font|table|a|style|title|b|body|br|p|!--)[ >]", re.IGNORECASE)
HTML_TYPES = ("text/html", "application/xhtml+xml")


def is_html(content_type: str | None, body: bytes = b"") -> bool:
    """True for a page whose links are followed: one of ``HTML_TYPES``; with no Content-Type
    (or one that names no type), if ``body`` sniffs as HTML, as browsers sniff it."""
    essence = (content_type or "").split(";", 1)[0].strip(" \t").lower()
    if essence in ("", "unknown/unknown", "application/unknown", "*/*"):  # to be sniffed
        return sniffs_html(body)
    return essence in HTML_TYPES


def sniffs_html(body: bytes) -> bool:
    """True if ``body`` starts, after blanks, with one of the MIME Sniffing standard's HTML
    signatures (``<!DOCTYPE HTML``, ``<html``, ``<a``, ``<!--``… then a space or ``>``: a tab or
    newline there is no match), in its first 512 bytes, as browsers sniff an unknown type."""
    return _HTML_SIGNATURE.match(body[:512]) is not None
