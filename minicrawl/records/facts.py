"""A page's facts as its record gives them (``--out``): what the page says of itself, read by
its walk (:mod:`minicrawl.html.facts`), with what its answer's headers say.

run.py's hooks (:mod:`minicrawl.visit.hooks`) make each answered page's :class:`Facts` from its
headers (:func:`header_facts`: a ``Link: <…>; rel="canonical"``, the ``Content-Language``),
then, for a page whose links the crawl reads, add the walk's (:meth:`Facts.read`): its title,
description, words, and its own canonical link and language, which come before the headers'.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minicrawl.html.facts import Found

# RFC 8288's Link header: link-values "<URI-Reference> *( ; param )", a comma between them; a
# param "name[=token|quoted-string]" (a comma or a semicolon may be inside <> or quotes).
_PARAM = re.compile(r'[ \t]*;[ \t]*([^\s;,=]+)[ \t]*(?:=[ \t]*(?:"((?:[^"\\]|\\.)*)"|([^\s;,]*)))?')


@dataclass(slots=True)
class Facts:
    """What a page says of itself (its record's fields of the same names; README's table)."""

    title: str | None = None  # None: no <title>, or the page's HTML not read
    description: str | None = None
    canonical: str | None = None  # the canonical URL (as written if it is no http(s) URL)
    lang: str | None = None
    words: int | None = None  # None: the page's HTML was not read (then no title either)

    def read(self, found: Found, canonical: str | None) -> None:
        """Add what the page's walk ``found`` (its ``canonical`` href as the crawl resolved it):
        a page's own canonical link and ``lang`` come before its headers'."""
        self.title, self.description, self.words = found.title, found.description, found.words
        if canonical is not None:
            self.canonical = canonical
        if found.lang is not None:  # (even "": the page says its language is unknown)
            self.lang = found.lang or None


def header_facts(headers: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(the URI-Reference of the answer's first ``Link`` with rel ``canonical``, as sent;
    its ``Content-Language``, trimmed) — each None if not said. ``headers``: case-insensitive,
    repeats joined with commas (as urllib3 gives them)."""
    # Asked before it is read: most answers say neither, and urllib3's headers' get (Mapping's)
    # finds a name missing by raising KeyError, ~1 µs of each answer's two misses (issue 49)
    link = headers["link"] if "link" in headers else None
    language = (headers["content-language"] if "content-language" in headers
                else "").strip(" \t") or None
    return (canonical_link(link) if link else None), language


def canonical_link(value: str) -> str | None:
    """The URI-Reference of the first link-value of a ``Link`` header ``value`` whose ``rel``
    (a list of relation types, any case) names ``canonical``, blanks around it trimmed; None."""
    at = 0
    while (start := value.find("<", at)) >= 0:
        close = value.find(">", start + 1)
        if close < 0:
            return None
        uri, at = value[start + 1:close], close + 1
        rels: str | None = None
        while (param := _PARAM.match(value, at)) is not None:
            at = param.end()
            name, quoted, token = param.groups()
            if name.lower() == "rel" and rels is None:  # (the first rel counts, RFC 8288 3.3)
                rels = quoted if quoted is not None else token or ""
        if rels is not None and "canonical" in rels.lower().split():
            return uri.strip(" \t")
    return None
