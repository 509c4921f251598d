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
    scheme = _SCHEME.match(href)
    name = re.sub(r"[\t\n\r]", "", scheme[1]).lower() if scheme else (base or "").partition(":")[0]
    if name in ("http", "https"):
        return "invalid host or port"
    return "not http(s)" if scheme else "no scheme"
