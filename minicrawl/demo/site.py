"""A small web server on loopback that serves a site held in memory, and logs every request.

The demo crawl, the tests and the benchmarks all crawl sites served by :class:`LocalSite`, so
they need no internet. The request log is how tests check what the crawler really fetched.

A :class:`Resource` with ``send`` answers by hand instead: the fault injectors at the end
(:func:`reset`, :func:`hang`, :func:`drip`, :func:`endless`, :func:`truncated`) misbehave the
ways real servers do, and :func:`sequence` answers differently on each request (500, then 200).
"""

from __future__ import annotations

import socket
import ssl
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Resource:
    """What the server answers for one path."""

    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {
        "Content-Type": "text/html; charset=utf-8"})
    # Answer by hand (write to handler.wfile, or not at all): how the fault injectors misbehave.
    send: Callable[[BaseHTTPRequestHandler], None] | None = None


@dataclass
class Request:
    """One request the server received."""

    method: str
    path: str  # path and query, as sent
    headers: dict[str, str]
    time: float  # time.monotonic() when it arrived


# A handler may be a Resource or a function of the request returning one (dynamic pages).
Handler = Resource | Callable[[Request], Resource]


class LocalSite:
    """Serves ``pages`` (path → Resource) on ``127.0.0.1`` and a free port (or ``port``), in a
    thread.

    Use as a context manager, or ``start()`` / ``stop()``. ``origin`` is ``http://host:port``
    (``https://`` with a ``tls`` server context; ``host`` as given, e.g. ``localhost``); the
    socket is bound to ``host`` if it is a loopback address (127.0.0.2 is another host for the
    crawler, on the same machine), else 127.0.0.1.
    """

    def __init__(self, pages: dict[str, Handler] | None = None, host: str = "127.0.0.1",
                 tls: ssl.SSLContext | None = None, port: int = 0) -> None:
        self.pages: dict[str, Handler] = dict(pages or {})
        self.host = host
        self.tls = tls  # a server context: the site is served over HTTPS
        self.wanted_port = port  # 0: a free one (OSError on start() if this one is taken)
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port the server listens on (AssertionError before ``start()``)."""
        assert self._server is not None, "start() the site first"
        return self._server.server_address[1]

    @property
    def origin(self) -> str:
        """``http://host:port`` (``https://`` with ``tls``): the site's URL without a path."""
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    def url(self, path: str) -> str:
        """The absolute URL of ``path`` (``"/a.html"``, with any query) on this site."""
        return self.origin + path

    def start(self) -> LocalSite:
        """Serve the pages from a daemon thread, on a free port (or the one asked for: OSError
        if it is taken); returns self."""
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real servers do
            disable_nagle_algorithm = True  # headers and body go out in two writes

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                self.answer("GET")

            def do_HEAD(self) -> None:  # noqa: N802 - the GET's head, no body (a handler of
                self.answer("HEAD")  # the request may answer otherwise: a server that lies)

            def answer(self, method: str) -> None:
                request = Request(method, self.path,
                                  {k.lower(): v for k, v in self.headers.items()},
                                  time.monotonic())
                with site._lock:
                    site.requests.append(request)
                resource = site.resolve(request)
                if resource.send is not None:
                    resource.send(self)
                    return
                self.send_response(resource.status)
                for name, value in resource.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(resource.body)))
                self.end_headers()
                if method != "HEAD":
                    self.wfile.write(resource.body)

            def log_message(self, format: str, *args: object) -> None:
                pass  # the request log above is the record; keep the terminal quiet

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # the default 5 drops SYNs when 32 workers connect at once
            daemon_threads = True
            stopping = site._stopping  # fault injectors that stall give up when the site stops

            def handle_error(self, request: socket.socket | tuple[bytes, socket.socket],
                             client_address: tuple[str, int]) -> None:
                pass  # clients hanging up on a drip or a reset are the point, not a failure

            def get_request(self) -> tuple[socket.socket, tuple[str, int]]:
                """(the accepted connection, TLS-wrapped for an HTTPS site; the client's
                (host, port): the site listens on IPv4 loopback only)."""
                conn, address = super().get_request()
                if site.tls is not None:  # the handshake happens in the request's thread
                    conn = site.tls.wrap_socket(conn, server_side=True,
                                                do_handshake_on_connect=False)
                return conn, address

        self._stopping.clear()
        bind = self.host if self.host.startswith("127.") else "127.0.0.1"
        self._server = Server((bind, self.wanted_port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def resolve(self, request: Request) -> Resource:
        """The answer to ``request``: its path's Resource (a function of the request is
        called), else a 404 page."""
        handler = self.pages.get(request.path)
        if handler is None:
            return Resource(b"<html><body>not found</body></html>", 404)
        return handler(request) if callable(handler) else handler

    def stop(self) -> None:
        """Stop serving and close the socket (fault injectors that stall give up); the
        ``requests`` log stays. Safe to call twice."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> LocalSite:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def fetch_counts(self, exclude: tuple[str, ...] = ("/robots.txt",)) -> Counter[str]:
        """How many times each path was requested (robots.txt left out by default)."""
        with self._lock:
            return Counter(r.path for r in self.requests if r.path not in exclude)


# -- fault injectors: resources that misbehave on purpose ------------------------------------


def chain(pages: int) -> dict[str, Handler]:
    """Pages ``/``, ``/1``, ``/2``, … each linking the next: a crawl that lasts as long as a
    test wants it to (put them in ``LocalSite.pages``)."""
    def page(request: Request) -> Resource:
        n = int(request.path.strip("/") or 0)
        return Resource(f'<a href="/{n + 1}">next</a>'.encode())

    return {f"/{n}" if n else "/": page for n in range(pages)}


def sequence(*resources: Resource) -> Callable[[Request], Resource]:
    """A handler answering its n-th request with ``resources[n]`` (the last one from then on)."""
    answered = 0
    lock = threading.Lock()

    def handler(request: Request) -> Resource:
        nonlocal answered
        with lock:
            n, answered = answered, answered + 1
        return resources[min(n, len(resources) - 1)]

    return handler


def reset() -> Resource:
    """Reset the connection (TCP RST) instead of answering."""
    def send(h: BaseHTTPRequestHandler) -> None:
        h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        h.connection.close()
        h.close_connection = True
    return Resource(send=send)


def hang(seconds: float = 60.0) -> Resource:
    """Accept the request and never answer (until ``seconds`` pass or the site stops)."""
    def send(h: BaseHTTPRequestHandler) -> None:
        h.server.stopping.wait(seconds)  # type: ignore[attr-defined]
        h.close_connection = True
    return Resource(send=send)


def _headers(h: BaseHTTPRequestHandler, status: int, headers: dict[str, str]) -> None:
    h.send_response(status)
    for name, value in headers.items():
        h.send_header(name, value)
    h.end_headers()


def drip(body: bytes, every: float, size: int = 1, headers: dict[str, str] | None = None,
         content_length: int | None = None) -> Resource:
    """Send the headers at once, then ``body`` ``size`` bytes at a time, one piece per ``every``
    seconds; ``content_length`` may claim more than will ever come."""
    def send(h: BaseHTTPRequestHandler) -> None:
        length = len(body) if content_length is None else content_length
        _headers(h, 200, {"Content-Type": "text/html", **(headers or {}),
                          "Content-Length": str(length)})
        for i in range(0, len(body), size):
            if h.server.stopping.wait(every):  # type: ignore[attr-defined]
                break
            h.wfile.write(body[i:i + size])
            h.wfile.flush()
        h.close_connection = True
    return Resource(send=send)


def endless(headers: dict[str, str] | None = None, block: bytes = b"<p>" + b"x" * 8189 + b"\n",
            limit: int = 1 << 30) -> Resource:
    """A body that never ends (up to ``limit`` bytes): no Content-Length, the connection closes
    when the client hangs up."""
    def send(h: BaseHTTPRequestHandler) -> None:
        _headers(h, 200, {"Content-Type": "text/html", **(headers or {}),
                          "Connection": "close"})
        sent = 0
        while sent < limit and not h.server.stopping.is_set():  # type: ignore[attr-defined]
            h.wfile.write(block)
            sent += len(block)
        h.close_connection = True
    return Resource(send=send)


def truncated(body: bytes, claimed: int, headers: dict[str, str] | None = None) -> Resource:
    """Promise ``claimed`` bytes in Content-Length, send ``body`` (fewer) and hang up."""
    def send(h: BaseHTTPRequestHandler) -> None:
        _headers(h, 200, {"Content-Type": "text/html", **(headers or {}),
                          "Content-Length": str(claimed)})
        h.wfile.write(body)
        h.wfile.flush()
        h.close_connection = True
    return Resource(send=send)


class Slow:
    """A handler answering ``answer`` after ``seconds``, counting the requests it serves at once:
    ``busy`` now, ``peak`` the most so far (how tests see ``--per-host`` from the server)."""

    def __init__(self, answer: Resource, seconds: float) -> None:
        self.answer, self.seconds = answer, seconds
        self.busy = self.peak = 0
        self._lock = threading.Lock()

    def __call__(self, request: Request) -> Resource:
        with self._lock:
            self.busy += 1
            self.peak = max(self.peak, self.busy)
        time.sleep(self.seconds)
        with self._lock:
            self.busy -= 1
        return self.answer
