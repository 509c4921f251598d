"""URLs: one spelling per page, so that Visited can recognise a URL it has seen.

A link is read as a browser reads it, by the WHATWG URL Standard (url.spec.whatwg.org) through
``ada_url`` (Node.js's parser), so the crawl asks for what a browser would ask for:
``HTTP://Ex.org:80/a/../b`` is ``http://ex.org/b``, ``\\x`` is ``/x``, ``faß.de`` is
``xn--fa-hia.de``, ``http://127.1`` is ``http://127.0.0.1/``, a link's query is percent-encoded in
its page's encoding (its path in UTF-8). Canonical is the parser's answer and our choices, one
spelling for what servers read alike:

* no fragment (``#top`` never leaves the browser), no empty query (requests sends ``/p?`` as /p);
* the path and query in RFC 3986's characters: escaped unreserved characters decoded, other
  escapes' hex digits upper-cased (6.2.2: ``%7eme/%2f`` is ``~me/%2F``), the characters it does
  not allow escaped (``{`` is ``%7B``, which servers read alike) and a ``%`` that starts no escape
  written ``%25``. urllib3 would escape those itself, and then every ``%`` of the URL (``%41``
  too); so the request line is exactly the URL Visited holds;
* only http and https, at most ``MAX_LENGTH`` characters (a longer href is not even parsed):
  anything else is no URL to crawl (:func:`canonical` says why; the others answer None).
"""

import re

import ada_url

from minicrawl.html.encoding import query_encoded
from minicrawl.refused import why_refused

MAX_LENGTH = 2048
# A path and query that go on the wire as they are: RFC 3986's characters, no "%"…
_AS_SENT = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*").fullmatch
# …else each escape, each "%" and each character outside that set is looked at (_one_escape).
_ESCAPE = re.compile(r"%(?:[0-9A-Fa-f]{2})?|[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%]")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def canonical(href: str, base: str | None = None, encoding: str = "utf-8",
              max_length: int = MAX_LENGTH) -> tuple[str | None, str]:
    """(canonical URL, "") for the link ``href`` on the page ``base`` (None: ``href`` is
    absolute) whose encoding is ``encoding``; or (None, why there is none)."""
    if len(href) > max_length:
        return None, "too long"
    if not href.isascii() or encoding == "iso-2022-jp":  # (its ESC, SO, SI are no bytes of it)
        href = query_encoded(href, encoding)
    try:
        url = ada_url.join_url(base, href) if base else ada_url.normalize_url(href)
    except ValueError:
        return None, why_refused(href, base)
    if not url.startswith(("http://", "https://")):
        return None, "not http(s)"
    url = url.partition("#")[0]
    if url.find("?") == len(url) - 1:  # an empty query
        url = url[:-1]
    at = url.find("/", url.index("//") + 2)  # the path and query: what the request line holds
    if not _AS_SENT(url, at):
        url = url[:at] + _ESCAPE.sub(_one_escape, url[at:])
    return (url, "") if len(url) <= max_length else (None, "too long")


def canonicalize(url: str) -> str | None:
    """``url`` (absolute) in canonical form, or None if it is not a crawlable http(s) URL."""
    return canonical(url)[0]


def resolve(page: str, href: str, encoding: str = "utf-8") -> str | None:
    """The canonical URL the link ``href`` on ``page`` points to, or None; ``encoding``: the
    page's (a browser percent-encodes a link's query in it)."""
    return canonical(href, page, encoding)[0]


def host_of(url: str) -> str:
    """``host[:port]`` of a canonical URL ("" if none), one server: the key of pace, caps, scope.
    Its http and https are one host; user:password@ is no part (one server is paced once)."""
    return url.partition("://")[2].partition("/")[0].rpartition("@")[2]


def _one_escape(match: re.Match[str]) -> str:
    text = match[0]
    if text == "%":
        return "%25"  # a "%" that starts no escape is a percent sign
    if len(text) == 1:
        return f"%{ord(text):02X}"  # "{", "|", "[" … (the parser's answer is ASCII)
    char = chr(int(text[1:], 16))
    return char if char in _UNRESERVED else text.upper()
