"""What a page says besides its links, in a ``<meta>`` or a header: a refresh (after how long,
to where) and its word to robots (nofollow, noindex, and whom it addresses).

:mod:`minicrawl.html.walk` asks it what such a content means, :mod:`minicrawl.core.links` what
an X-Robots-Tag or a Refresh header says.
"""

from __future__ import annotations

import re

ROBOT = "minicrawl"  # the name a <meta name=…> or an X-Robots-Tag addresses us by: the product
# token of run.py's default User-Agent (the core's is minicrawl-core); run.py passes --user-agent's
_BLANKS = "\t\n\x0c\r "


def directives(content: str) -> set[str]:
    """The robots directives of a ``<meta name=robots>`` content (comma-separated, any case):
    ``{"noindex", "nofollow"}``…"""
    return {word.strip(_BLANKS).lower() for word in content.split(",")}


# Directives whose value follows a colon: "unavailable_after: 25 Jun 2010" names no robot.
_VALUED = {"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"}
_ADDRESSED = re.compile(r"[\t\n\x0c\r ]*([\w.-]+)[\t\n\x0c\r ]*:(.*)", re.DOTALL)


def x_robots_tag(value: str, robot: str = ROBOT) -> set[str]:
    """The directives of one X-Robots-Tag header for ``robot``: all of them, unless it
    addresses another robot (``googlebot: nofollow``: none)."""
    if (addressed := _ADDRESSED.match(value)) and addressed[1].lower() not in _VALUED:
        if addressed[1].lower() != robot.lower():
            return set()
        value = addressed[2]
    return directives(value)


_URL_IS = re.compile(r"[Uu][Rr][Ll][\t\n\x0c\r ]*=[\t\n\x0c\r ]*(.*)", re.DOTALL)


def refresh(content: str) -> tuple[int, str] | None:
    """(delay, href) of a refresh's content, as the HTML standard's "shared declarative
    refresh steps" read it (``0; url='x'``, ``1,x``…; no URL: the page itself), or None."""
    text = content.lstrip(_BLANKS)
    digits = re.match(r"\d*", text)[0]  # type: ignore[index]
    if not digits and not text.startswith("."):
        return None
    rest = text[len(digits):].lstrip("0123456789.")  # a fraction counts for nothing
    if not rest:
        return int(digits or 0), ""
    if rest[0] not in ";," + _BLANKS:
        return None
    rest = rest.lstrip(_BLANKS)
    url = (rest[1:] if rest[:1] in (";", ",") else rest).lstrip(_BLANKS)
    if url[:1] in ("U", "u"):
        if (equals := _URL_IS.match(url)) is None:
            return int(digits or 0), url  # "u…" but no "url=": all of it is the URL
        url = equals[1]
    if url[:1] in ("'", '"'):
        url = url[1:].split(url[0], 1)[0]
    return int(digits or 0), url
