"""Fetching one URL: one HTTP request, no redirect following, a bounded body.

Each worker owns one :class:`Fetcher`: one keep-alive connection per origin it talks to, never
shared between threads. The connections are the standard library's ``http.client`` — the layer
urllib3 and requests are built on — called directly: a crawler that follows no redirects, keeps
no cookies, reads no proxies and retries by its own rules uses none of what those layers add,
and on a fast site their Python is the largest part of a page's cost (README, "Why these
dependencies"). What they did that a crawler needs is here, each in a few lines: a dropped
keep-alive connection is noticed before it is reused; gzip and deflate bodies are inflated
chunk by chunk under the size cap (a compression bomb stops after one chunk); failures get the
short stable names records and counters use (``ConnectionError``, ``ConnectTimeout``,
``ReadTimeout``, ``SSLError``, ``ProtocolError``, ``DecodeError``). Host names are looked up
with a bound (:mod:`minicrawl.dns`), so ``timeout`` holds for the DNS lookup too, and a
response's header block is read without ``email.parser`` (:mod:`minicrawl.response_head`).
"""

from __future__ import annotations

import base64
import http.client
import select
import socket
import ssl
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias
from urllib.parse import unquote

from minicrawl.dns import LookupTimeout, connect
from minicrawl.options import Options
from minicrawl.response_head import HeadResponse

if TYPE_CHECKING:
    from requests.cookies import RequestsCookieJar

    from minicrawl.fetch_requests import RequestsFetcher

CHUNK = 64 * 1024
POOLS_PER_WORKER = 16  # origins a worker keeps a connection to; the least recently used goes
HTTP_VERSIONS = {10: "HTTP/1.0", 11: "HTTP/1.1"}  # http.client's codes
# Content codings undone (zlib's window bits for each); a body with any other, or with several,
# is handed over as sent.
CODINGS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
NODELAY = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]  # a request goes out in one segment


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
        self.headers = {"User-Agent": options.user_agent, "Accept-Encoding": "gzip, deflate",
                        "Accept": "*/*"}
        self._tls: ssl.SSLContext | None = None  # made at the first https URL
        self._connections: OrderedDict[str, http.client.HTTPConnection] = OrderedDict()

    def fetch(self, url: str, headers: dict[str, str] | None = None,
              max_bytes: int | None = None) -> Response:
        """GET ``url`` once. Network failures come back as ``Response.error``, never raised.

        ``max_bytes`` asks for the first ``max_bytes`` of the body whatever its size (robots.txt:
        RFC 9309 has crawlers parse at least the first 500 KiB); without it the body is capped
        at ``options.max_bytes`` and one whose Content-Length is over that is not read at all.
        """
        started = time.monotonic()
        result = Response(url)
        conn = None
        try:
            conn, target = self._connection(url)
            sent = {**self.headers, **headers} if headers else self.headers
            if auth := url_auth(url):
                sent = {**sent, **auth}
            wire = self.on_exchange is not None  # the wire fields only for an archive
            if wire:  # http.client sends Host first, then these headers in this order
                result.request_line = f"GET {target} HTTP/1.1"
                result.request_headers = [("Host", host_header(url)), *sent.items()]
            if conn.sock is None:
                _connect(conn)
            conn.request("GET", target, headers=sent)
            resp = conn.getresponse()
            result.status = resp.status
            fields = [(name, _unfold(value)) for name, value in resp.headers.items()]
            result.headers = {name.lower(): value for name, value in fields}
            if wire:
                result.http_version = HTTP_VERSIONS.get(resp.version, "HTTP/1.1")
                result.reason = resp.reason or ""
                result.raw_headers = fields
            self._read_body(resp, result, started, max_bytes)
        except (_ConnectFailed, OSError, http.client.HTTPException, zlib.error, ValueError) as e:
            result.error, result.transient = describe_error(e, self.options.timeout)
        if conn is not None and result.error is not None:
            conn.close()  # mid-body or broken: never reused (a response read to its end is)
        result.elapsed_ms = round((time.monotonic() - started) * 1000, 1)
        if self.on_exchange is not None:
            self.on_exchange(result)
        return result

    def _connection(self, url: str) -> tuple[http.client.HTTPConnection, str]:
        """The connection to ``url``'s origin and the request target (path and query). A kept
        connection the server has closed since (or that has bytes no request asked for) is
        dropped first, so a request is never lost to a keep-alive timeout."""
        scheme, sep, rest = url.partition("://")
        netloc, slash, path = rest.partition("/")
        origin = url[: len(scheme) + len(sep) + len(netloc)]
        conn = self._connections.get(origin)
        if conn is None:
            hostport = netloc.rpartition("@")[2]
            if scheme == "https":
                if self._tls is None:
                    self._tls = ssl.create_default_context()
                conn = TLSConnection(hostport, timeout=self.options.timeout, context=self._tls)
            elif scheme == "http":
                conn = Connection(hostport, timeout=self.options.timeout)
            else:
                raise ValueError(f"not an http(s) URL: {url[:100]}")
            self._connections[origin] = conn
            if len(self._connections) > POOLS_PER_WORKER:
                self._connections.popitem(last=False)[1].close()
        else:
            self._connections.move_to_end(origin)
            if conn.sock is not None and _dropped(conn.sock):
                conn.close()
        return conn, (slash + path).split("#", 1)[0] or "/"

    def _read_body(self, resp: http.client.HTTPResponse, result: Response, started: float,
                   max_bytes: int | None) -> None:
        """Fill ``result.body`` with the decoded body, cut at the cap; on a cut, the error says
        why. The cap is checked per decoded chunk, and a chunk is inflated no further than the
        cap, so a compression bomb stops after one chunk. A connection lost mid-body keeps the
        bytes read before the loss (with the error, which is transient)."""
        limit = self.options.max_bytes if max_bytes is None else max_bytes
        declared = result.headers.get("content-length", "")
        if max_bytes is None and declared.isdigit() and int(declared) > limit:
            result.error = f"body larger than max_bytes ({limit}): Content-Length {declared}"
            return  # too big before decoding: not read (the connection is closed)
        wbits = CODINGS.get(result.headers.get("content-encoding", "").strip().lower())
        inflate = _Inflater(wbits) if wbits else None
        deadline = started + 3 * self.options.timeout  # a slow drip must still end
        chunks: list[bytes] = []
        size = raw = 0
        try:
            # read1: one socket read at most (each bounded by the timeout), so a body dripping
            # one byte a second still reaches the deadline check
            while data := resp.read1(CHUNK):
                raw += len(data)
                if inflate is not None:
                    data = inflate(data, limit - size + 1)
                size += len(data)
                if size > limit:
                    chunks.append(data[: limit - (size - len(data))])
                    result.error = f"body larger than max_bytes ({limit})"
                    return
                chunks.append(data)
                if time.monotonic() > deadline:
                    result.error = "body too slow (deadline exceeded)"
                    return
            if resp.length:  # the connection ended before the Content-Length did
                raise BodyCut(f"IncompleteRead({raw} bytes read, {resp.length} more expected)")
            resp.close()  # read to its end: the connection takes the next request
        finally:  # an exception mid-body: fetch() records it, the bytes so far are kept
            result.body = chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def close(self) -> None:
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()


class Connection(http.client.HTTPConnection):
    """A connection whose host name lookup is bounded by its timeout, and whose response's
    header block is read without ``email.parser``."""

    response_class = HeadResponse

    def connect(self) -> None:
        self.sock = self._tcp()

    def _tcp(self) -> socket.socket:
        return connect(self.host, self.port, self.timeout, NODELAY)  # type: ignore[arg-type]


class TLSConnection(Connection, http.client.HTTPSConnection):
    """The same, with TLS over the socket (the HTTPS connection's context and checks)."""

    def connect(self) -> None:
        sock = self._tcp()
        try:
            self.sock = self._context.wrap_socket(  # type: ignore[attr-defined]
                sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise


class _ConnectFailed(Exception):
    """A failure before the request could be sent: ``kind`` names it, ``__cause__`` is it."""

    def __init__(self, kind: str, text: str) -> None:
        super().__init__(text)
        self.kind = kind


def _connect(conn: http.client.HTTPConnection) -> None:
    """Open ``conn``, naming a failure by what failed: the lookup, the TCP connect, TLS."""
    try:
        conn.connect()
    except LookupTimeout as e:
        raise _ConnectFailed("ConnectTimeout", str(e)) from e
    except socket.gaierror as e:
        raise _ConnectFailed("ConnectionError", f"Failed to resolve {conn.host!r} ({e})") from e
    except ssl.SSLError as e:
        raise _ConnectFailed("SSLError", str(e)) from e
    except TimeoutError as e:
        raise _ConnectFailed("ConnectTimeout", f"Connection to {conn.host} timed out. "
                                               f"(connect timeout={conn.timeout})") from e
    except OSError as e:
        raise _ConnectFailed("ConnectionError",
                             f"Failed to establish a new connection: {e}") from e


class BodyCut(http.client.HTTPException):
    """The connection ended before the body did; shown as http.client's ``IncompleteRead``."""

    def __repr__(self) -> str:
        return str(self)


class _Inflater:
    """Undoes gzip (every member of it) or deflate (zlib-wrapped or raw: servers send both),
    giving at most ``room`` bytes per call."""

    def __init__(self, wbits: int) -> None:
        self.wbits = wbits
        self.zlib: zlib._Decompress | None = None
        self.done = False  # past the last gzip member: what follows is ignored

    def __call__(self, data: bytes, room: int) -> bytes:
        if self.done:
            return b""
        if self.zlib is None:
            if self.wbits == zlib.MAX_WBITS and not _zlib_header(data):
                self.wbits = -zlib.MAX_WBITS  # "deflate" sent raw
            self.zlib = zlib.decompressobj(self.wbits)
        out = self.zlib.decompress(data, room)
        while self.zlib.eof and self.zlib.unused_data and len(out) < room:
            if self.wbits < 16:  # deflate has one stream: bytes after it are not the body
                self.done = True
                break
            rest, self.zlib = self.zlib.unused_data, zlib.decompressobj(self.wbits)
            try:
                out += self.zlib.decompress(rest, room - len(out))
            except zlib.error:  # padding after the last member, as some servers send
                self.done = True
                break
        return out


def _zlib_header(data: bytes) -> bool:
    return len(data) < 2 or (data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0)


AnyFetcher: TypeAlias = "Fetcher | RequestsFetcher"  # until run.py fetches with requests only


def fetcher_for(options: Options, on_exchange: Callable[[Response], None] | None = None,
                cookies: RequestsCookieJar | None = None) -> AnyFetcher:
    """The fetcher ``options.http`` names: this module's, or the core's on ``requests`` (with
    ``cookies``, the crawl's jar, shared by its workers; without, a jar of its own)."""
    if options.http == "requests":
        from minicrawl.fetch_requests import RequestsFetcher

        return RequestsFetcher(options, on_exchange, cookies)
    return Fetcher(options, on_exchange)


def decodes(content_encoding: str) -> bool:
    """True if a body sent with this Content-Encoding is handed over decoded (or needed no
    decoding): one coding the fetcher undoes, or ``identity``."""
    coding = content_encoding.strip().lower()
    return coding in CODINGS or coding == "identity"


def _dropped(sock: socket.socket) -> bool:
    """True if a kept connection cannot take a request: the server closed it (it reads as at
    its end) or sent bytes no request asked for."""
    if not hasattr(select, "poll"):
        return bool(select.select([sock], [], [], 0)[0])
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


def _unfold(value: str) -> str:
    """A header value folded over lines (obsolete, RFC 9112 §5.2) as one line."""
    return " ".join(part.strip() for part in value.splitlines()) if "\n" in value else value


def describe_error(e: BaseException, timeout: float | None = None) -> tuple[str, bool]:
    """A short, stable description of a fetch failure for records and stats, and whether it is
    transient: the network's (refused or reset connections, timeouts, bodies cut short), so a
    later attempt may not meet it. Bad certificates, bad URLs and undecodable bodies are not."""
    if isinstance(e, _ConnectFailed):
        kind, text, transient = e.kind, str(e), e.kind != "SSLError"
    elif isinstance(e, ssl.SSLError):
        kind, text, transient = "SSLError", str(e), False
    elif isinstance(e, TimeoutError):
        kind, text, transient = "ReadTimeout", f"Read timed out. (read timeout={timeout})", True
    elif isinstance(e, http.client.IncompleteRead | BodyCut):
        kind, text, transient = "ProtocolError", f"Connection broken: {e!r}", True
    elif isinstance(e, http.client.RemoteDisconnected):  # before any answer: the request lost
        kind, text, transient = "ConnectionError", f"Connection aborted: {e}", True
    elif isinstance(e, http.client.InvalidURL):
        kind, text, transient = "InvalidURL", str(e), False
    elif isinstance(e, http.client.HTTPException):  # a status line or head not HTTP's
        kind, text, transient = "ProtocolError", f"Connection aborted: {e!r}", True
    elif isinstance(e, zlib.error):
        kind, text, transient = "DecodeError", f"the body's content coding failed: {e}", False
    elif isinstance(e, OSError):
        kind, text, transient = "ConnectionError", f"Connection aborted: {e}", True
    else:
        kind, text, transient = type(e).__name__, str(e), False
    return (f"{kind}: {text[:200]}" if text else kind), transient


def error_kind(error: str) -> str:
    """The counter name part of an error message: its exception class, or its words before any
    detail ("HTTP 503 (gave up after 3 attempts)" → "HTTP 503")."""
    return error.split(":", 1)[0].split(" (", 1)[0]


def host_header(url: str) -> str:
    """The Host header http.client sends for ``url``: its authority without userinfo."""
    return url.partition("://")[2].split("/", 1)[0].rpartition("@")[2]


def url_auth(url: str) -> dict[str, str]:
    """The Authorization header for a URL's ``user:password@`` (HTTP basic auth, as browsers
    send it), or none."""
    authority = url.partition("://")[2].split("/", 1)[0]
    return {"Authorization": basic_auth(authority.rpartition("@")[0])} if "@" in authority else {}


def basic_auth(userinfo: str) -> str:
    """The Authorization value for a URL's percent-encoded ``user:password``."""
    user, _, password = userinfo.partition(":")
    pair = f"{unquote(user)}:{unquote(password)}".encode("latin-1", "replace")
    return "Basic " + base64.b64encode(pair).decode("ascii")
