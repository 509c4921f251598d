"""A latency-adding TCP proxy for HTTP/1.1 on loopback: every request waits ``--delay-ms``.

    python bench/latency_proxy.py --listen 127.0.0.1:9000 --upstream 127.0.0.1:8080 --delay-ms 20

Each client connection gets its own upstream connection (so keep-alive is kept end to end and the
crawler's C connections are nginx's C connections). Each request is held ``delay`` before it is
passed on, so every response arrives at least ``delay`` after its request, like a round trip on a
real network; responses are passed back as they come. Holding the *request* rather than the
response means the proxy never has to parse response framing (chunked, Content-Length, 304...);
crawlers do not pipeline, so one request per connection is in flight and the effect is the same.

Written with asyncio Protocols (not streams), with flow control both ways, so that at 0 ms it adds
one event-loop hop per chunk and little CPU: ``run.py --through-proxy --latency 0`` measures it.
Prints ``ready HOST:PORT`` on stdout once listening; stops on SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys

HEADER_END = b"\r\n\r\n"
MAX_HEADER = 64 * 1024


class Upstream(asyncio.Protocol):
    """The proxy's connection to the server: passes everything back to its client."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.client.send(data)

    def eof_received(self) -> bool:
        self.client.close()  # the server closed (e.g. keepalive_requests): the client reconnects
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.client.close()

    # The client reads slower than the server writes: stop reading the client, and vice versa.
    def pause_writing(self) -> None:
        self.client.pause_reading()

    def resume_writing(self) -> None:
        self.client.resume_reading()


class Client(asyncio.Protocol):
    """One crawler connection: splits its bytes into requests and forwards each after delay."""

    def __init__(self, upstream_addr: tuple[str, int], delay: float) -> None:
        self.upstream_addr = upstream_addr
        self.delay = delay
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.upstream: Upstream | None = None
        self.pending = bytearray()  # bytes of requests not yet complete
        self.ready: list[bytes] = []  # complete requests waiting for the upstream connection
        self.last_due = 0.0
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.pause_reading()  # nothing to forward to until upstream is connected
        self.loop.create_task(self._connect())

    async def _connect(self) -> None:
        try:
            _, upstream = await self.loop.create_connection(lambda: Upstream(self),
                                                            *self.upstream_addr)
        except OSError:
            self.close()
            return
        self.upstream = upstream
        if self.closed:
            self.close()
            return
        if self.transport is not None:
            self.transport.resume_reading()

    def data_received(self, data: bytes) -> None:
        self.pending += data
        while True:
            end = self.pending.find(HEADER_END)
            if end < 0:
                if len(self.pending) > MAX_HEADER:
                    self.close()
                break
            size = end + len(HEADER_END) + _content_length(self.pending[:end])
            if len(self.pending) < size:
                break
            request = bytes(self.pending[:size])
            del self.pending[:size]
            self._forward(request)

    def _forward(self, request: bytes) -> None:
        if self.delay <= 0:
            self._write_upstream(request)
            return
        # Strictly increasing due times keep a connection's requests in order even if the
        # event loop's timer heap does not break ties first-in first-out.
        due = max(self.loop.time() + self.delay, self.last_due + 1e-6)
        self.last_due = due
        self.loop.call_at(due, self._write_upstream, request)

    def _write_upstream(self, request: bytes) -> None:
        if self.upstream is not None and self.upstream.transport is not None and not self.closed:
            self.upstream.transport.write(request)

    def send(self, data: bytes) -> None:
        if self.transport is not None and not self.closed:
            self.transport.write(data)

    def pause_reading(self) -> None:
        if self.transport is not None and not self.closed:
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        if self.transport is not None and not self.closed:
            self.transport.resume_reading()

    def pause_writing(self) -> None:
        if self.upstream is not None and self.upstream.transport is not None:
            self.upstream.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.upstream is not None and self.upstream.transport is not None:
            self.upstream.transport.resume_reading()

    def eof_received(self) -> bool:
        self.close()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.transport is not None:
            self.transport.close()  # flushes what is buffered first
        if self.upstream is not None and self.upstream.transport is not None:
            self.upstream.transport.close()


def _content_length(header: bytearray) -> int:
    """The request body's length (crawlers send GETs, so almost always 0)."""
    lowered = bytes(header).lower()
    at = lowered.find(b"\r\ncontent-length:")
    if at < 0:
        return 0
    value = lowered[at + 17:].split(b"\r\n", 1)[0].strip()
    return int(value) if value.isdigit() else 0


def _addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host or "127.0.0.1", int(port)


async def serve(listen: tuple[str, int], upstream: tuple[str, int], delay_ms: float) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Client(upstream, delay_ms / 1000), *listen,
                                      backlog=1024, reuse_address=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    host, port = server.sockets[0].getsockname()[:2]
    print(f"ready {host}:{port}", flush=True)
    async with server:
        await stop.wait()


def main() -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("--listen", type=_addr, default=("127.0.0.1", 0),
                    help="HOST:PORT to listen on (port 0: any free port, printed)")
    ap.add_argument("--upstream", type=_addr, required=True, help="HOST:PORT of the server")
    ap.add_argument("--delay-ms", type=float, default=20.0, help="delay added to each request")
    args = ap.parse_args()
    if args.listen[0] != "127.0.0.1" or args.upstream[0] != "127.0.0.1":
        sys.exit("loopback only: listen and upstream must be 127.0.0.1")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.listen, args.upstream, args.delay_ms))


if __name__ == "__main__":
    main()
