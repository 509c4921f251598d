"""The connections under run.py's ``requests``: what a crawler needs that urllib3 does not do.

:class:`CrawlAdapter` is a ``requests`` transport adapter, mounted on each worker's session, whose
connections differ from urllib3's in four ways, the first two promises of the crawler, the
last two its CPU:

- **a host name lookup is bounded by the connect timeout.** ``getaddrinfo`` has no timeout, so
  urllib3's connect timeout starts only after it returns and a hanging DNS server holds a worker
  for the resolver's own retries; here the lookup goes to the resolver threads of
  :mod:`minicrawl.http.dns` and the worker waits at most its timeout (the answer, when it comes,
  is cached for the next).
- **an interim 1xx answer is not the page.** ``http.client`` skips only ``100 Continue``; a
  ``103 Early Hints`` (RFC 8297, sent by CDNs unasked) would come back as the response, its real
  answer left unread on the connection. The response here reads past every 1xx but 101.
- **a plain head is not handed to the ``email`` package.** ``http.client`` parses every
  response's header fields with ``email``'s parser, ~50 µs a response, a tenth of a tiny page's
  fetch (issue 49); :func:`parse_head` builds the same ``HTTPMessage`` itself when every line is
  a plain ``name: value`` and hands anything else to that parser (``tests/test_head_parsing.py``
  holds the two equal).
- **a request's header line is checked and encoded once.** The same ``Host``, ``User-Agent``,
  ``Accept``… go out with every request, each checked and encoded again by urllib3 and
  ``http.client`` (~2 µs a field, issue 49); :func:`put_field` writes the line they
  wrote the first time (``tests/test_fetch.py`` holds the bytes equal).

urllib3 takes its connection class from the pool and the pool from the manager, so reaching
them takes a pool class per scheme and the manager told to use them (proxied managers too).

This is no second HTTP client: every request is ``requests``' (the worker's ``Session``, this
adapter, urllib3's pools and ``http.client`` under them), so proxies, cookies, CA bundles and
decoding are theirs. The changes sit below the adapter: ``http.client``'s ``response_class``
hook (its ``begin``, which reads the status line and head), its ``putheader`` (public; the line
it wrote is read from its private ``_buffer``) and urllib3's ``_new_conn`` (private:
``tests/test_fetch.py`` pins them down). The adapter's own ``build_response`` leaves out one
thing, a cookie jar of each response's own that nothing reads (the crawl's jar is filled as
before); its ``send`` makes urllib3's ``Timeout`` once and its ``request_url`` skips requests'
proxy lookup when there are no proxies.
Why ``http.client`` is named here at all: requests and urllib3 offer no hook for an interim
answer or the head's parsing (they read both with ``http.client.HTTPResponse``), so the only
place either can change is a subclass of that class, which urllib3 then uses for every request.
"""

from __future__ import annotations

import email.parser
import http.client
import re
import socket
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

import requests
from requests.adapters import HTTPAdapter
from requests.structures import CaseInsensitiveDict
from requests.utils import get_encoding_from_headers
from urllib3 import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError
from urllib3.poolmanager import PoolManager
from urllib3.response import BaseHTTPResponse
from urllib3.util import Timeout

from minicrawl.http.dns import LookupTimeout, connect

HTTP_VERSIONS = {10: "HTTP/1.0", 11: "HTTP/1.1"}  # http.client's numbers
SWITCHING_PROTOCOLS = 101  # the one 1xx that is final: the connection is no longer HTTP


# A field line email's parser would take as it stands: a name of the characters its headerRE
# allows (visible ASCII but ":"), the colon, the value with its leading blanks stripped (as
# compat32's header_source_parse strips them) and no CR or LF in it, the line's end. Anchored at
# a line's start, so a line that is not one (no colon, a fold, a bare CR) is not found at all.
_FIELD = re.compile(r"^([\041-\071\073-\176]+):[ \t]*([^\r\n]*)\r?\n", re.MULTILINE)
_HEAD_ENDS = (b"\r\n", b"\n")  # an empty line; b"" (the connection closed) is left to email
# Words of a Content-Type that sends email's parser down another branch (multipart/*,
# message/*: a body parsed as parts or a message, defects noted). Any head that holds one, in
# any case, anywhere, is left to email: a superset, so never a head it would parse otherwise.
_PARSER_BRANCHES = ("multipart", "message")


def parse_head(fp: BinaryIO) -> http.client.HTTPMessage:
    """The answer's header fields read from ``fp`` as ``http.client.parse_headers`` reads them:
    the same lines (its own ``_read_headers``: the same limits and errors), the same message.

    ``parse_headers`` hands every head to the ``email`` package's parser, ~50 µs a response
    against ~3 µs to read the lines (issue 49). A head of plain ``name: value`` lines, as
    servers send, parses to a message holding just those (name, value) pairs and an empty
    payload, which is built here directly; any other head (a folded or colon-less line, a bare
    CR, a head cut by EOF, a multipart or message type) still goes to ``email``.
    ``tests/test_head_parsing.py`` holds the two equal on a corpus of heads.
    """
    lines = http.client._read_headers(fp)  # private, as parse_headers' first half
    text = b"".join(lines).decode("iso-8859-1")  # as parse_headers decodes
    fields = _FIELD.findall(text)
    lowered = text.lower()  # Latin-1's lower() makes no ASCII letter of a non-ASCII one
    if (len(fields) != len(lines) - 1 or lines[-1] not in _HEAD_ENDS
            or any(word in lowered for word in _PARSER_BRANCHES)):
        return email.parser.Parser(_class=http.client.HTTPMessage).parsestr(text)
    message = http.client.HTTPMessage()
    message._headers = fields  # what the parser's set_raw calls append
    message._payload = ""  # the parser's: nothing came after the head
    return message


# What http.client's response reads the socket into: the head is read line by line from it,
# then the body's first bytes come from it. 64 KiB, not io's 8 KiB: a page that came with its
# head (bench/manyhosts.py's 20 KB) is then read in one piece, not two (issue 49). Held by the
# answers being read, one a worker.
READ_BUFFER = 64 * 1024


class _BufferedSocket:
    """A socket as http.client's response sees it (it only makes a file of it), the file with a
    buffer of :data:`READ_BUFFER` bytes."""

    __slots__ = ("sock",)

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def makefile(self, mode: str) -> BinaryIO:
        return self.sock.makefile(mode, buffering=READ_BUFFER)  # type: ignore[return-value]


class InterimSkippingResponse(http.client.HTTPResponse):
    """``http.client``'s response, reading on past interim (1xx) answers to the final one, its
    head parsed by :func:`parse_head`, the socket read through a :data:`READ_BUFFER`."""

    def __init__(self, sock: socket.socket, debuglevel: int = 0, method: str | None = None,
                 url: str | None = None) -> None:
        super().__init__(_BufferedSocket(sock), debuglevel, method, url)  # type: ignore[arg-type]

    def begin(self) -> None:
        """Read the status line and head of the final answer: every 1xx but 101 is read past.

        ``http.client``'s own ``begin`` (the same in 3.11–3.13) but for the two changes: it
        skipped only 100 and parsed the head with ``parse_headers``, a module function no
        subclass can replace, hence the whole method here."""
        if self.headers is not None:  # already begun
            return
        while True:
            version, status, reason = self._read_status()
            if version in ("HTTP/1.0", "HTTP/0.9"):  # 0.9 is taken for 1.0, as http.client does
                self.version = 10
            elif version.startswith("HTTP/1."):
                self.version = 11  # HTTP/1.x for any x ≥ 1
            else:
                raise http.client.UnknownProtocol(version)
            if not 100 <= status < 200 or status == SWITCHING_PROTOCOLS:
                break
            skipped = http.client._read_headers(self.fp)  # an interim head: not parsed
            if self.debuglevel > 0:
                print("headers:", skipped)
        self.code = self.status = status
        self.reason = reason.strip()
        self.headers = self.msg = parse_head(self.fp)
        if self.debuglevel > 0:
            for name, value in self.headers.items():
                print("header:", name + ":", value)
        # What http.client works out from the head, as it does (RFC 9112 6.3)
        transfer_coding = self.headers.get("transfer-encoding")
        self.chunked = bool(transfer_coding and transfer_coding.lower() == "chunked")
        if self.chunked:
            self.chunk_left = None
        self.will_close = self._check_close()
        self.length = None
        length = self.headers.get("content-length")
        if length and not self.chunked:
            try:
                self.length = int(length)
            except ValueError:
                self.length = None
            else:
                if self.length < 0:  # a negative length is no length
                    self.length = None
        if (status in (http.client.NO_CONTENT, http.client.NOT_MODIFIED)
                or 100 <= status < 200 or self._method == "HEAD"):
            self.length = 0  # no body
        if not self.will_close and not self.chunked and self.length is None:
            self.will_close = True  # the body runs to the connection's close


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


# A header field as sent → its line as http.client wrote it: (name, *values) → b"Name: value"
_LINES: dict[tuple[object, ...], bytes] = {}
_LINES_KEPT = 512  # fields; the memory is emptied when it is full (cookies' values churn)


def put_field(conn: HTTPConnection, putheader: Callable[..., None], header: str,
              values: tuple[str, ...]) -> None:
    """Write a request's header field on ``conn`` as ``putheader`` (urllib3's, over
    ``http.client``'s) wrote it the last time it was sent, else as it writes it now.

    urllib3 and ``http.client`` check and encode every field of every request (urllib3's
    ``SKIP_HEADER`` sentinel, the name's and each value's characters, Latin-1), ~2 µs a field
    and six fields a request (issue 49) — the same ``Host``, ``User-Agent``, ``Accept``… each
    time. A field is checked the first time it goes out, by them (one they refuse raises and is
    not kept, one urllib3 skips is not kept), and its line kept for the next request: the same
    bytes, in the same place. urllib3 calls ``putheader`` only between ``putrequest`` and
    ``endheaders``, which check the connection's state."""
    buffer: list[bytes] = conn._buffer  # type: ignore[attr-defined]  # http.client's lines
    try:
        line = _LINES[(header, *values)]
    except (KeyError, TypeError):  # not sent yet, or values no dict takes (left to them)
        before = len(buffer)
        putheader(header, *values)
        # One line out, of str only: no other value can equal a kept key then (True == 1,
        # but http.client writes "True" and "1")
        if (len(buffer) == before + 1 and type(header) is str
                and all(type(value) is str for value in values)):
            if len(_LINES) >= _LINES_KEPT:
                _LINES.clear()
            _LINES[(header, *values)] = buffer[-1]
    else:
        buffer.append(line)  # as http.client's _output appends it


class BoundedConnection(HTTPConnection):
    """urllib3's connection with the lookup bounded, 1xx answers skipped and header lines
    written once (:func:`put_field`)."""

    response_class = InterimSkippingResponse

    def _new_conn(self) -> socket.socket:
        return bounded_socket(self)

    def putheader(self, header: str, *values: str) -> None:
        """Write a header field of the request (:func:`put_field`)."""
        put_field(self, super().putheader, header, values)


class BoundedTLSConnection(HTTPSConnection):
    """The same over TLS (urllib3 wraps the socket :func:`bounded_socket` made)."""

    response_class = InterimSkippingResponse

    def _new_conn(self) -> socket.socket:
        return bounded_socket(self)

    def putheader(self, header: str, *values: str) -> None:
        """Write a header field of the request (:func:`put_field`)."""
        put_field(self, super().putheader, header, values)


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

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # (origin, verify, cert) → its pool (get_connection_with_tls_context)
        self._pools: dict[tuple[str, bool | str, object], HTTPConnectionPool] = {}
        self._timeouts: dict[float, Timeout] = {}  # seconds → urllib3's Timeout of them

    def send(self, request: requests.PreparedRequest, *args: object,
             **kwargs: object) -> requests.Response:
        """Send ``request`` as ``requests`` does, first keeping it as :attr:`last_request` (and
        clearing :attr:`last_status_line` until the answer's comes).

        A ``timeout`` in seconds goes to ``requests`` as the ``Timeout`` it would make of it,
        made once: urllib3 works on copies of it (``_get_timeout`` clones it, the copy's
        clock is started), never on it, so one serves every request."""
        self.last_request, self.last_status_line = request, ("", "")
        if type(seconds := kwargs.get("timeout")) in (int, float):
            if (timeout := self._timeouts.get(seconds)) is None:  # type: ignore[arg-type]
                timeout = self._timeouts[seconds] = Timeout(connect=seconds, read=seconds)
            kwargs["timeout"] = timeout
        return super().send(request, *args, **kwargs)  # type: ignore[arg-type]

    def request_url(self, request: requests.PreparedRequest,
                    proxies: Mapping[str, str] | None) -> str:
        """The request target ``requests`` sends: without proxies, the URL's path and query
        (``path_url``), which requests reaches after parsing the URL twice more and looking
        for a proxy in an empty table (~6 µs a request, issue 49); else requests' own."""
        if proxies:
            return super().request_url(request, proxies)  # type: ignore[arg-type]
        return request.path_url

    def build_response(self, req: requests.PreparedRequest,
                       resp: BaseHTTPResponse) -> requests.Response:
        """The ``requests`` response for ``resp``, once its (version, reason) is kept in
        :attr:`last_status_line`: ``HTTPAdapter.build_response`` but for its cookies.

        ``requests`` also parses the answer's cookies into ``Response.cookies`` (~20 µs a
        response, issue 49), a jar of the response's own that nothing here reads: the crawl's
        jar (the session's, ``--no-cookies`` its policy) is filled by whoever sends — the core's
        fetcher after ``send``, as ``Session.send`` and its redirects do, from ``resp`` itself.
        So ``Response.cookies`` stays empty; ``tests/test_fetch.py`` holds the rest equal to what
        ``HTTPAdapter.build_response`` makes."""
        self.last_status_line = (HTTP_VERSIONS.get(resp.version, "HTTP/1.1"), resp.reason or "")
        response = requests.Response()
        response.status_code = resp.status
        response.headers = CaseInsensitiveDict(resp.headers)
        response.encoding = get_encoding_from_headers(response.headers)
        response.raw = resp
        response.reason = resp.reason
        response.url = req.url.decode() if isinstance(req.url, bytes) else req.url
        response.request = req
        response.connection = self
        return response

    def get_connection_with_tls_context(
            self, request: requests.PreparedRequest, verify: bool | str,
            proxies: Mapping[str, str] | None = None,
            cert: str | tuple[str, str] | None = None) -> HTTPConnectionPool:
        """``requests``' pool for ``request``, kept for its origin: requests builds and
        normalizes a pool key and asks the pool manager for every request (~20 µs, issue 49),
        the same answer for every request to one origin. Not kept through a proxy (requests'
        path, each time); no more are kept than the manager keeps (``pool_connections``: a
        pool it let go is forgotten here too, soon, so its idle connections do not linger)."""
        if proxies:
            return super().get_connection_with_tls_context(request, verify, proxies, cert)
        url = request.url or ""
        key = (url[:url.find("/", url.find("//") + 2)], verify, cert)
        pool = self._pools.get(key)
        if pool is None:
            if len(self._pools) >= self._pool_connections:
                self._pools.clear()
            pool = self._pools[key] = super().get_connection_with_tls_context(
                request, verify, proxies, cert)
        return pool

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
