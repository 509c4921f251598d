"""URLs: one spelling per page, so that Visited can recognise a URL it has seen.

``HTTP://Example.org:80/a/../b#top`` and ``http://example.org/b`` are one page: a link is made
absolute against its page, then canonical — scheme and host lower-cased, the default port and
the fragment dropped, ``..`` and ``.`` resolved, an empty path ``/``, what a URL may not hold
percent-encoded. Only http(s) URLs are crawlable; ``mailto:``, a broken port… are None.
"""

import re
from functools import lru_cache
from urllib.parse import quote, urljoin, urlparse, urlsplit, urlunsplit

MAX_LENGTH = 2048
DEFAULT_PORTS = {"http": 80, "https": 443}
# What may stay as it is in a path or query: RFC 3986's reserved and unreserved characters and
# '%' (already-encoded bytes are left alone); spaces, quotes, non-ASCII… are encoded.
_SAFE = "/?:@!$&'()*+,;=-._~%"
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_NOT_IN_HOST = re.compile(r"[\s#%/<>?@\[\\\]^|]")  # WHATWG's forbidden host code points
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})?")


def canonicalize(url: str) -> str | None:
    """``url`` (absolute) in canonical form, or None if it is not a crawlable http(s) URL."""
    try:
        parts = urlsplit(url.strip())
        scheme, host, port = parts.scheme.lower(), parts.hostname, parts.port
        if scheme not in DEFAULT_PORTS or not host or _NOT_IN_HOST.search(host):
            return None
        if not host.isascii():
            host = host.encode("idna").decode("ascii")  # bücher.de → xn--bcher-kva.de
    except (ValueError, UnicodeError):  # a port that is no number, a host IDNA refuses
        return None
    if ":" in host:
        host = f"[{host}]"  # an IPv6 address keeps its brackets
    netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    path = _escapes_normal(quote(parts.path, safe=_SAFE)) or "/"
    if "/." in path:
        path = _without_dot_segments(path)
    query = _escapes_normal(quote(parts.query, safe=_SAFE))
    canonical = urlunsplit((scheme, netloc, path, query, ""))
    return canonical if len(canonical) <= MAX_LENGTH else None


def _escapes_normal(text: str) -> str:
    """RFC 3986, 6.2.2: ``%70`` → ``p`` (an unreserved character needs no escape), ``%2f`` →
    ``%2F`` (hex digits upper-case), a ``%`` that starts no escape → ``%25``."""
    return _ESCAPE.sub(_one_escape, text) if "%" in text else text


def _one_escape(match: re.Match[str]) -> str:
    if match[1] is None:
        return "%25"
    char = chr(int(match[1], 16))
    return char if char in _UNRESERVED else "%" + match[1].upper()


def origin(url: str) -> str:
    """``scheme://host[:port]/`` of a canonical URL (its path always starts with ``/``)."""
    return url[: url.index("/", url.index("//") + 2) + 1]


def _without_dot_segments(path: str) -> str:
    """``/a/./b/../c`` → ``/a/c`` (RFC 3986, 5.2.4); ``..`` never climbs above the root."""
    kept: list[str] = []
    for segment in path.split("/")[1:]:
        if segment == "..":
            if kept:
                kept.pop()
        elif segment != ".":
            kept.append(segment)
    return "/" + "/".join(kept) + ("/" if kept and path.endswith(("/.", "/..")) else "")


def resolve(page: str, href: str) -> str | None:
    """The canonical absolute URL a link ``href`` on ``page`` (a canonical URL) points to."""
    # Pages of one folder share most of their links (menus, the index, the parent), which mean
    # the same on each: resolving once per folder saves 14 % of the Java API docs crawl's time.
    path = page.split("?", 1)[0]
    url = _resolve_in_folder(path[: path.rfind("/") + 1], href)
    return canonicalize(urljoin(page, href)) if url == "" else url


@lru_cache(maxsize=8192)
def _resolve_in_folder(folder: str, href: str) -> str | None:
    try:
        parts = urlparse(href)  # as urljoin reads it: blanks cut, 'HTTP:' the page's scheme…
    except ValueError:  # 'http://[::1': urljoin refuses it too
        return None
    if not (parts.netloc or parts.path or parts.params):  # '', '?q', '#f', 'http:', ';'
        return ""  # not in the folder: the page itself, or another query of it
    return canonicalize(urljoin(folder, href))
