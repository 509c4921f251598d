"""The connections under run.py's ``requests``: what a crawler needs that urllib3 does not do.

:class:`CrawlAdapter` is a ``requests`` transport adapter, mounted on each worker's session, whose
connections differ from urllib3's in two ways, each a promise of the crawler:

- **a host name lookup is bounded by the connect timeout.** ``getaddrinfo`` has no timeout, so
  urllib3's connect timeout starts only after it returns and a hanging DNS server holds a worker
  for the resolver's own retries; here the lookup goes to the resolver threads of
  :mod:`minicrawl.http.dns` and the worker waits at most its timeout (the answer, when it comes,
  is cached for the next).
- **an interim 1xx answer is not the page.** ``http.client`` skips only ``100 Continue``; a
  ``103 Early Hints`` (RFC 8297, sent by CDNs unasked) would come back as the response, its real
  answer left unread on the connection. The response here reads past every 1xx but 101.

urllib3 takes its connection class from the pool and the pool from the manager, so reaching
them takes a pool class per scheme and the manager told to use them (proxied managers too).

This is no second HTTP client: every request is ``requests``' (the worker's ``Session``, this
adapter, urllib3's pools and ``http.client`` under them), so proxies, cookies, CA bundles and
decoding are theirs. The two changes sit below the adapter: ``http.client``'s ``response_class``
hook, and urllib3's ``_new_conn`` (private: ``tests/test_fetch.py`` pins both down).
Why ``http.client`` is named here at all: requests and urllib3 offer no hook for an interim
answer (they parse the status line with ``http.client.HTTPResponse``), so the only place a 103
can be read past is a subclass of that class, which urllib3 then uses for every request.
"""

from __future__ import annotations

import http.client
import socket

import requests
from requests.adapters import HTTPAdapter
from urllib3 import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError
from urllib3.poolmanager import PoolManager
from urllib3.response import BaseHTTPResponse

from minicrawl.http.dns import LookupTimeout, connect

HTTP_VERSIONS = {10: "HTTP/1.0", 11: "HTTP/1.1"}  # http.client's numbers
SWITCHING_PROTOCOLS = 101  # the one 1xx that is final: the connection is no longer HTTP


class InterimSkippingResponse(http.client.HTTPResponse):
    """``http.client``'s response, reading on past interim (1xx) answers to the final one."""

    def begin(self) -> None:
        """Read the status line and headers of the final answer: every 1xx but 101 is
        read past."""
        super().begin()
        while 100 <= self.status < 200 and self.status != SWITCHING_PROTOCOLS:
            self.headers = self.msg = None  # type: ignore[assignment]  # begin() reads anew
            super().begin()


def bounded_socket(conn: HTTPConnection) -> socket.socket:
    """urllib3's own ``_new_conn``, with :func:`minicrawl.http.dns.connect` (the lookup bounded by
    the time-out) for ``socket.create_connection``; its errors are urllib3's."""
    timeout = conn.timeout if isinstance(conn.timeout, (int, float)) else None
    try:
        return connect(conn._dns_host, conn.port, timeout, conn.socket_options)
    except LookupTimeout as e:
        raise ConnectTimeoutError(conn, str(e)) from e
    except socket.gaierror as e:
        raise NameResolutionError(conn.host, conn, e) from e
    except TimeoutError as e:
        raise ConnectTimeoutError(
            conn, f"Connection to {conn.host} timed out. (connect timeout={timeout})") from e
    except OSError as e:
        raise NewConnectionError(conn, f"Failed to establish a new connection: {e}") from e


class BoundedConnection(HTTPConnection):
    """urllib3's connection with the lookup bounded and 1xx answers skipped."""

    response_class = InterimSkippingResponse

    def _new_conn(self) -> socket.socket:
        return bounded_socket(self)


class BoundedTLSConnection(HTTPSConnection):
    """The same over TLS (urllib3 wraps the socket :func:`bounded_socket` made)."""

    response_class = InterimSkippingResponse

    def _new_conn(self) -> socket.socket:
        return bounded_socket(self)


class Pool(HTTPConnectionPool):
    ConnectionCls = BoundedConnection


class TLSPool(HTTPSConnectionPool):
    ConnectionCls = BoundedTLSConnection


POOLS = {"http": Pool, "https": TLSPool}


class CrawlAdapter(HTTPAdapter):
    """``requests``' adapter whose pools (direct or through a proxy) make the connections above.

    It also keeps what its last exchange looked like on the wire, for the WARC archive: the
    request as sent (``requests`` hands urllib3 these headers in this order; ``Host`` goes
    first) and the answer's status line as received. One adapter per worker's session: no
    other thread sends through it.
    """

    last_request: requests.PreparedRequest | None = None
    last_status_line: tuple[str, str] = ("", "")  # ("HTTP/1.1", "OK"): version, reason

    def send(self, request: requests.PreparedRequest, *args: object,
             **kwargs: object) -> requests.Response:
        """Send ``request`` as ``requests`` does, first keeping it as :attr:`last_request` (and
        clearing :attr:`last_status_line` until the answer's comes)."""
        self.last_request, self.last_status_line = request, ("", "")
        return super().send(request, *args, **kwargs)  # type: ignore[arg-type]

    def build_response(self, req: requests.PreparedRequest,
                       resp: BaseHTTPResponse) -> requests.Response:
        """The ``requests`` response for ``resp``, once its (version, reason) is kept in
        :attr:`last_status_line`."""
        self.last_status_line = (HTTP_VERSIONS.get(resp.version, "HTTP/1.1"), resp.reason or "")
        return super().build_response(req, resp)

    def build_connection_pool_key_attributes(
            self, request: requests.PreparedRequest, verify: bool | str,
            cert: str | tuple[str, str] | None = None) -> tuple[dict[str, object],
                                                               dict[str, object]]:
        """``requests``' pool key for ``request``; for plain http as if ``verify`` were True:
        there is nothing to verify, and a CA bundle's path (REQUESTS_CA_BUNDLE…) made requests
        ask the disk whether it is a folder at every request (12 % of a crawl's working time
        on many small pages: bench/profile_steps.py, issue 49)."""
        if not (request.url or "").startswith("https:"):
            verify = True
        return super().build_connection_pool_key_attributes(request, verify, cert)

    def init_poolmanager(self, *args: object, **kwargs: object) -> None:
        """Make ``requests``' pool manager, then have it use the bounded pools (:data:`POOLS`)."""
        super().init_poolmanager(*args, **kwargs)  # type: ignore[arg-type]
        self.poolmanager.pool_classes_by_scheme = POOLS

    def proxy_manager_for(self, proxy: str, **kwargs: object) -> PoolManager:
        """The manager for ``proxy``, made to use the bounded pools (:data:`POOLS`) unless
        it is a SOCKS proxy (whose pools make their own connections)."""
        manager = super().proxy_manager_for(proxy, **kwargs)
        if isinstance(manager, PoolManager) and not proxy.lower().startswith("socks"):
            manager.pool_classes_by_scheme = POOLS
        return manager


def mount(session: requests.Session) -> CrawlAdapter:
    """Make ``session`` connect through a :class:`CrawlAdapter` (returned)."""
    adapter = CrawlAdapter()
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return adapter
