"""What a stylesheet loads: each ``url()`` and ``@import`` of its text, with its line — the
edges of a stylesheet the crawl checks (``--check-links``), reported against the stylesheet,
not against each page that uses it.

The text is decoded as the CSS Syntax standard says (a byte-order mark, the HTTP charset, an
``@charset`` rule, else UTF-8) and read by its tokenizer (``tinycss2``): comments are no links,
``url(a\\29 b.png)`` is ``a)b.png``, ``url("x.png")`` and ``url(x.png)`` are one. A ``data:``
URL carries its content (a font, an image: often kilobytes) and is no link to check: left out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import tinycss2
from tinycss2.ast import Node
from tinycss2.bytes import decode_stylesheet_bytes

MAX_URLS = 20_000  # a stylesheet's URLs read at most (a hostile one may hold millions)
IMAGE_SETS = ("image-set", "-webkit-image-set")  # whose strings are URLs too


@dataclass(frozen=True, slots=True)
class CssLink:
    """One URL a stylesheet loads."""

    href: str  # as written, its escapes undone
    line: int  # the stylesheet's line it is on
    how: str  # "url" (a url()) or "@import" (@import "x.css")


def css_links(body: bytes, charset: str | None = None) -> list[CssLink]:
    """The URLs the stylesheet ``body`` loads, in order (at most ``MAX_URLS``); ``charset``:
    its Content-Type's, if any."""
    text, _ = decode_stylesheet_bytes(body, protocol_encoding=charset)
    found: list[CssLink] = []
    _walk(tinycss2.parse_component_value_list(text, skip_comments=True), found)
    return found


def _walk(tokens: Iterable[Node], found: list[CssLink]) -> None:
    importing = False  # after @import, its first string or url() is what it imports
    for token in tokens:
        if len(found) >= MAX_URLS:
            return
        kind = token.type
        if kind == "url":
            _add(found, token.value, token.source_line, "@import" if importing else "url")
            importing = False
        elif kind == "function":
            string = next((a for a in token.arguments if a.type == "string"), None)
            if token.lower_name == "url" and string is not None:  # url("x.png")
                _add(found, string.value, token.source_line, "@import" if importing else "url")
                importing = False
            elif token.lower_name in IMAGE_SETS:  # image-set("a.png" 1x, url(b.png) 2x)
                for argument in token.arguments:
                    if argument.type == "string":
                        _add(found, argument.value, argument.source_line, "url")
                _walk(token.arguments, found)
            else:
                _walk(token.arguments, found)
        elif kind in ("() block", "[] block", "{} block"):
            _walk(token.content, found)
        elif kind == "at-keyword":
            importing = token.lower_value == "import"
        elif kind == "string" and importing:
            _add(found, token.value, token.source_line, "@import")
            importing = False
        elif kind == "literal" and token.value == ";":
            importing = False


def _add(found: list[CssLink], href: str, line: int, how: str) -> None:
    href = href.strip()
    if href and not href[:5].lower() == "data:":
        found.append(CssLink(href, line, how))
