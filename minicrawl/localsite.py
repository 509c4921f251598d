"""A small web server on loopback that serves a site held in memory, and logs every request.

The demo crawl, the tests and the benchmarks all crawl sites served by :class:`LocalSite`, so
they need no internet. The request log is how tests check what the crawler really fetched.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Resource:
    """What the server answers for one path."""

    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {
        "Content-Type": "text/html; charset=utf-8"})


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
    """Serves ``pages`` (path → Resource) on ``127.0.0.1`` and a free port, in a thread.

    Use as a context manager, or ``start()`` / ``stop()``. ``origin`` is ``http://host:port``
    (``host`` as given, e.g. ``localhost``, while the socket is always bound to 127.0.0.1).
    """

    def __init__(self, pages: dict[str, Handler] | None = None, host: str = "127.0.0.1") -> None:
        self.pages: dict[str, Handler] = dict(pages or {})
        self.host = host
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._server is not None, "start() the site first"
        return self._server.server_address[1]

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"

    def url(self, path: str) -> str:
        return self.origin + path

    def start(self) -> LocalSite:
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real servers do
            disable_nagle_algorithm = True  # headers and body go out in two writes

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                request = Request("GET", self.path, {k.lower(): v for k, v in self.headers.items()},
                                  time.monotonic())
                with site._lock:
                    site.requests.append(request)
                resource = site.resolve(request)
                self.send_response(resource.status)
                for name, value in resource.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(resource.body)))
                self.end_headers()
                self.wfile.write(resource.body)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the request log above is the record; keep the terminal quiet

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # the default 5 drops SYNs when 32 workers connect at once
            daemon_threads = True

        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def resolve(self, request: Request) -> Resource:
        handler = self.pages.get(request.path)
        if handler is None:
            return Resource(b"<html><body>not found</body></html>", 404)
        return handler(request) if callable(handler) else handler

    def stop(self) -> None:
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
