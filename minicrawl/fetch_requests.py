"""run.py's fetching on the core's :class:`minicrawl.core.fetch.Fetcher`: ``requests``.

Every fetch of run.py's crawler (pages, robots.txt, sitemaps) goes through the core's fetcher,
behind the interface of :class:`minicrawl.fetch.Fetcher`. What run.py needs beyond the core's
answer is added here: the connections of :mod:`minicrawl.transport` (a bounded DNS lookup, 1xx
answers skipped), the crawl's cookie jar, ``--proxy`` and ``--ca-bundle``; the lower-cased
header dict, whether an error is worth a retry, a certificate failure naming its host, and the
exchange the WARC archive records (the request as ``requests`` sent it, the status line as
received, both kept by the transport adapter).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from http.cookiejar import DefaultCookiePolicy
from urllib.parse import urlsplit

from requests.cookies import RequestsCookieJar

from minicrawl.core.fetch import Fetcher as CoreFetcher
from minicrawl.fetch import Response, error_kind, host_header, url_auth
from minicrawl.options import Options
from minicrawl.transport import mount

# The network's failures: a later attempt may not meet them (as minicrawl.fetch.describe_error).
_SSL_SOURCE = re.compile(r" \(_ssl\.c:\d+\)$")  # where in CPython's C the error was raised
TRANSIENT = ("ConnectionError", "ConnectTimeout", "ReadTimeout", "ProtocolError", "ProxyError")


class RequestsFetcher:
    """One worker's fetcher on ``requests``, with :class:`minicrawl.fetch.Fetcher`'s interface."""

    def __init__(self, options: Options,
                 on_exchange: Callable[[Response], None] | None = None,
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
              max_bytes: int | None = None) -> Response:
        """GET ``url`` once; network failures come back as ``Response.error``, never raised."""
        # An explicit max_bytes asks for the body's first bytes whatever its size (robots.txt)
        self.core.max_bytes = self.options.max_bytes if max_bytes is None else max_bytes
        self.core.read_prefix = max_bytes is not None
        if auth := url_auth(url):
            headers = {**(headers or {}), **auth}
        self.adapter.last_request = None  # set again if the request goes out
        answer = self.core.fetch(url, headers)
        if answer.error and error_kind(answer.error) == "SSLError":  # which host, and why
            why = _SSL_SOURCE.sub("", answer.error.removeprefix("SSLError: "))
            answer.error = f"SSLError: {urlsplit(url).hostname}: {why}"
        fields = list(answer.headers.items())  # as received: repeated names kept
        result = Response(url, answer.status, {name.lower(): value for name, value in fields},
                          answer.body, round(answer.elapsed * 1000, 1), answer.error,
                          transient=error_kind(answer.error or "") in TRANSIENT)
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
        self.core.session.close()


def crawl_cookies(options: Options) -> RequestsCookieJar:
    """A cookie jar for one crawl, to be shared by its workers' fetchers: a cookie one page sets
    goes with the next request it applies to, whichever worker makes it (as wget and Scrapy
    keep cookies). With ``no_cookies`` the jar keeps none. (CookieJar locks itself.)"""
    return RequestsCookieJar(DefaultCookiePolicy(allowed_domains=[]) if options.no_cookies
                             else None)
