"""``--http requests``: run.py's crawler fetching through the core's fetcher (issue 30, step 1),
against real local servers: the same pages, records and counters as with http.client."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from rawserver import RawSocketServer, read_head, read_request

from minicrawl import Crawler
from minicrawl.fetch import Fetcher, fetcher_for
from minicrawl.fetch_requests import RequestsFetcher
from minicrawl.local.site import Resource
from minicrawl.options import Options

ROOT = Path(__file__).resolve().parent.parent


def crawl(url: str, out: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), url, "--out", str(out),
                           "--delay", "0", "--quiet", *flags],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)


def records(out: Path) -> dict[str, dict]:
    return {r["url"]: r for r in map(json.loads, out.read_text().splitlines())}


def test_the_flag_picks_the_fetcher() -> None:
    assert isinstance(fetcher_for(Options()), RequestsFetcher)  # the default
    assert isinstance(fetcher_for(Options(http="http.client")), Fetcher)


def test_run_py_on_requests_fetches_what_http_client_fetches_once(make_site, tmp_path) -> None:
    """A generated site crawled twice, once per client: each page once, and the same records
    (status, final URL after redirects, links, bytes, error) either way."""
    server, site = make_site()
    seen = {}
    for client in ("http.client", "requests"):
        before = len(server.requests)
        done = crawl(server.url("/"), tmp_path / f"{client}.jsonl", "--http", client)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        paths = [r.path for r in server.requests[before:]]
        assert len(paths) == len(set(paths))  # exactly once
        assert {p for p in paths if p != "/robots.txt"} == set(site.reachable())
        seen[client] = {url: (r["status"], r["final_url"], r["links"], r["bytes"], r["error"])
                        for url, r in records(tmp_path / f"{client}.jsonl").items()}
    assert seen["requests"] == seen["http.client"]


@pytest.mark.parametrize("url, kind, transient", [
    ("http://127.0.0.1:1/", "ConnectionError", True),  # refused: worth a retry
])
def test_errors_keep_their_kinds_and_retry_verdicts(url: str, kind: str, transient: bool) -> None:
    for fetcher in (Fetcher(Options(timeout=2)), RequestsFetcher(Options(timeout=2))):
        response = fetcher.fetch(url)
        assert response.error.startswith(kind + ": ") and response.transient is transient
        assert "\n" not in response.error


def test_headers_are_lower_cased_and_repeats_kept_for_the_archive(server) -> None:
    server.pages["/p"] = Resource(b"<p>x</p>", 200, {"Content-Type": "text/html",
                                                      "ETag": '"v1"', "X-Two": "a"})
    exchanges = []
    fetcher = RequestsFetcher(Options(), on_exchange=exchanges.append)
    response = fetcher.fetch(server.url("/p"), headers={"If-None-Match": '"v0"'})
    assert response.headers["etag"] == '"v1"' and response.content_type == "text/html"
    assert exchanges == [response]
    assert response.request_line == "GET /p HTTP/1.1"
    assert ("If-None-Match", '"v0"') in response.request_headers
    assert response.request_headers[0] == ("Host", server.origin.split("//")[1])
    assert ("ETag", '"v1"') in response.raw_headers and response.reason == "OK"
    assert server.requests[-1].headers["if-none-match"] == '"v0"'


def test_a_slow_lookup_fails_at_the_timeout_and_its_answer_is_kept(server, slow_dns) -> None:
    server.pages["/"] = Resource(b"hello")
    url = f"http://one.slow.test:{server.port}/"
    fetcher = RequestsFetcher(Options(timeout=0.5))
    started = time.monotonic()
    first = fetcher.fetch(url)
    waited = time.monotonic() - started
    assert first.status is None and first.transient, first.error
    assert first.error.startswith("ConnectTimeout: DNS lookup of one.slow.test timed out")
    assert waited < 2.5  # the fake lookup takes 3 s: the fetch did not wait for it
    assert slow_dns.setdefault("one.slow.test", threading.Event()).wait(10)
    second = fetcher.fetch(url)  # the answer that came late is used
    assert second.status == 200 and second.body == b"hello"


def test_a_crawl_on_requests_records_a_slow_lookup_as_a_timeout_and_goes_on(
        server, slow_dns) -> None:
    server.pages["/"] = Resource(
        f'<a href="http://two.slow.test:{server.port}/x">x</a><a href="/y">y</a>'.encode())
    server.pages["/y"] = Resource(b"y")
    pages = []
    Crawler([server.url("/")], on_page=pages.append, timeout=0.5, retries=0, delay=0,
            ignore_robots=True, allow_domain=["slow.test"], http="requests").run()
    errors = {p.url: p.error for p in pages}
    slow = errors[f"http://two.slow.test:{server.port}/x"]
    assert slow.startswith("ConnectTimeout") and "DNS lookup" in slow
    assert errors[server.url("/y")] is None


def test_a_name_that_does_not_resolve_is_a_connection_error() -> None:
    response = RequestsFetcher(Options(timeout=2)).fetch("http://no-such-host.invalid/")
    assert response.error.startswith("ConnectionError") and response.transient


class EarlyHintsServer(RawSocketServer):
    """Answers each request with interim answers first (a 103 with a Link, a 102), then the
    page: ``/`` is a 200 whose body names the path, on one kept connection."""

    def serve(self, conn: socket.socket) -> None:
        pending = b""
        while (request := read_request(conn, pending)) is not None:
            path, pending = request
            body = f'<a href="{path}next">{path}</a>'.encode()
            conn.sendall(b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
                         b"HTTP/1.1 102 Processing\r\n\r\n"
                         b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(body), body))


def test_interim_answers_are_not_the_page() -> None:
    server = EarlyHintsServer()
    fetcher = RequestsFetcher(Options(timeout=5))
    try:
        first, second = fetcher.fetch(server.url("/a")), fetcher.fetch(server.url("/b"))
    finally:
        server.close()
    for response, path in ((first, "/a"), (second, "/b")):
        assert response.error is None and response.status == 200
        assert response.body == f'<a href="{path}next">{path}</a>'.encode()
        assert "link" not in response.headers  # the 103's fields are not the page's
    assert server.connections == 1  # the final answer was read to its end: the connection kept


class WireServer(RawSocketServer):
    """Keeps each request's head as received; answers ``HTTP/1.0 200 Fine`` with a cookie and
    two ``X-Two`` fields (a reason phrase and version no table would give)."""

    def __init__(self) -> None:
        self.heads: list[bytes] = []
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        if (request := read_head(conn)) is not None:
            self.heads.append(request[0])
            conn.sendall(b"HTTP/1.0 200 Fine\r\nSet-Cookie: s=1; Path=/\r\nX-Two: a\r\n"
                         b"X-Two: b\r\nContent-Length: 2\r\n\r\nok")


def test_the_archive_gets_the_exchange_as_sent_and_received() -> None:
    server = WireServer()
    exchanges = []
    fetcher = RequestsFetcher(Options(timeout=5), on_exchange=exchanges.append)
    try:
        fetcher.fetch(server.url("/a?q=1"))
        fetcher.fetch(server.url("/b"), headers={"If-None-Match": '"v0"'})
    finally:
        server.close()
    for exchange, head in zip(exchanges, server.heads, strict=True):
        lines = head.decode().split("\r\n")
        assert exchange.request_line == lines[0]
        assert [f"{k}: {v}" for k, v in exchange.request_headers] == lines[1:]
        assert (exchange.http_version, exchange.reason) == ("HTTP/1.0", "Fine")
        assert exchange.raw_headers[:4] == [("Set-Cookie", "s=1; Path=/"), ("X-Two", "a"),
                                            ("X-Two", "b"), ("Content-Length", "2")]
    assert "Cookie: s=1" in server.heads[1].decode().split("\r\n")  # the cookie went back
