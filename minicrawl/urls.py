"""URL canonicalization: one spelling per page, so that Visited sees one key per page.

``canonicalize`` turns an href (resolved against its page) into the canonical absolute URL, or
raises :class:`BadURL` with a short reason. Two hrefs naming the same page get the same string:
lowercase scheme and host, IDNA host, no default port, ``.``/``..`` resolved, percent-escapes
normalised (unreserved characters decoded, hex upper-cased, unsafe characters encoded), no
fragment, and optionally a sorted query.

Written here rather than taken from ``w3lib.url.canonicalize_url`` because that function always
sorts the query (a different page on many sites) and costs several times more per link; this
is the hottest path of the crawler (every link of every page goes through it).
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from urllib.parse import urljoin, urlsplit

MAX_URL_LENGTH = 2048
DEFAULT_PORTS = {"http": 80, "https": 443}

# Characters that may stand unescaped in a canonical path / query (RFC 3986 pchar + "/" + "?").
_PATH_OK = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/]*")
_QUERY_OK = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*")
_ESCAPE_OR_UNSAFE_PATH = re.compile(r"%([0-9A-Fa-f]{2})?|[^A-Za-z0-9\-._~!$&'()*+,;=:@/]")
_ESCAPE_OR_UNSAFE_QUERY = re.compile(r"%([0-9A-Fa-f]{2})?|[^A-Za-z0-9\-._~!$&'()*+,;=:@/?]")
# userinfo (RFC 3986 3.2.1): like a path segment without "@" and "/"
_USERINFO_OK = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:]*")
_ESCAPE_OR_UNSAFE_USERINFO = re.compile(r"%([0-9A-Fa-f]{2})?|[^A-Za-z0-9\-._~!$&'()*+,;=:]")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_HOST_OK = re.compile(r"[a-z0-9\-_.]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_TAB_NEWLINE = re.compile(r"[\t\n\r]")
_TRIM = " " + "".join(map(chr, range(0x20)))  # what browsers strip around an href


class BadURL(ValueError):
    """A link that cannot be crawled. ``reason`` is a short label used in the stats."""

    def __init__(self, reason: str, url: str = "") -> None:
        super().__init__(f"{reason}: {url[:200]!r}")
        self.reason = reason
        self.url = url


def canonicalize(href: str, base: str | None = None, *, sort_query: bool = False,
                 max_length: int = MAX_URL_LENGTH) -> str:
    """The canonical absolute http(s) URL for ``href`` found on page ``base``.

    Raises :class:`BadURL` (with ``reason``) for anything that is not a crawlable http(s) URL,
    also for URLs longer than ``max_length`` ("too long").
    """
    url = absolute(href, base, max_length=max_length)
    try:
        parts = urlsplit(url)
    except ValueError as e:  # e.g. unbalanced IPv6 brackets
        raise BadURL("unparsable", href) from e

    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise BadURL("not http(s)" if scheme else "relative without base", href)
    try:
        netloc = _canonical_netloc(parts.netloc, scheme)
    except BadURL as e:
        raise BadURL(e.reason, href) from None
    path = _normalize_escapes(parts.path or "/", _PATH_OK, _ESCAPE_OR_UNSAFE_PATH)
    if not path.startswith("/"):
        path = "/" + path
    path = remove_dot_segments(path)
    query = parts.query
    if query:
        query = _normalize_escapes(query, _QUERY_OK, _ESCAPE_OR_UNSAFE_QUERY)
        if sort_query:
            query = "&".join(sorted(query.split("&")))
        result = f"{scheme}://{netloc}{path}?{query}"
    else:
        result = f"{scheme}://{netloc}{path}"
    if len(result) > max_length:
        raise BadURL("too long", href)
    return result


def absolute(href: str, base: str | None = None, *,
             max_length: int = MAX_URL_LENGTH) -> str:
    """``href`` cleaned as browsers do and resolved against ``base`` (RFC 3986 section 5.2),
    not yet canonical. Raises :class:`BadURL` for control characters and over-long hrefs."""
    # Browsers drop tabs and newlines anywhere and trim surrounding spaces/controls; so do we.
    href = href.strip(_TRIM)
    if "\t" in href or "\n" in href or "\r" in href:
        href = _TAB_NEWLINE.sub("", href)
    if _CONTROL.search(href):
        raise BadURL("control character", href)
    if len(href) > max_length:  # before parsing: a megabyte-long href costs nothing
        raise BadURL("too long", href)
    if not base:
        return href
    try:
        return join(base, href)
    except ValueError as e:  # e.g. unbalanced IPv6 brackets
        raise BadURL("unparsable", href) from e


def join(base: str, href: str) -> str:
    """Resolve ``href`` against the absolute http(s) URL ``base``, like ``urljoin`` but with
    string slicing for the forms pages use (``/p``, ``p``, ``../p``, ``?q``, ``#f``, ``//h/p``);
    dot segments are left for :func:`remove_dot_segments`. Anything else goes to ``urljoin``."""
    if not base.startswith(("http://", "https://")) or "#" in base:
        return urljoin(base, href)
    href = href.split("#", 1)[0]  # the fragment never reaches the server
    if not href:
        return base
    first = href[0]
    if first == "/":
        if href.startswith("//"):  # another host; an empty one is urljoin's odd case
            if href[2:3] in ("", "/", "?", "#"):
                return urljoin(base, href)
            return base[: base.index(":") + 1] + href
        origin = origin_of(base)
    elif first == "?":
        return base.split("?", 1)[0] + href
    else:
        colon = href.find(":")
        if colon >= 0 and not any(c in href[:colon] for c in "/?#"):
            return urljoin(base, href)  # it has a scheme of its own
        path_end = base.find("?")
        slash = base.rfind("/", 0, path_end if path_end >= 0 else len(base))
        if base[slash - 1] == "/":  # "http://host" with no path at all
            base, slash = base.split("?", 1)[0] + "/", len(base.split("?", 1)[0])
        origin = origin_of(base)
        href = base[len(origin): slash + 1] + href
    # Resolve dot segments now, so every spelling of a target is one string (one cache key).
    path, sep, query = href.partition("?")
    return origin + remove_dot_segments(path) + sep + query


def repeated_segments(url: str) -> int:
    """How often the most frequent segment occurs in the path of the canonical ``url``: 4 for
    ``/a/a/a/a/`` or ``/x/a/y/a/a/a``. Calendars and relative-link loops build such paths."""
    path = url.split("://", 1)[1].partition("/")[2].split("?", 1)[0]
    segments = [seg for seg in path.split("/") if seg]
    if len(segments) < 2:
        return len(segments)
    return max(segments.count(seg) for seg in set(segments))


def host_of(url: str) -> str:
    """The host of a canonical URL (without port)."""
    rest = url.split("://", 1)[1]
    netloc = rest.split("/", 1)[0]
    if netloc.startswith("["):
        return netloc[: netloc.index("]") + 1]
    return netloc.rsplit("@", 1)[-1].split(":", 1)[0]


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a canonical URL: the key for per-site state like robots.txt."""
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{rest.split('/', 1)[0]}"


@lru_cache(maxsize=4096)
def _canonical_netloc(netloc: str, scheme: str) -> str:
    href = netloc  # only for error messages; the caller names the whole link
    userinfo, _, hostport = netloc.rpartition("@")
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0:
            raise BadURL("unbalanced IPv6 bracket", href)
        host, portpart = hostport[1:end], hostport[end + 1 :]
        try:
            host = "[" + ipaddress.IPv6Address(host).compressed + "]"
        except ValueError as e:
            raise BadURL("invalid IPv6 host", href) from e
        if portpart and not portpart.startswith(":"):
            raise BadURL("invalid port", href)
        port = portpart[1:]
    else:
        host, _, port = hostport.partition(":")
        host = _canonical_host(host, href)
    if port:
        # isascii: "²" and "١" are digits to isdigit() but not to int() or to a server
        if not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
            raise BadURL("invalid port", href)
        port_number = int(port)
        if port_number != DEFAULT_PORTS[scheme]:
            host = f"{host}:{port_number}"
    if userinfo:  # "user@" is kept (it names another account); its text is escaped like a path
        userinfo = _normalize_escapes(userinfo, _USERINFO_OK, _ESCAPE_OR_UNSAFE_USERINFO)
        return f"{userinfo}@{host}"
    return host


def _canonical_host(host: str, href: str) -> str:
    host = host.lower().rstrip(".")
    if not host:
        raise BadURL("no host", href)
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as e:
            raise BadURL("host not valid IDNA", href) from e
    if not _HOST_OK.fullmatch(host) or ".." in host or len(host) > 253:
        raise BadURL("invalid host", href)
    if any(len(label) > 63 for label in host.split(".")):
        raise BadURL("invalid host", href)
    if "xn--" in host:  # an ASCII label claiming to be punycode must decode as such
        try:
            host.encode("ascii").decode("idna")
        except UnicodeError as e:
            raise BadURL("host not valid IDNA", href) from e
    return host


def _normalize_escapes(s: str, ok: re.Pattern[str], unsafe: re.Pattern[str]) -> str:
    if "%" not in s and ok.fullmatch(s):
        return s  # the common case: nothing to do
    return unsafe.sub(_fix_escape, s)


def _fix_escape(m: re.Match[str]) -> str:
    text = m.group(0)
    if text[0] == "%":
        hexdigits = m.group(1)
        if hexdigits is None:
            return "%25"  # a lone "%" is a literal percent sign
        char = chr(int(hexdigits, 16))
        return char if char in _UNRESERVED else "%" + hexdigits.upper()
    return "".join(f"%{b:02X}" for b in text.encode("utf-8", "surrogatepass"))


def remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4: resolve ``.`` and ``..`` segments of an absolute path."""
    if "/." not in path:
        return path
    out: list[str] = []
    segments = path.split("/")
    for seg in segments[1:]:
        if seg == "..":
            if out:
                out.pop()
        elif seg != ".":
            out.append(seg)
    trailing = segments[-1] in (".", "..")
    return "/" + "/".join(out) + ("/" if trailing and out else "")
