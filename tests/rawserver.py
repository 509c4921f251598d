"""A raw socket server for tests that need answers no HTTP library would send (bodies cut
short, folded headers, interim answers): subclasses say what to do with each connection."""

from __future__ import annotations

import socket
import threading


class RawSocketServer:
    """Listens on a free loopback port; each connection is handed to :meth:`serve` in a thread."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def serve(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.sock.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            self.serve(conn)


def read_head(conn: socket.socket, pending: bytes = b"") -> tuple[bytes, bytes] | None:
    """(the head of the next request on ``conn``, without its final empty line; the bytes read
    past it), or None once the client has closed."""
    while b"\r\n\r\n" not in pending:
        data = conn.recv(4096)
        if not data:
            return None
        pending += data
    head, rest = pending.split(b"\r\n\r\n", 1)
    return head, rest


def read_request(conn: socket.socket, pending: bytes = b"") -> tuple[str, bytes] | None:
    """(the path of the next request on ``conn``, the bytes read past its head), or None once
    the client has closed."""
    request = read_head(conn, pending)
    return None if request is None else (request[0].split(b" ", 2)[1].decode(), request[1])
