"""A forward HTTP proxy on loopback that really forwards: a client using it sends the absolute
form (``GET http://host:port/path HTTP/1.1``); the proxy makes the request itself and relays the
answer; for https it opens a tunnel (``CONNECT host:port``) and relays the TLS bytes as they
are. It keeps each request line, so a test sees what went through it."""

from __future__ import annotations

import http.client
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authorization",
              "transfer-encoding", "te", "trailer", "upgrade"}


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    """Copy bytes from ``source`` to ``sink`` until either side closes."""
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class ForwardingProxy:
    def __init__(self) -> None:
        self.request_lines: list[str] = []
        self.proxy_auth: list[str | None] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                proxy.request_lines.append(self.requestline)
                proxy.proxy_auth.append(self.headers.get("Proxy-Authorization"))
                target = urlsplit(self.path)
                if target.scheme != "http" or not target.hostname:
                    self.send_error(400, "absolute http:// URL expected")
                    return
                upstream = http.client.HTTPConnection(target.hostname, target.port or 80,
                                                      timeout=10)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                upstream.request("GET", target.path + (f"?{target.query}" if target.query
                                                       else ""), headers=headers)
                answer = upstream.getresponse()
                body = answer.read()
                upstream.close()
                self.send_response(answer.status)
                for name, value in answer.getheaders():
                    if name.lower() not in HOP_BY_HOP | {"content-length"}:
                        self.send_header(name, value)
                self.send_header("Via", "1.1 test-proxy")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_CONNECT(self) -> None:  # noqa: N802 - https: a tunnel, bytes relayed as they are
                proxy.request_lines.append(self.requestline)
                proxy.proxy_auth.append(self.headers.get("Proxy-Authorization"))
                host, _, port = self.path.rpartition(":")
                try:
                    upstream = socket.create_connection((host, int(port)), timeout=10)
                except (OSError, ValueError):
                    self.send_error(502, "cannot reach " + self.path)
                    return
                self.send_response(200, "Connection established")
                self.end_headers()
                self.close_connection = True
                relay = threading.Thread(target=_pipe, args=(upstream, self.connection),
                                         daemon=True)
                relay.start()
                _pipe(self.connection, upstream)
                relay.join(10)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
