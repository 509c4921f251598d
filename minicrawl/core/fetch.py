"""Fetching: one URL's answer, over HTTP with ``requests``.

Each worker has its own :class:`Fetcher`, so its own ``requests.Session``: keep-alive
connections reused from page to page, never shared between threads. Redirects are not followed
here: a 3xx answer's ``Location`` goes back to the worker, which sends it through admission and
Visited like any link, so a redirect can never fetch a page twice; one back to a URL already seen
ends there (a cookie check, /x → /login → /x, never gets /x's page).

A server is never trusted: the body is read in pieces and cut at ``max_bytes`` *after*
decompression (a 10 KB gzip bomb can inflate to gigabytes); connecting and each read wait at
most ``timeout`` seconds; the body must come within ``deadline`` seconds of the request's start,
checked as each piece arrives (a byte a second never trips a read time-out; a stalled read can
add one ``timeout``; the head is not checked so).
"""

import base64
import os
import re
import time
from collections.abc import Iterable, Mapping
from urllib.parse import unquote

import requests
import urllib3
from requests.cookies import extract_cookies_to_jar
from requests.utils import get_environ_proxies
from urllib3.response import HTTPResponse

from minicrawl.core.interfaces import Response
from minicrawl.core.urls import origin, origin_of

USER_AGENT = "minicrawl-core/0.1 (+https://github.com/minicrawl/minicrawl)"
CHUNK = 256 * 1024
MAX_BODY_BYTES = 2**30  # the highest cap a crawl may set: each worker holds its page's body
CA_VARIABLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE")  # the first set is used
NOT_UNDONE = "is not undone here"  # a body kept as received (the WARC writer asks)


class Fetcher:
    """One worker's HTTP client: ``fetch(url)`` → :class:`Response`, never an exception."""

    def __init__(self, user_agent: str = USER_AGENT, timeout: float = 10.0,
                 deadline: float = 60.0, max_bytes: int = 10 * 2**20) -> None:
        self.timeout, self.deadline, self.max_bytes = timeout, deadline, max_bytes
        self.read_prefix = False  # True: a body declared over the cap is read up to it, not skipped
        self.credentials: Mapping[str, str] = {}  # origin → Authorization (seed_credentials)
        self.session = requests.Session()
        self.session.headers["User-Agent"] = user_agent
        # requests reads the proxy and CA variables (and ~/.netrc) for each request, ~0.5 ms: here
        # the CA bundle is read once, proxies (the session's, else the environment's) per origin.
        self.session.verify = next(filter(None, map(os.environ.get, CA_VARIABLES)), True)
        self._proxies: dict[str, dict[str, str]] = {}
        # One prepared request, copied for each URL: Session.get merges settings anew (¼ of its CPU)
        self._template = self.session.prepare_request(requests.Request("GET", "http://x/"))

    def fetch(self, url: str, headers: Mapping[str, str] | None = None) -> Response:
        """GET ``url`` (canonical) with ``headers`` added, following no redirect."""
        start = time.monotonic()
        try:
            request = self._template.copy()
            request.prepare_url(url, None)
            request.prepare_cookies(self.session.cookies)
            request.headers.update(headers or {})
            if auth := authorization(url, self.credentials):
                request.headers["Authorization"] = auth
            # The adapter: Session.send would prepare a redirect's next request, even unfollowed
            with self.session.get_adapter(url).send(request, stream=True, timeout=self.timeout,
                                                    verify=self.session.verify,
                                                    proxies=self._proxies_for(url)) as answer:
                extract_cookies_to_jar(self.session.cookies, request, answer.raw)
                body, error = self._read_body(answer, start)
                return Response(answer.status_code, body, location_of(answer), error,
                                time.monotonic() - start, answer.raw.headers)
        except (requests.RequestException, OSError, ValueError) as exc:
            return Response(None, error=describe(exc), elapsed=time.monotonic() - start)

    def _proxies_for(self, url: str) -> dict[str, str]:
        if (proxies := self._proxies.get(key := origin(url))) is None:
            proxies = self._proxies[key] = self.session.proxies or get_environ_proxies(key)
        return proxies

    def _read_body(self, answer: requests.Response, start: float) -> tuple[bytes, str | None]:
        """The decoded body and None, or as much as came (≤ cap) and why it is not all of it."""
        coding = answer.headers.get("Content-Encoding", "identity").lower()
        declared = answer.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > self.max_bytes and not self.read_prefix:
            return b"", f"body larger than max_bytes ({self.max_bytes}): Content-Length {declared}"
        chunks, size, error, decode = [], 0, None, undone(coding)  # else kept as it came
        try:  # read1: what one read of the socket brought, so a trickle is timed piece by piece
            while error is None and (chunk := answer.raw.read1(CHUNK, decode_content=decode)):
                chunks.append(chunk)
                size += len(chunk)  # the cap counts decoded bytes
                if size > self.max_bytes:
                    error = f"body larger than max_bytes ({self.max_bytes})"
                elif time.monotonic() - start > self.deadline:
                    error = f"body too slow (over the {self.deadline:g} s deadline)"
        except urllib3.exceptions.HTTPError as exc:  # cut short, stalled, not inflatable
            error = describe(exc)
        if not decode and error is None:  # the body as it came, no page to read links from
            error = f"DecodeError: Content-Encoding {coding[:40]!r} {NOT_UNDONE}"
        return b"".join(chunks)[: self.max_bytes], error  # cut short: what came, and why


def undone(coding: str) -> bool:
    """True if urllib3 undoes this Content-Encoding: none, one it knows (br, zstd with their
    libraries), or a list of them (``gzip, br``: at most 5); not one sent as ``gzip `` (it would
    hand it over as sent) or a list with another (it would take that one for deflate)."""
    codings = coding.lower().split(",")
    if len(codings) == 1:
        return coding.lower() in ("identity", "", *HTTPResponse.CONTENT_DECODERS)
    return len(codings) <= 5 and all(c.strip() in HTTPResponse.CONTENT_DECODERS for c in codings)


def seed_credentials(seeds: Iterable[str]) -> tuple[list[str], dict[str, str]]:
    """``seeds`` (canonical) without their ``user:password@``, each once, and the Authorization
    value each origin is sent with every request, as its seed's URL asked (Basic, as browsers
    send a URL's; the first seed of an origin gives it): no URL of the crawl holds a password."""
    stripped, credentials = [], {}
    for seed in seeds:
        scheme, _, rest = seed.partition("://")
        authority, slash, path = rest.partition("/")
        userinfo, at, host = authority.rpartition("@")
        if at:
            seed = f"{scheme}://{host}{slash}{path}"
            credentials.setdefault(origin_of(seed), basic_auth(userinfo))
        stripped.append(seed)
    return list(dict.fromkeys(stripped)), credentials


def authorization(url: str, credentials: Mapping[str, str]) -> str | None:
    """The Authorization value a request for the canonical ``url`` carries: Basic for its own
    ``user:password@``, else its origin's in ``credentials`` (:func:`seed_credentials`)."""
    userinfo, at, _ = url.partition("://")[2].partition("/")[0].rpartition("@")
    return basic_auth(userinfo) if at else credentials.get(origin_of(url))


def basic_auth(userinfo: str) -> str:
    """The Authorization value for a URL's percent-encoded ``user:password``."""
    pair = ":".join(map(unquote, userinfo.partition(":")[::2])).encode("latin-1", "replace")
    return "Basic " + base64.b64encode(pair).decode("ascii")


def location_of(answer: requests.Response) -> str | None:
    """A redirect's Location, its bytes read as UTF-8 as browsers read them (http.client read
    them as Latin-1); a byte that is no UTF-8 is U+FFFD, as in Chrome (requests would raise)."""
    if not answer.is_redirect:
        return None
    return answer.headers["Location"].encode("latin-1").decode("utf-8", "replace")


# Kinds are the names of requests' and urllib3's exceptions, as run.py's records count them.
_KINDS = {"ReadTimeoutError": "ReadTimeout", "ContentDecodingError": "DecodeError",
          "ChunkedEncodingError": "ProtocolError"}
_USERINFO = re.compile(r"(?<=://)[^/\s]*@")  # "user:password@" in a URL an error quotes


def describe(exc: BaseException) -> str:
    """One line for a failed request: its kind, the innermost reason, no URL's user or password."""
    kind = _KINDS.get(type(exc).__name__, type(exc).__name__)
    for _ in range(10):  # a bound, in case a chain of causes loops
        causes = (getattr(exc, "reason", None), exc.__cause__, *exc.args[:1])
        if (inner := next((c for c in causes if isinstance(c, BaseException)), None)) is None:
            break
        exc = inner
    text = _USERINFO.sub("", (str(exc).splitlines() or [type(exc).__name__])[0])
    return f"{kind}: {text[:200]}"
