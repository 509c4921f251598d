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
import string
from functools import lru_cache
from urllib.parse import unquote_to_bytes, urljoin, urlsplit

MAX_URL_LENGTH = 2048
DEFAULT_PORTS = {"http": 80, "https": 443}

# Characters that may stand unescaped in a canonical path / query (RFC 3986 pchar + "/" + "?").
_PATH_OK = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/]*")
_PLAIN_PATH = re.compile(r"/[A-Za-z0-9\-._~!$&'()*+,;=:@/]*").fullmatch  # no "%", "?", "#"
_QUERY_OK = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*")
_ESCAPE_OR_UNSAFE_PATH = re.compile(r"%([0-9A-Fa-f]{2})?|[^A-Za-z0-9\-._~!$&'()*+,;=:@/]")
_ESCAPE_OR_UNSAFE_QUERY = re.compile(r"%([0-9A-Fa-f]{2})?|[^A-Za-z0-9\-._~!$&'()*+,;=:@/?]")
# userinfo (RFC 3986 3.2.1): like a path segment without "@" and "/"
_USERINFO_OK = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:]*")
_ESCAPE_OR_UNSAFE_USERINFO = re.compile(r"%([0-9A-Fa-f]{2})?|[^A-Za-z0-9\-._~!$&'()*+,;=:]")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# The URL Standard's forbidden domain code points (ASCII ones: the host is ASCII by then).
_FORBIDDEN_IN_HOST = re.compile(r"[\x00-\x20#%/:<>?@\[\\\]^|\x7f]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_TAB_NEWLINE = re.compile(r"[\t\n\r]")
TRIM = " " + "".join(map(chr, range(0x20)))  # what browsers strip around an href
_SPECIAL_SCHEME = re.compile(r"(https?):", re.IGNORECASE)


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
    if base is None and len(href) <= max_length and _plainly_canonical(href):
        return href
    return _canonicalize(href, base, sort_query, max_length)


def _plainly_canonical(url: str) -> bool:
    """True for the common URL that canonicalizing leaves as it is: an origin that is canonical
    and a path of characters that stand as they are, with no dot segment, query or fragment.
    (Most links of a site resolve to such URLs; the full path costs 4× more.)"""
    if not url.startswith(("http://", "https://")):
        return False
    slash = url.find("/", 8)
    return (slash > 0 and _PLAIN_PATH(url, slash) is not None and "/." not in url
            and _canonical_origin(url[:slash]))


@lru_cache(maxsize=1024)
def _canonical_origin(origin: str) -> bool:
    try:
        return _canonicalize(origin + "/", None, False, MAX_URL_LENGTH) == origin + "/"
    except BadURL:
        return False


def _canonicalize(href: str, base: str | None, sort_query: bool, max_length: int) -> str:
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
    href = href.strip(TRIM)
    if "\t" in href or "\n" in href or "\r" in href:
        href = _TAB_NEWLINE.sub("", href)
    if _CONTROL.search(href):
        raise BadURL("control character", href)
    if len(href) > max_length:  # before parsing: a megabyte-long href costs nothing
        raise BadURL("too long", href)
    first = href[:1]
    # Only a few hrefs need special_form; tell the common ones apart with no call (hot path).
    if "\\" in href or (first == "/" and href.startswith("///")) or (
            first in ("h", "H") and not (href.startswith("http://") and href[7:8] != "/"
                                         or href.startswith("https://") and href[8:9] != "/")):
        href = special_form(href, base)
    if not base:
        return href
    try:
        return join(base, href)
    except BadURL:
        raise
    except ValueError as e:  # e.g. unbalanced IPv6 brackets
        raise BadURL("unparsable", href) from e


def special_form(href: str, base: str | None) -> str:
    """``href`` rewritten so that RFC 3986 resolution (:func:`join`) gives what the WHATWG URL
    Standard gives for http(s) URLs, where they differ:

    * a backslash before the query is a slash (``\\x`` is ``/x``, ``http:\\\\h\\p`` is
      ``http://h/p``);
    * any run of slashes after ``//`` belongs to the authority (``///h/p`` is ``//h/p``);
    * ``http:`` with no or one slash starts the authority, unless the base has the same scheme:
      then the rest is relative (``https:h/`` is ``https://h/``; on an https page it is the
      relative path ``h/``).

    The ordinary forms (``/p``, ``p``, ``//h/p``, ``http://h/p``) are returned unchanged.
    """
    if "\\" in href:
        cut = min((i for i in (href.find("?"), href.find("#")) if i >= 0), default=len(href))
        href = href[:cut].replace("\\", "/") + href[cut:]
    if href.startswith("//"):
        return "//" + href.lstrip("/") if href.startswith("///") else href
    match = _SPECIAL_SCHEME.match(href)
    if match is None:
        return href
    scheme, rest = match.group(1).lower(), href[match.end():]
    if rest.startswith("//") and not rest.startswith("///"):
        return href  # the common absolute URL
    if base is not None and base[: len(scheme) + 1].lower() == scheme + ":" \
            and not rest.startswith("//"):
        # Same scheme as the page: a relative reference ("./" keeps "a:b" from being a scheme).
        return rest if rest[:1] in ("", "/", "?", "#") else "./" + rest
    return f"{scheme}://{rest.lstrip('/')}"


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
        if href.startswith("//"):  # another host
            if href[2:3] in ("", "?"):  # none at all: urljoin would take the page's own
                raise BadURL("no host", href)
            if href[2:3] == "/":
                return urljoin(base, href)
            return base[: base.index(":") + 1] + href
        origin = origin_of(base)
    elif first == "?":
        return base.split("?", 1)[0] + href
    else:
        colon = href.find(":")
        if colon >= 0 and not any(c in href[:colon] for c in "/?#"):
            if href[colon:colon + 3] == "://" and href[colon + 3:colon + 4] in ("", "?") \
                    and href[:colon].lower() in DEFAULT_PORTS:
                raise BadURL("no host", href)  # "http://": urljoin would take the page's host
            return urljoin(base, href)  # it has a scheme of its own
        path_end = base.find("?")
        slash = base.rfind("/", 0, path_end if path_end >= 0 else len(base))
        if slash <= base.index("://") + 2:  # "http://host" with no path at all
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
    distinct = set(segments)
    if len(distinct) == len(segments):  # the common case: no segment repeats
        return min(1, len(segments))
    return max(segments.count(seg) for seg in distinct)


def host_of(url: str) -> str:
    """The host of a canonical URL (without userinfo and port; "" for a non-URL): what the
    crawl paces, caps and scopes by."""
    netloc = url.partition("://")[2].split("/", 1)[0].rsplit("@", 1)[-1]
    if netloc.startswith("["):
        return netloc[: netloc.find("]") + 1]
    return netloc.split(":", 1)[0]


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
            if "%" in host:  # a zone id ("fe80::1%eth0") is no part of a URL's host
                raise ValueError(host)
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
    user, _, password = userinfo.partition(":")
    if user or password:  # "user@" is kept (it names another account), escaped like a path
        # An empty password is no password ("u:@h" is "u@h"), as browsers write it.
        userinfo = f"{user}:{password}" if password else user
        userinfo = _normalize_escapes(userinfo, _USERINFO_OK, _ESCAPE_OR_UNSAFE_USERINFO)
        return f"{userinfo}@{host}"
    return host


def _canonical_host(host: str, href: str) -> str:
    """The WHATWG URL Standard's host parser for http(s), then canonical: percent-escapes
    decoded, UTS-46 mapped (non-transitional) to ASCII, an IPv4 address in any of its forms
    written as a dotted quad; trailing dots dropped, names DNS could never resolve refused."""
    if "%" in host:
        try:
            host = unquote_to_bytes(host).decode("utf-8")
        except UnicodeDecodeError as e:
            raise BadURL("invalid host", href) from e
    if host.isascii():  # the common case: UTS-46 maps ASCII to lowercase, nothing more
        host = host.lower()
        if "xn--" in host:  # an ASCII label claiming to be punycode must be valid IDNA
            _check_punycode_labels(host, href)
    else:
        host = domain_to_ascii(host, href)
    host = host.rstrip(".")
    if not host:
        raise BadURL("no host", href)
    if host[-1].isdigit() or "0x" in host:  # only then can the host end in a number
        ipv4 = _ipv4_or_none(host, href)
        if ipv4 is not None:
            return ipv4
    if _FORBIDDEN_IN_HOST.search(host):
        raise BadURL("invalid host", href)
    if ".." in host or len(host) > 253 or any(len(label) > 63 for label in host.split(".")):
        raise BadURL("invalid host", href)  # a name DNS could never resolve
    return host


@lru_cache(maxsize=1024)
def domain_to_ascii(host: str, href: str = "") -> str:
    """UTS-46 ToASCII, non-transitional, as the URL Standard's "domain to ASCII" asks
    (``faß.example`` → ``xn--fa-hia.example``, not IDNA2003's ``fass.example``, another
    registrant's name). Raises :class:`BadURL` ("host not valid IDNA")."""
    import idna  # requests' own dependency; only non-ASCII hosts get here

    try:
        mapped = idna.uts46_remap(host, std3_rules=False, transitional=False)
        labels = []
        for label in mapped.split("."):
            if label.isascii():  # ASCII labels as they are, like the fast path
                if label.startswith("xn--"):
                    idna.ulabel(label)
                labels.append(label)
            else:
                labels.append(idna.alabel(label).decode("ascii"))
    except (idna.IDNAError, UnicodeError, ValueError) as e:
        raise BadURL("host not valid IDNA", href) from e
    return ".".join(labels)


def _check_punycode_labels(host: str, href: str) -> None:
    for label in host.split("."):
        if label.startswith("xn--"):
            domain_to_ascii(label, href)  # cached; BadURL if it does not decode to valid IDNA


def _ipv4_or_none(host: str, href: str) -> str | None:
    """The URL Standard's IPv4 parser: ``127.1``, ``0x7f.1``, ``0177.0.0.1`` and ``2130706433``
    are ``127.0.0.1``. None when the host does not end in a number (a domain); BadURL when it
    does but is no valid address (``192.168.0.257``, ``4294967296``, ``foo.1``)."""
    parts = host.split(".")
    last = parts[-1]
    if not (last.isascii() and (last.isdigit() or last[:2] in ("0x", "0X")
                                and all(c in string.hexdigits for c in last[2:]))):
        return None  # a domain
    if len(parts) > 4:
        raise BadURL("invalid IPv4 address", href)
    numbers = [_ipv4_number(part, href) for part in parts]
    if any(n > 255 for n in numbers[:-1]) or numbers[-1] >= 256 ** (5 - len(numbers)):
        raise BadURL("invalid IPv4 address", href)
    address = numbers[-1] + sum(n << (8 * (3 - i)) for i, n in enumerate(numbers[:-1]))
    return ".".join(str(address >> shift & 255) for shift in (24, 16, 8, 0))


def _ipv4_number(part: str, href: str) -> int:
    """One part of an IPv4 host: decimal, ``0x`` hex or ``0`` octal (the URL Standard's)."""
    radix = 10
    if part[:2] in ("0x", "0X"):
        part, radix = part[2:], 16
    elif len(part) > 1 and part[0] == "0":
        part, radix = part[1:], 8
    if not part:
        if radix == 10:  # an empty part ("1..2")
            raise BadURL("invalid IPv4 address", href)
        return 0  # "0x" is 0
    try:
        if not part.isascii() or part[0] in "+-_ " or "_" in part:  # int() would accept these
            raise ValueError(part)
        return int(part, radix)
    except ValueError:
        raise BadURL("invalid IPv4 address", href) from None


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
