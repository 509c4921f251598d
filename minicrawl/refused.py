"""Why the WHATWG URL parser refused a link: the reason the core's
:func:`minicrawl.core.urls.canonical` gives with its None, which run.py's resolver counts and its
trace and seed checks tell ("invalid host or port", "not http(s)", "no scheme").
"""

import re

_SCHEME = re.compile(r"[\x00-\x20]*([A-Za-z][A-Za-z0-9+.\-\t\n\r]*):")  # tabs, newlines: ignored


def why_refused(href: str, base: str | None) -> str:
    """Why the parser refused ``href`` on the page ``base`` (None: none): it says only no. In an
    http(s) URL it refuses nothing but a host or a port (it percent-encodes the rest), so that
    is the reason, unless a relative href has no base."""
    scheme = scheme_of(href)
    name = scheme if scheme is not None else (base or "").partition(":")[0].lower()
    if name in ("http", "https"):
        return "invalid host or port"
    return "not http(s)" if scheme is not None else "no scheme"


def scheme_of(href: str) -> str | None:
    """The scheme the parser reads ``href`` with (lower-cased), or None if it has none of its
    own (a relative href): any other than http(s) makes it no URL to crawl, whether the parser
    accepts the rest or not."""
    scheme = _SCHEME.match(href)
    return re.sub(r"[\t\n\r]", "", scheme[1]).lower() if scheme else None
