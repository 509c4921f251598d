"""run.py's fetch alone (issue 49): the CPU one ``Fetcher.fetch`` of a tiny page costs.

A server in a child process (so its CPU is not counted) answers every request on a kept
connection with the same small page and the head nginx sends (8 fields; ``--set-cookie`` adds
one, so that each request sends a cookie back); run.py's :class:`minicrawl.http.fetch.Fetcher`
asks for it ``--requests`` times, ``--rounds`` times over, after a warm-up. Printed: the CPU
(user + system, this process) per request of each round, and their min — the number least
disturbed by other load on the machine.

    nice python bench/fetch_cpu.py                 # 5 × 2,000 requests
    nice python bench/fetch_cpu.py --rounds 7 --requests 5000
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
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
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--set-cookie", action="store_true",
                        help="each answer sets a cookie (so each request sends one back)")
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
        url = f"http://127.0.0.1:{server.stdout.readline().strip()}/leaf.html"
        fetcher = Fetcher(Options(timeout=10))
        for _ in range(200):  # warm-up: the connection made, caches filled
            assert fetcher.fetch(url).status == 200
        rounds = []
        for _ in range(opts.rounds):
            start = time.process_time()
            for _ in range(opts.requests):
                fetcher.fetch(url)
            rounds.append((time.process_time() - start) / opts.requests * 1e6)
        fetcher.close()
    finally:
        server.kill()
        server.wait()
    print("CPU µs a request:", " ".join(f"{r:.0f}" for r in rounds), f"— min {min(rounds):.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
