"""Fetching: one URL's answer, over HTTP with ``requests``.

Each worker has its own :class:`Fetcher`, so its own ``requests.Session``: keep-alive
connections reused from page to page, never shared between threads. A redirect is not followed:
its ``Location`` goes through the door like any link, so no page is crawled twice.

A server is never trusted: the body is read in pieces and cut at ``max_bytes`` *after*
decompression (a 10 KB gzip bomb can inflate to gigabytes: :mod:`minicrawl.http.answer` reads it);
connecting and each read wait at most ``timeout`` seconds; the body must come within
``deadline`` seconds of the request's start, checked as each piece arrives: a byte a second,
which never trips ``timeout``, is cut; a stalled read may overrun the deadline by one ``timeout``;
the head (status line, headers) is bounded by ``timeout`` per read alone.
"""

import os
import time
from collections.abc import Mapping

import requests

from minicrawl.core.interfaces import Response
from minicrawl.http.answer import describe, keep_cookies, location_of, read_body, transient
from minicrawl.http.credentials import authorization
from minicrawl.http.prepare import prepared
from minicrawl.http.proxies import Proxies

USER_AGENT = "minicrawl-core/0.1 (+https://github.com/minicrawl/minicrawl)"
CA_VARIABLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE")  # the first set is used


class Fetcher:
    """One worker's HTTP client: ``fetch(url)`` → :class:`Response`, a network or HTTP error too."""

    def __init__(self, user_agent: str = USER_AGENT, timeout: float = 10.0,
                 deadline: float = 60.0, max_bytes: int = 10 * 2**20) -> None:
        self.timeout, self.deadline, self.max_bytes = timeout, deadline, max_bytes
        self.read_prefix = False  # True: a body declared over the cap is read up to it, not skipped
        self.credentials: Mapping[str, str] = {}  # origin → Authorization (seed_credentials)
        self.session = requests.Session()
        self.session.headers["User-Agent"] = user_agent
        # requests reads the proxy and CA variables (and ~/.netrc) for each request, ~0.5 ms: here
        # the CA bundle is read once, proxies per origin (Proxies).
        self.session.verify = next(filter(None, map(os.environ.get, CA_VARIABLES)), True)
        self.proxies = Proxies(self.session)
        # One prepared request, copied for each URL: Session.get merges settings anew (¼ of its CPU)
        self._template = self.session.prepare_request(requests.Request("GET", "http://x/"))

    def fetch(self, url: str, headers: Mapping[str, str] | None = None,
              method: str = "GET") -> Response:
        """GET ``url`` (canonical; or HEAD it) with ``headers`` added, following no redirect."""
        start = time.monotonic()
        try:
            request = prepared(self._template, method, url, self.session.cookies)  # a copy
            request.headers.update(headers or {})
            if auth := authorization(url, self.credentials):
                request.headers["Authorization"] = auth
            # The adapter: Session.send would prepare a redirect's next request, even unfollowed
            with self.session.get_adapter(url).send(request, stream=True, timeout=self.timeout,
                                                    verify=self.session.verify,
                                                    proxies=self.proxies.of(url)) as answer:
                keep_cookies(self.session.cookies, request, answer.raw)
                body, error = read_body(answer, start, self.max_bytes, self.deadline,
                                        self.read_prefix)
                return Response(url, answer.status_code, body, location_of(answer), error,
                                transient(error), time.monotonic() - start, answer.raw.headers)
        except (requests.RequestException, OSError, ValueError) as exc:
            error = describe(exc)
            return Response(url, None, error=error, transient=transient(error),
                            elapsed=time.monotonic() - start)
