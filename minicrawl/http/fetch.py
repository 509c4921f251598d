"""Fetching for run.py's crawler: one GET, no redirect followed, a bounded body — on the core's
:class:`minicrawl.core.fetch.Fetcher`, so on ``requests``, and answered as the core answers: the
core's :class:`~minicrawl.core.interfaces.Response`, the crawl's one response type.

Each worker owns one :class:`Fetcher` (one ``requests.Session``, its keep-alive connections to
the last 10 origins it asked). What run.py needs beyond the core's fetcher is added here: the
connections of :mod:`minicrawl.http.transport` (a host name lookup bounded by ``--timeout``, 1xx
answers read past), the crawl's cookie jar (shared by its workers; ``--no-cookies``), ``--proxy``
and ``--ca-bundle``, a certificate failure naming its host; and for the WARC archive, beside each
answer, its :class:`Wire`: the request as ``requests`` sent it and the status line as received,
both kept by the transport adapter, facts of the archive's, not of the answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.cookiejar import DefaultCookiePolicy
from urllib.parse import urlsplit

from requests.cookies import RequestsCookieJar

from minicrawl.core.fetch import Fetcher as CoreFetcher
from minicrawl.core.interfaces import Response
from minicrawl.http.proxies import Proxies
from minicrawl.http.transport import mount
from minicrawl.options import Options
from minicrawl.redact import split_userinfo

_SSL_SOURCE = re.compile(r" \(_ssl\.c:\d+\)$")  # where in CPython's C the error was raised


@dataclass(frozen=True, slots=True)
class Wire:
    """One exchange as on the wire, for the WARC archive (:mod:`minicrawl.records.warc`): the
    request as ``requests`` sent it and the answer's status line as received. The answer's
    headers as received are its :class:`Response`'s (their case, order and repeats kept)."""

    request_line: str  # "GET /path?query HTTP/1.1"
    request_headers: list[tuple[str, str]]  # as sent, Host first
    http_version: str = ""  # of the answer: "HTTP/1.1" ("" if no status line came back)
    reason: str = ""  # the answer's reason phrase: "OK"


class Fetcher:
    """One worker's fetcher: ``fetch(url)`` → the core's :class:`Response`; a network or HTTP
    failure is its ``error``, not an exception."""

    def __init__(self, options: Options,
                 on_exchange: Callable[[Response, Wire | None], None] | None = None,
                 cookies: RequestsCookieJar | None = None, proxies: Proxies | None = None
                 ) -> None:
        self.options = options
        # Hears every finished fetch (the WARC archive) with its Wire, None if the request never
        # went out (no connection, a bad URL)
        self.on_exchange = on_exchange
        self.core = CoreFetcher(options.user_agent, timeout=options.timeout,
                                deadline=3 * options.timeout, max_bytes=options.max_bytes)
        session = self.core.session
        self.adapter = mount(session)  # lookups bounded by the timeout, 1xx answers skipped
        session.cookies = cookies if cookies is not None else crawl_cookies(options)
        if options.proxy:  # instead of the environment's proxies
            session.proxies = {"http": options.proxy, "https": options.proxy}
        if options.ca_bundle:
            session.verify = options.ca_bundle
        if proxies is not None:  # the crawl's table (its sessions' proxies are this one's)
            self.core.proxies = proxies

    def fetch(self, url: str, headers: Mapping[str, str] | None = None, method: str = "GET",
              max_bytes: int | None = None) -> Response:
        """GET (or HEAD) ``url`` once; network failures come back as ``Response.error``, never
        raised."""
        # An explicit max_bytes asks for the body's first bytes whatever its size (robots.txt)
        self.core.max_bytes = self.options.max_bytes if max_bytes is None else max_bytes
        self.core.read_prefix = max_bytes is not None
        self.adapter.last_request = None  # set again if the request goes out
        response = self.core.fetch(url, headers, method)
        if response.error and error_kind(response.error) == "SSLError":  # which host, and why
            why = _SSL_SOURCE.sub("", response.error.removeprefix("SSLError: "))
            response.error = f"SSLError: {urlsplit(url).hostname}: {why}"
        if self.on_exchange is not None:
            self.on_exchange(response, self._wire(url, response))
        return response

    def _wire(self, url: str, response: Response) -> Wire | None:
        """The exchange as the transport adapter saw it, or None if the request never went out."""
        if (sent := self.adapter.last_request) is None:
            return None
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        version, reason = self.adapter.last_status_line if response.status is not None \
            else ("", "")
        return Wire(f"GET {target} HTTP/1.1", [("Host", host_header(url)),
                                               *sent.headers.items()], version, reason)

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
    return split_userinfo(url)[2]
