"""Fetching one URL: one HTTP request, no redirect following, a bounded body.

Each worker owns one :class:`Fetcher`: one urllib3 connection pool per origin it talks to (one
connection each), so connections are kept alive per worker and never shared between threads.
urllib3 is requests' own transport; calling it directly skips what a crawler does not use from
requests (its ``PreparedRequest`` re-parses and re-quotes every URL, and merges settings, for
~0.6 ms of CPU per request, half of a page's whole cost on a fast site — see README, "Why these
dependencies"). Redirects are *not* followed here (the crawler offers each redirect target to
Visited first, so a redirect to a page already seen is not fetched twice), nothing comes from
the environment (proxies, netrc), and no cookies are kept: every worker fetches a URL the same
way. Host names are looked up with a bound (:mod:`minicrawl.dns`), so ``timeout`` holds for
the DNS lookup too, and a response's header block is read without ``email.parser``
(:mod:`minicrawl.response_head`).
"""

from __future__ import annotations

import socket
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import unquote

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    NameResolutionError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
    SSLError,
)
from urllib3.util import parse_url

from minicrawl.dns import LookupTimeout, connect
from minicrawl.options import Options
from minicrawl.response_head import HeadResponse

CHUNK = 64 * 1024
POOLS_PER_WORKER = 16  # origins a worker keeps a connection to; the least recently used goes
HTTP_VERSIONS = {9: "HTTP/0.9", 10: "HTTP/1.0", 11: "HTTP/1.1", 20: "HTTP/2"}  # urllib3's codes


@dataclass
class Response:
    """The outcome of one request. ``error`` is None on success (whatever the status); a body
    cut short (size cap, deadline, connection lost) keeps what was read, with the error."""

    url: str
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
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
    # order and repeated names kept (``headers`` above is lower-cased and merged)

    @property
    def content_type(self) -> str | None:
        return self.headers.get("content-type")

    @property
    def location(self) -> str | None:
        """The redirect target as sent, if this is a redirect."""
        if self.status in (301, 302, 303, 307, 308):
            return self.headers.get("location")
        return None


class Fetcher:
    """Fetches URLs for one worker over its own keep-alive connections."""

    def __init__(self, options: Options,
                 on_exchange: Callable[[Response], None] | None = None) -> None:
        self.options = options
        self.on_exchange = on_exchange  # hears every finished fetch (the WARC archive)
        self.headers = urllib3.make_headers(keep_alive=True, accept_encoding=True,
                                            user_agent=options.user_agent)
        self.headers["Accept"] = "*/*"
        self.timeout = urllib3.Timeout(connect=options.timeout, read=options.timeout)
        self._pools: OrderedDict[str, HTTPConnectionPool] = OrderedDict()

    def fetch(self, url: str, headers: dict[str, str] | None = None,
              max_bytes: int | None = None) -> Response:
        """GET ``url`` once. Network failures come back as ``Response.error``, never raised.

        ``max_bytes`` asks for the first ``max_bytes`` of the body whatever its size (robots.txt:
        RFC 9309 has crawlers parse at least the first 500 KiB); without it the body is capped
        at ``options.max_bytes`` and one whose Content-Length is over that is not read at all.
        """
        started = time.monotonic()
        result = Response(url)
        resp = None
        try:
            pool, target = self._pool(url)
            sent = {**self.headers, **headers} if headers else self.headers
            authority = url.partition("://")[2].split("/", 1)[0]
            if "@" in authority:  # user:password@host: HTTP basic auth, as browsers send it
                sent = {**sent, **_basic_auth(authority.rpartition("@")[0])}
            wire = self.on_exchange is not None  # the wire fields only for an archive
            if wire:  # http.client sends Host first, then these headers in this order
                result.request_line = f"GET {target} HTTP/1.1"
                result.request_headers = [("Host", _host_header(url)), *sent.items()]
            resp = pool.urlopen("GET", target, headers=sent, retries=False, redirect=False,
                                assert_same_host=False, timeout=self.timeout,
                                preload_content=False, decode_content=True)
            result.status = resp.status
            result.headers = {k.lower(): v for k, v in resp.headers.items()}
            if wire:
                result.http_version = HTTP_VERSIONS.get(resp.version, "HTTP/1.1")
                result.reason = resp.reason or ""
                result.raw_headers = list(resp.headers.items())
            self._read_body(resp, result, started, max_bytes)
        except (HTTPError, OSError, ValueError) as e:
            result.error = describe_error(e)
            result.transient = is_transient(e)
        finally:
            if resp is not None:  # back to the pool; closed first unless read to its end
                if result.error is not None:
                    resp.close()
                resp.release_conn()
        result.elapsed_ms = round((time.monotonic() - started) * 1000, 1)
        if self.on_exchange is not None:
            self.on_exchange(result)
        return result

    def _pool(self, url: str) -> tuple[HTTPConnectionPool, str]:
        """The pool for ``url``'s origin and the request target (path and query)."""
        scheme, sep, rest = url.partition("://")
        netloc, slash, path = rest.partition("/")
        origin = url[: len(scheme) + len(sep) + len(netloc)]
        pool = self._pools.get(origin)
        if pool is None:
            parts = parse_url(origin)
            if parts.scheme not in ("http", "https") or not parts.host:
                raise ValueError(f"not an http(s) URL: {url[:100]}")
            cls = HTTPSPool if parts.scheme == "https" else HTTPPool
            pool = self._pools[origin] = cls(parts.host, parts.port, maxsize=1, block=False,
                                             retries=False, timeout=self.timeout)
            if len(self._pools) > POOLS_PER_WORKER:
                self._pools.popitem(last=False)[1].close()
        else:
            self._pools.move_to_end(origin)
        return pool, (slash + path).split("#", 1)[0] or "/"

    def _read_body(self, resp: urllib3.BaseHTTPResponse, result: Response, started: float,
                   max_bytes: int | None) -> None:
        """Fill ``result.body`` with the decoded body, cut at the cap; on a cut, the error says
        why. The cap is checked per decoded chunk, so a compressed bomb is stopped after one
        chunk of output, not after inflating it all. A connection lost mid-body keeps the
        bytes read before the loss (with the error, which is transient)."""
        limit = self.options.max_bytes if max_bytes is None else max_bytes
        declared = resp.headers.get("content-length", "")
        if max_bytes is None and declared.isdigit() and int(declared) > limit:
            resp.close()  # too big before decoding: don't read
            result.error = f"body larger than max_bytes ({limit}): Content-Length {declared}"
            return
        deadline = started + 3 * self.options.timeout  # a slow drip must still end
        chunks: list[bytes] = []
        size = 0
        try:
            # read1, not stream(): stream() blocks until a whole CHUNK has arrived, so a body
            # dripping one byte per second would never reach the deadline check. read1 returns
            # after one socket read (each bounded by the read timeout), and urllib3 2.x
            # inflates at most CHUNK bytes of a compressed body per call.
            while chunk := resp.read1(CHUNK, decode_content=True):
                size += len(chunk)
                if size > limit:
                    chunks.append(chunk[: limit - (size - len(chunk))])
                    result.error = f"body larger than max_bytes ({limit})"
                    resp.close()
                    break
                chunks.append(chunk)
                if time.monotonic() > deadline:
                    result.error = "body too slow (deadline exceeded)"
                    resp.close()
                    break
        finally:  # an exception mid-body: fetch() records it, the bytes so far are kept
            result.body = chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()


class _BoundedLookup:
    """A urllib3 connection whose host name lookup is bounded by its connect timeout."""

    def _new_conn(self) -> socket.socket:
        conn: HTTPConnection = self  # type: ignore[assignment]
        try:
            return connect(conn._dns_host, conn.port, conn.timeout,  # type: ignore[arg-type]
                           conn.socket_options)  # type: ignore[arg-type]
        except LookupTimeout as e:
            raise ConnectTimeoutError(conn, str(e)) from e
        except socket.gaierror as e:
            raise NameResolutionError(conn.host, conn, e) from e
        except TimeoutError as e:
            raise ConnectTimeoutError(conn, f"Connection to {conn.host} timed out. "
                                            f"(connect timeout={conn.timeout})") from e
        except OSError as e:
            raise NewConnectionError(conn, f"Failed to establish a new connection: {e}") from e


class Connection(_BoundedLookup, HTTPConnection):
    response_class = HeadResponse  # its header block read without email.parser


class TLSConnection(_BoundedLookup, HTTPSConnection):
    response_class = HeadResponse


class HTTPPool(HTTPConnectionPool):
    ConnectionCls = Connection


class HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = TLSConnection


# The names failures had when requests carried them: records and counters keep their words.
_KINDS: tuple[tuple[type[BaseException], str], ...] = (
    (NewConnectionError, "ConnectionError"),  # before ConnectTimeoutError: a subclass of it
    (ConnectTimeoutError, "ConnectTimeout"),
    (ReadTimeoutError, "ReadTimeout"),
    (SSLError, "SSLError"),
)


def describe_error(e: BaseException) -> str:
    """A short, stable description of a fetch failure for records and stats."""
    kind = type(e).__name__
    for cls, name in _KINDS:
        if isinstance(e, cls):
            kind = name
            break
    else:
        if isinstance(e, ProtocolError) and "aborted" in str(e):  # lost before any answer
            kind = "ConnectionError"
    text = str(e)
    if isinstance(e, ConnectTimeoutError) and len(e.args) == 2 and isinstance(e.args[1], str):
        text = e.args[1]  # (connection, message): the message says it all
    return f"{kind}: {text[:200]}" if text else kind


def is_transient(e: BaseException) -> bool:
    """True for failures a later attempt may not meet: refused or reset connections, timeouts,
    bodies cut short. Not for bad certificates, bad URLs or undecodable content."""
    if isinstance(e, HTTPError):
        return (isinstance(e, ProtocolError | urllib3.exceptions.TimeoutError
                           | NewConnectionError | urllib3.exceptions.IncompleteRead)
                and not isinstance(e, SSLError))
    return isinstance(e, OSError)


def error_kind(error: str) -> str:
    """The counter name part of an error message: its exception class, or its words before any
    detail ("HTTP 503 (gave up after 3 attempts)" → "HTTP 503")."""
    return error.split(":", 1)[0].split(" (", 1)[0]


def _host_header(url: str) -> str:
    """The Host header http.client sends for ``url``: its authority without userinfo."""
    return url.partition("://")[2].split("/", 1)[0].rpartition("@")[2]


def _basic_auth(userinfo: str) -> dict[str, str]:
    """The Authorization header for a URL's percent-encoded ``user:password``."""
    user, _, password = userinfo.partition(":")
    return urllib3.make_headers(basic_auth=f"{unquote(user)}:{unquote(password)}")
