"""How the core's fetcher reads an answer (:class:`minicrawl.core.fetch.Fetcher` calls
:func:`read_body`, :func:`location_of`, :func:`describe` for a request that failed and
:func:`transient` for whether a retry is worth it): the body in pieces, each timed, cut at a cap
counted *after* decompression (a 10 KB gzip bomb can inflate to gigabytes), a Content-Encoding
undone or the body kept as received (:func:`undone`: run.py's robots.txt reader and trip ask it
too; the WARC writer looks for :data:`NOT_UNDONE` in an error); a redirect's Location read as
browsers read it; the cookies an answer sets kept (:func:`keep_cookies`).
"""

import errno
import re
import time
from http.cookiejar import CookieJar

import requests
import urllib3
from requests.cookies import extract_cookies_to_jar
from urllib3.response import BaseHTTPResponse, HTTPResponse

from minicrawl.redact import redact

CHUNK = 256 * 1024
NOT_UNDONE = "is not undone here"  # a body kept as received (the WARC writer asks)


def read_body(answer: requests.Response, start: float, max_bytes: int, deadline: float,
              prefix: bool = False) -> tuple[bytes, str | None]:
    """The decoded body of ``answer`` (a request sent at ``start``, ``time.monotonic``) and
    None, or as much as came (≤ ``max_bytes``) and why it is not all of it: over the cap, not
    all in by ``deadline`` seconds, cut short. A body declared over the cap is not read, unless
    ``prefix``: then it is read up to the cap."""
    if answer.request.method == "HEAD":  # no body: its Content-Length is what a GET would get
        return b"", None
    coding = answer.headers.get("Content-Encoding", "identity").lower()
    declared = answer.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > max_bytes and not prefix:
        return b"", f"body larger than max_bytes ({max_bytes}): Content-Length {declared}"
    chunks, size, error, decode = [], 0, None, undone(coding)  # else kept as it came
    # A body in no coding is read as it came too: urllib3 would pass each piece through its
    # decoding (none) and a buffer of its own, a copy. A body read as it came is all in once
    # urllib3 has closed the answer (the declared length read, or the connection's end), the
    # connection back in its pool: not asked again for the b"" it would then give. A body it
    # decodes is asked on (its decoder may hold more).
    as_sent = not decode or coding in ("identity", "")
    raw = answer.raw
    try:  # read1: what one read of the socket brought, so a trickle is timed piece by piece
        while error is None and (chunk := raw.read1(CHUNK, decode_content=not as_sent)):
            chunks.append(chunk)
            size += len(chunk)  # the cap counts decoded bytes
            if size > max_bytes:
                error = f"body larger than max_bytes ({max_bytes})"
            elif time.monotonic() - start > deadline:
                error = f"body too slow (over the {deadline:g} s deadline)"
            elif as_sent and raw.isclosed():
                break
    except urllib3.exceptions.HTTPError as exc:  # cut short, stalled, not inflatable
        error = describe(exc)
    if not decode and error is None:  # the body as it came, no page to read links from
        error = f"DecodeError: Content-Encoding {coding[:40]!r} {NOT_UNDONE}"
    return b"".join(chunks)[: max_bytes], error  # cut short: what came, and why


def keep_cookies(jar: CookieJar, request: requests.PreparedRequest,
                 raw: BaseHTTPResponse) -> None:
    """Put the cookies the answer ``raw`` (to ``request``) sets into ``jar``, as ``requests``'
    ``extract_cookies_to_jar`` does; only an answer with a field that sets one is handed to it.
    cookielib reads Set-Cookie and Set-Cookie2 (the second only under an RFC 2965 policy) and
    nothing else: ~10 µs of mock objects and lookups spared an answer with neither (issue 49)."""
    if "set-cookie" in raw.headers or "set-cookie2" in raw.headers:  # any case
        extract_cookies_to_jar(jar, request, raw)


def undone(coding: str) -> bool:
    """True if urllib3 undoes this Content-Encoding: none, one it knows (br, zstd with their
    libraries), or a list of them (``gzip, br``: at most 5); not one sent as ``gzip `` (it would
    hand it over as sent) or a list with another (it would take that one for deflate)."""
    codings = coding.lower().split(",")
    if len(codings) == 1:
        return coding.lower() in ("identity", "", *HTTPResponse.CONTENT_DECODERS)
    return len(codings) <= 5 and all(c.strip() in HTTPResponse.CONTENT_DECODERS for c in codings)


def location_of(answer: requests.Response) -> str | None:
    """A redirect's Location, its bytes read as UTF-8 as browsers read them (http.client read
    them as Latin-1); a byte that is no UTF-8 is U+FFFD, as in Chrome (requests would raise)."""
    if not answer.is_redirect:
        return None
    return answer.headers["Location"].encode("latin-1").decode("utf-8", "replace")


# Kinds are the names of requests' and urllib3's exceptions, as run.py's records count them.
_KINDS = {"ReadTimeoutError": "ReadTimeout", "ContentDecodingError": "DecodeError",
          "ChunkedEncodingError": "ProtocolError"}
# The kinds that are the network's (reset, refused, timed out, a proxy down), not the server's
# word or the page's: the same request may well succeed later.
TRANSIENT = frozenset({"ConnectionError", "ConnectTimeout", "ReadTimeout", "ProtocolError",
                       "ProxyError"})


def describe(exc: BaseException) -> str:
    """One line for a failed request: its kind, the innermost reason (a URL it quotes redacted:
    ``bob:***@``)."""
    kind = _KINDS.get(type(exc).__name__, type(exc).__name__)
    for _ in range(10):  # a bound, in case a chain of causes loops
        causes = (getattr(exc, "reason", None), exc.__cause__, *exc.args[:1])
        if (inner := next((c for c in causes if isinstance(c, BaseException)), None)) is None:
            break
        exc = inner
    text = redact((str(exc).splitlines() or [type(exc).__name__])[0])
    return f"{kind}: {text[:200]}"


# No connection was made: nothing listens (refused), no route, no address for the name (a
# getaddrinfo error: negative), or no answer to the connect in time.
_NO_CONNECTION = re.compile(
    r"^(?:ConnectTimeout:|(?:ConnectionError|ProxyError): \[Errno (?:-\d+|"
    + "|".join(map(str, (errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH))) + r")\])")


def could_not_connect(error: str | None) -> bool:
    """True if ``error`` (as :func:`describe` wrote it) says no connection to the host (or its
    proxy) was made — refused, unreachable, a name that does not resolve, a connect time-out —
    not a connection lost midway (a reset), not an answer."""
    return error is not None and _NO_CONNECTION.match(error) is not None


def transient(error: str | None) -> bool:
    """True if ``error`` (an answer's, as :func:`describe` or :func:`read_body` wrote it) was
    the network's: worth a retry. A body over the cap or too slow, a coding not undone, a
    certificate refused are not; nor is None (no error)."""
    return error is not None and error.partition(":")[0] in TRANSIENT
