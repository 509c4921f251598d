"""Fetching for run.py's crawler: one GET, no redirect followed, a bounded body — on the core's
:class:`minicrawl.core.fetch.Fetcher`, so on ``requests``.

Each worker owns one :class:`Fetcher` (one ``requests.Session``, its keep-alive connections to
the last 10 origins it asked). What run.py needs beyond the core's answer is added here: the
connections of :mod:`minicrawl.http.transport` (a host name lookup bounded by ``--timeout``, 1xx
answers read past), the crawl's cookie jar (shared by its workers; ``--no-cookies``), ``--proxy``
and ``--ca-bundle``; then, from the answer, run.py's :class:`FetchResult`: the core's headers (any
case, repeats kept), whether an error is worth a retry, a certificate failure naming its host,
and the exchange the WARC archive records (the request as ``requests`` sent it and the status
line as received, both kept by the transport adapter).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.cookiejar import DefaultCookiePolicy
from urllib.parse import urlsplit

from requests.cookies import RequestsCookieJar

from minicrawl.core.fetch import Fetcher as CoreFetcher
from minicrawl.http.transport import mount
from minicrawl.options import Options

_SSL_SOURCE = re.compile(r" \(_ssl\.c:\d+\)$")  # where in CPython's C the error was raised


@dataclass
class FetchResult:
    """The outcome of one request as run.py records it: the core's ``Response`` (status, headers,
    body, error, Location) with the URL, whether a retry is worth it and the exchange as on the
    wire. ``error`` is None on success (whatever the status); a body cut short (size cap,
    deadline, connection lost) keeps what was read, with the error."""

    url: str
    status: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)  # the core's: any case, repeated
    # names kept in items() (two X-Robots-Tag headers are two)
    body: bytes = b""
    elapsed_ms: float = 0.0
    error: str | None = None
    transient: bool = False  # the error was the network's (reset, timeout): worth a retry
    # The exchange as on the wire, for the WARC archive (minicrawl.warc). Filled when the
    # fetcher has an ``on_exchange`` listener and the request was sent / the status line came
    # back; empty otherwise.
    request_line: str = ""  # "GET /path?query HTTP/1.1"
    request_headers: list[tuple[str, str]] = field(default_factory=list)  # as sent, with Host
    http_version: str = ""  # of the answer: "HTTP/1.1"
    reason: str = ""  # the reason phrase: "OK"
    raw_headers: list[tuple[str, str]] = field(default_factory=list)  # as received: case,
    # order and repeated names kept
    location: str | None = None  # a redirect's Location, as the core's fetcher reads it (UTF-8)

    @property
    def content_type(self) -> str | None:
        """The Content-Type header (``text/html; charset=utf-8``), or None if none came."""
        return self.headers.get("content-type")



class Fetcher:
    """One worker's fetcher: ``fetch(url)`` → :class:`FetchResult`, never an exception."""

    def __init__(self, options: Options,
                 on_exchange: Callable[[FetchResult], None] | None = None,
                 cookies: RequestsCookieJar | None = None) -> None:
        self.options = options
        self.on_exchange = on_exchange  # hears every finished fetch (the WARC archive)
        self.core = CoreFetcher(options.user_agent, timeout=options.timeout,
                                deadline=3 * options.timeout, max_bytes=options.max_bytes)
        session = self.core.session
        self.adapter = mount(session)  # lookups bounded by the timeout, 1xx answers skipped
        session.cookies = cookies if cookies is not None else crawl_cookies(options)
        if options.proxy:  # instead of the environment's proxies
            session.proxies = {"http": options.proxy, "https": options.proxy}
        if options.ca_bundle:
            session.verify = options.ca_bundle

    def fetch(self, url: str, headers: Mapping[str, str] | None = None,
              max_bytes: int | None = None) -> FetchResult:
        """GET ``url`` once; network failures come back as ``FetchResult.error``, never raised."""
        # An explicit max_bytes asks for the body's first bytes whatever its size (robots.txt)
        self.core.max_bytes = self.options.max_bytes if max_bytes is None else max_bytes
        self.core.read_prefix = max_bytes is not None
        self.adapter.last_request = None  # set again if the request goes out
        answer = self.core.fetch(url, headers)
        if answer.error and error_kind(answer.error) == "SSLError":  # which host, and why
            why = _SSL_SOURCE.sub("", answer.error.removeprefix("SSLError: "))
            answer.error = f"SSLError: {urlsplit(url).hostname}: {why}"
        fields = list(answer.headers.items())  # as received: repeated names kept
        result = FetchResult(url, answer.status, answer.headers,
                          answer.body, round(answer.elapsed * 1000, 1), answer.error,
                          transient=answer.transient,
                          location=answer.location)
        if self.on_exchange is not None and (sent := self.adapter.last_request) is not None:
            parts = urlsplit(url)
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            result.request_line = f"GET {target} HTTP/1.1"
            result.request_headers = [("Host", host_header(url)), *sent.headers.items()]
            if answer.status is not None:
                result.http_version, result.reason = self.adapter.last_status_line
                result.raw_headers = fields
        if self.on_exchange is not None:
            self.on_exchange(result)
        return result

    def close(self) -> None:
        """Close the session and its keep-alive connections."""
        self.core.session.close()


def crawl_cookies(options: Options) -> RequestsCookieJar:
    """A cookie jar for one crawl, to be shared by its workers' fetchers: a cookie one page sets
    goes with the next request it applies to, whichever worker makes it (as wget and Scrapy
    keep cookies). With ``no_cookies`` the jar keeps none. (CookieJar locks itself.)"""
    return RequestsCookieJar(DefaultCookiePolicy(allowed_domains=[]) if options.no_cookies
                             else None)


def error_kind(error: str) -> str:
    """The counter name part of an error message: its exception class, or its words before any
    detail ("HTTP 503 (gave up after 3 attempts)" → "HTTP 503")."""
    return error.split(":", 1)[0].split(" (", 1)[0]


def host_header(url: str) -> str:
    """The Host header sent for ``url``: its authority without userinfo."""
    return url.partition("://")[2].split("/", 1)[0].rpartition("@")[2]
