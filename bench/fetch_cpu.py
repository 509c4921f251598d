"""run.py's fetch alone (issue 49): the CPU one ``Fetcher.fetch`` of a tiny page costs.

A server in a child process (so its CPU is not counted) answers every request on a kept
connection with the same small page and the head nginx sends (8 fields; ``--set-cookie`` adds
one, so that each request sends a cookie back); run.py's :class:`minicrawl.http.fetch.Fetcher`
asks for it ``--requests`` times, ``--rounds`` times over, after a warm-up. Printed: the CPU
(user + system, this process) per request of each round, and their min — the number least
disturbed by other load on the machine.

``--floor`` puts the layers under it beside it, their rounds interleaved with its own: urllib3's
``HTTPConnectionPool.urlopen`` (what requests' adapter calls; the body read whole) and
``http.client`` alone (what urllib3 calls), and requests' ``Session.get`` as a user writes it.
The fetcher can cost no less than urllib3's line, short of leaving requests (issue 49).

    nice python bench/fetch_cpu.py                 # 5 × 2,000 requests
    nice python bench/fetch_cpu.py --rounds 7 --requests 5000
    nice python bench/fetch_cpu.py --floor         # and urllib3, http.client, Session.get
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

BODY = b"<!doctype html><title>leaf</title><p>a tiny page</p>\n"
ANSWER = (b"HTTP/1.1 200 OK\r\n"
          b"Server: nginx/1.22.1\r\n"
          b"Date: Sat, 28 Nov 2026 16:41:14 GMT\r\n"
          b"Content-Type: text/html\r\n"
          b"Content-Length: %d\r\n"
          b"Last-Modified: Sat, 28 Nov 2026 12:00:00 GMT\r\n"
          b"Connection: keep-alive\r\n"
          b'ETag: "6768a1b0-35"\r\n'
          b"Accept-Ranges: bytes\r\n" % len(BODY))
COOKIE = b"Set-Cookie: session=abc123; Path=/; HttpOnly\r\n"  # with --set-cookie


async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 whole: bytes) -> None:
    """Answer every request on one connection with ``whole`` (requests have no body)."""
    try:
        while await reader.readuntil(b"\r\n\r\n"):
            writer.write(whole)
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    writer.close()


async def serve(cookie: bool) -> None:
    """Listen on a free loopback port, say which on stdout, serve until killed."""
    whole = ANSWER + (COOKIE if cookie else b"") + b"\r\n" + BODY
    server = await asyncio.start_server(lambda r, w: answer(r, w, whole), "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    """Start the server, fetch, print the CPU µs per request of each round and the min."""
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--set-cookie", action="store_true",
                        help="each answer sets a cookie (so each request sends one back)")
    parser.add_argument("--floor", action="store_true",
                        help="also urllib3's urlopen, http.client and requests' Session.get")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.serve:
        asyncio.run(serve(opts.set_cookie))
        return 0
    from minicrawl.http.fetch import Fetcher
    from minicrawl.options import Options

    cookie = ["--set-cookie"] if opts.set_cookie else []
    server = subprocess.Popen([sys.executable, __file__, "--serve", *cookie],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        url = f"http://127.0.0.1:{port}/leaf.html"
        fetcher = Fetcher(Options(timeout=10))
        ways: dict[str, Callable[[], object]] = {"run.py's Fetcher": lambda: fetcher.fetch(url)}
        if opts.floor:
            ways.update(_floor(port, url))
        for way in ways.values():
            for _ in range(200):  # warm-up: the connection made, caches filled
                way()
        rounds: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(opts.rounds):
            for name, way in ways.items():  # interleaved: each round's load is everyone's
                start = time.process_time()
                for _ in range(opts.requests):
                    way()
                rounds[name].append((time.process_time() - start) / opts.requests * 1e6)
        fetcher.close()
    finally:
        server.kill()
        server.wait()
    print("CPU µs a request, each round, and the min:")
    for name, each in rounds.items():
        print(f"  {name:24} {' '.join(f'{r:5.0f}' for r in each)} — min {min(each):.0f}")
    return 0


def _floor(port: int, url: str) -> dict[str, Callable[[], object]]:
    """The layers under the fetcher, each with its own kept connection, the body read whole."""
    import http.client

    import requests
    import urllib3

    pool = urllib3.HTTPConnectionPool("127.0.0.1", port, maxsize=1)
    conn = http.client.HTTPConnection("127.0.0.1", port)
    session = requests.Session()

    def plain() -> bytes:
        conn.request("GET", "/leaf.html")
        return conn.getresponse().read()

    return {"urllib3 urlopen": lambda: pool.urlopen("GET", "/leaf.html").data,
            "http.client": plain,
            "requests Session.get": lambda: session.get(url).content}


if __name__ == "__main__":
    raise SystemExit(main())
