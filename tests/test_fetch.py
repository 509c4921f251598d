"""Fetching one URL, against real servers: the body as far as it came, robots.txt's first
500 KiB whatever the server declares, and a host name lookup bounded by ``--timeout``."""

from __future__ import annotations

import gzip
import json
import socket
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from http.cookiejar import DefaultCookiePolicy
from pathlib import Path

import pytest
import requests
import urllib3
from rawserver import RawSocketServer, read_head, read_request
from requests.adapters import HTTPAdapter
from requests.cookies import RequestsCookieJar

from minicrawl import Crawler
from minicrawl.core.interfaces import Response
from minicrawl.demo.site import Resource
from minicrawl.http.fetch import Fetcher, Wire, crawl_cookies
from minicrawl.http.transport import CrawlAdapter
from minicrawl.options import Options

ROOT = Path(__file__).resolve().parent.parent


class CutServer(RawSocketServer):
    """``/`` promises 100,000 bytes, sends 27 of them and hangs up; ``/next`` is a complete
    page. Each request is logged by path."""

    CUT = b'<a href="/next">next</a>   '  # 27 bytes, a whole link in them

    def __init__(self) -> None:
        self.paths: list[str] = []
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        request = read_request(conn)
        if request is None:
            return
        path = request[0]
        self.paths.append(path)
        if path == "/":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                         b"Content-Length: 100000\r\n\r\n" + self.CUT)
        else:
            body = b"<p>the end</p>"
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: "
                         b"close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))


@pytest.fixture
def cut_server() -> Iterator[CutServer]:
    server = CutServer()
    yield server
    server.close()


def test_a_body_cut_by_a_lost_connection_keeps_its_bytes_and_links(cut_server, tmp_path):
    out = tmp_path / "out.jsonl"
    done = subprocess.run(
        [sys.executable, str(ROOT / "run.py"), f"http://127.0.0.1:{cut_server.port}/",
         "--out", str(out), "--retries", "0", "--delay", "0", "--ignore-robots", "--quiet"],
        capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert "Traceback" not in done.stderr
    records = {json.loads(line)["url"].rsplit("/", 1)[1]: json.loads(line)
               for line in out.read_text().splitlines()}
    cut = records[""]
    assert cut["bytes"] == 27 and cut["links"] == 1 and cut["new"] == 1
    assert "IncompleteRead(27 bytes read, 99973 more expected)" in cut["error"]
    assert records["next"]["error"] is None and cut_server.paths == ["/", "/next"]


def test_a_cut_body_is_retried_and_the_last_attempt_keeps_what_it_read(cut_server):
    pages = []
    Crawler([f"http://127.0.0.1:{cut_server.port}/"], on_page=pages.append, retries=1,
            retry_backoff=0.01, delay=0, ignore_robots=True).run()
    cut = next(p for p in pages if p.url.endswith(f":{cut_server.port}/"))
    assert cut.body == CutServer.CUT and "gave up after 2 attempts" in cut.error
    assert cut_server.paths.count("/") == 2 and cut_server.paths.count("/next") == 1


def test_robots_txt_over_500_kib_is_obeyed_as_far_as_its_first_500_kib(server):
    # Content-Length says 700 KiB: the rules on its first lines must still hold.
    rules = b"User-agent: *\nDisallow: /secret\n"
    padding = b"# " + b"x" * 97 + b"\n"
    body = rules + padding * (700 * 1024 // len(padding))
    server.pages.update({
        "/robots.txt": Resource(body, 200, {"Content-Type": "text/plain"}),
        "/": Resource(b'<a href="/secret">s</a><a href="/open">o</a>'),
        "/secret": Resource(b"no"), "/open": Resource(b"yes"),
    })
    pages = []
    stats = Crawler([server.url("/")], on_page=pages.append, delay=0).run()
    counts = server.fetch_counts(exclude=())
    assert counts["/robots.txt"] == 1 and counts["/open"] == 1 and "/secret" not in counts
    assert stats["robots_disallowed"] == 1


def test_an_explicit_max_bytes_reads_the_first_bytes_whatever_the_content_length(server):
    server.pages["/big"] = Resource(b"a" * 5000, 200, {"Content-Type": "text/plain"})
    fetcher = Fetcher(Options(max_bytes=1000))
    try:
        capped = fetcher.fetch(server.url("/big"))  # the crawl's cap: not read at all
        prefix = fetcher.fetch(server.url("/big"), max_bytes=100)
    finally:
        fetcher.close()
    assert capped.body == b"" and "Content-Length 5000" in capped.error
    assert prefix.body == b"a" * 100 and "max_bytes (100)" in prefix.error


def test_a_slow_host_name_lookup_fails_at_the_timeout_and_its_answer_is_kept(server, slow_dns):
    server.pages["/"] = Resource(b"hello")
    url = f"http://one.slow.test:{server.port}/"
    fetcher = Fetcher(Options(timeout=0.5))
    try:
        started = time.monotonic()
        first = fetcher.fetch(url)
        assert time.monotonic() - started < 2.5  # the fake lookup takes 3 s: not waited for
        # A lookup that would have succeeded: the fetch gave up on it (a transient error)...
        assert first.status is None and first.transient
        assert first.error.startswith("ConnectTimeout: DNS lookup of one.slow.test timed out")
        # ... while it finished in the background: the next fetch uses its answer.
        assert slow_dns.setdefault("one.slow.test", threading.Event()).wait(10)
        second = fetcher.fetch(url)
    finally:
        fetcher.close()
    assert second.status == 200 and second.body == b"hello"


def test_a_crawl_records_a_slow_lookup_as_a_timeout_and_goes_on(server, slow_dns):
    server.pages["/"] = Resource(
        f'<a href="http://two.slow.test:{server.port}/x">x</a><a href="/y">y</a>'.encode())
    server.pages["/y"] = Resource(b"y")
    pages = []
    Crawler([server.url("/")], on_page=pages.append, timeout=0.5, retries=0, delay=0,
            ignore_robots=True, allow_domain=["slow.test"]).run()
    errors = {p.url: p.error for p in pages}
    slow = errors[f"http://two.slow.test:{server.port}/x"]
    assert slow.startswith("ConnectTimeout") and "DNS lookup" in slow
    assert errors[server.url("/y")] is None


def test_a_name_that_does_not_resolve_is_a_connection_error():
    fetcher = Fetcher(Options(timeout=2))
    try:
        response = fetcher.fetch("http://no-such-host.invalid/")
    finally:
        fetcher.close()
    assert response.error.startswith("ConnectionError") and response.transient


class KeepAliveServer(RawSocketServer):
    """Answers each request on a connection with its path as the body, keeping the connection
    open — except that after ``close_after`` answers it hangs up, as a server does when its
    keep-alive timeout runs out. Keeps each request's head as received."""

    def __init__(self, close_after: int = 1) -> None:
        self.close_after = close_after
        self.heads: list[bytes] = []
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        pending = b""
        for _ in range(self.close_after):
            if (request := read_head(conn, pending)) is None:
                return
            head, pending = request
            self.heads.append(head)
            body = head.split(b" ", 2)[1]
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))


def test_a_kept_connection_the_server_closed_is_replaced_before_a_request_is_lost():
    server = KeepAliveServer(close_after=1)
    fetcher = Fetcher(Options(timeout=5))
    try:
        first = fetcher.fetch(server.url("/a"))
        time.sleep(0.2)  # the server's close reaches us
        second = fetcher.fetch(server.url("/b"))
    finally:
        fetcher.close()
        server.close()
    assert (first.body, first.error) == (b"/a", None)
    assert (second.body, second.error) == (b"/b", None)
    assert server.connections == 2


def test_one_connection_serves_a_workers_requests_to_an_origin():
    server = KeepAliveServer(close_after=10)
    fetcher = Fetcher(Options(timeout=5))
    try:
        bodies = [fetcher.fetch(server.url(f"/{i}")).body for i in range(10)]
    finally:
        fetcher.close()
        server.close()
    assert bodies == [f"/{i}".encode() for i in range(10)] and server.connections == 1


class PagesServer(RawSocketServer):
    """Answers every request on a connection, kept open, with a 20,000-byte page: sent whole
    with its Content-Length at ``/``, gzipped at ``/gz``, in two chunks at ``/chunked``."""

    PAGE = b"<p>" + b"x" * 19_993 + b"</p>"

    def serve(self, conn: socket.socket) -> None:
        pending = b""
        while (request := read_head(conn, pending)) is not None:
            head, pending = request
            path = head.split(b" ", 2)[1]
            if path == b"/chunked":
                conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                             b"2710\r\n%s\r\n2710\r\n%s\r\n0\r\n\r\n"
                             % (self.PAGE[:10_000], self.PAGE[10_000:]))
                continue
            body, coding = (gzip.compress(self.PAGE), b"gzip") if path == b"/gz" else \
                (self.PAGE, b"identity")
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Encoding: %s\r\nContent-Length: %d\r\n"
                         b"\r\n%s" % (coding, len(body), body))


def test_a_body_is_read_until_its_declared_length_on_a_kept_connection(monkeypatch):
    """A body read as it came (no coding) is not asked for more once urllib3 has closed the
    answer at its Content-Length, which puts the connection back in the pool (issue 49): no
    read that brings nothing, one connection for every request. A body sent in chunks or one
    urllib3 inflates is read to its end (a last read brings nothing), on the same connection."""
    pieces: list[int] = []
    read1 = urllib3.response.HTTPResponse.read1

    def counted(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        data = read1(self, *args, **kwargs)
        pieces.append(len(data))
        return data

    monkeypatch.setattr(urllib3.response.HTTPResponse, "read1", counted)
    server = PagesServer()
    fetcher = Fetcher(Options(timeout=5))
    try:
        read = {}
        for path in ("/", "/", "/gz", "/chunked", "/"):
            pieces.clear()
            response = fetcher.fetch(server.url(path))
            assert (response.body, response.error) == (PagesServer.PAGE, None), path
            read[path] = list(pieces)
    finally:
        fetcher.close()
        server.close()
    assert sum(read["/"]) == 20_000 and 0 not in read["/"]
    assert read["/gz"][-1] == read["/chunked"][-1] == 0
    assert server.connections == 1


def test_a_page_that_came_with_its_head_is_read_in_one_piece() -> None:
    """run.py's responses read the socket through a 64 KiB buffer, not io's 8 KiB (issue 49):
    the status line, the head and up to 64 KiB of body come with the first read, so a 20 KB
    page that came with its head is not read again; what goes past the buffer is read on."""
    from minicrawl.http.transport import READ_BUFFER, InterimSkippingResponse
    for size in (20_000, 200_000):
        ours, theirs = socket.socketpair()
        body = b"x" * size
        head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size
        theirs.sendall(head + body[:READ_BUFFER])  # all in the socket before the first read
        response = InterimSkippingResponse(ours, method="GET")
        response.begin()
        buffered = response.fp.peek()  # what the first read brought, past the head
        theirs.sendall(body[READ_BUFFER:])
        read = response.read()
        ours.close()
        theirs.close()
        assert len(buffered) == min(size, READ_BUFFER - len(head)) and read == body


def test_the_request_on_the_wire_is_the_one_the_archive_is_told_of():
    server = KeepAliveServer()
    told: list[Wire | None] = []
    fetcher = Fetcher(Options(timeout=5, user_agent="bot/1"),
                      on_exchange=lambda response, wire: told.append(wire))
    try:
        fetcher.fetch(f"http://user:p%40ss@127.0.0.1:{server.port}/x?q=1#frag",
                      headers={"If-None-Match": '"v1"'})
    finally:
        fetcher.close()
        server.close()
    lines = server.heads[0].decode("latin-1").split("\r\n")
    assert lines[0] == told[0].request_line == "GET /x?q=1 HTTP/1.1"
    assert [tuple(line.split(": ", 1)) for line in lines[1:]] == told[0].request_headers == [
        ("Host", f"127.0.0.1:{server.port}"), ("User-Agent", "bot/1"),
        ("Accept-Encoding", "gzip, deflate, br, zstd"),  # the compression extra is installed
        ("Accept", "*/*"), ("Connection", "keep-alive"), ("If-None-Match", '"v1"'),
        ("Authorization", "Basic dXNlcjpwQHNz")]  # user:p@ss


@pytest.mark.parametrize("coding, compress", [
    ("gzip", gzip.compress),
    ("x-gzip", gzip.compress),
    ("gzip", lambda b: gzip.compress(b[:3000]) + gzip.compress(b[3000:])),  # two members
    ("gzip", lambda b: gzip.compress(b) + b"\0" * 10),  # padding after the member
    ("deflate", zlib.compress),  # deflate as RFC 9110 says: zlib-wrapped
    ("deflate", lambda b: zlib.compress(b, wbits=-15)),  # and as some servers send it: raw
    ("GZIP", gzip.compress),
], ids=["gzip", "x-gzip", "two-members", "padded", "zlib", "raw-deflate", "case"])
def test_compressed_bodies_are_inflated(server, coding, compress):
    page = b"<p>" + b"".join(b"line %d " % i for i in range(1000)) + b"</p>"
    server.pages["/z"] = Resource(compress(page), 200, {"Content-Encoding": coding})
    fetcher = Fetcher(Options(timeout=5))
    try:
        response = fetcher.fetch(server.url("/z"))
    finally:
        fetcher.close()
    assert (response.body, response.error) == (page, None)


def test_a_coding_not_undone_is_a_decode_error_with_the_body_as_received(server):
    """A coding urllib3 does not undo here (one it does not know, or a list with one) comes back
    as a DecodeError with the body as it came (the WARC archive keeps it), so no link is taken
    from undecoded bytes; not worth a retry. A list it knows (gzip, gzip) is undone."""
    server.pages["/2"] = Resource(gzip.compress(gzip.compress(b"twice")), 200,
                                  {"Content-Encoding": "gzip, gzip"})
    server.pages["/x"] = Resource(b'<a href="/never">', 200, {"Content-Encoding": "x-mine"})
    server.pages["/y"] = Resource(b'<a href="/never">', 200, {"Content-Encoding": "gzip, x"})
    fetcher = Fetcher(Options(timeout=5))
    try:
        twice, mine, mixed = (fetcher.fetch(server.url(p)) for p in ("/2", "/x", "/y"))
    finally:
        fetcher.close()
    assert (twice.body, twice.error) == (b"twice", None)
    for response, coding in ((mine, "x-mine"), (mixed, "gzip, x")):
        assert response.status == 200 and response.body == b'<a href="/never">'
        assert not response.transient
        assert response.error == f"DecodeError: Content-Encoding '{coding}' is not undone here"


def test_a_body_that_does_not_inflate_is_a_decode_error_not_worth_a_retry(server):
    server.pages["/bad"] = Resource(b"not gzip at all", 200, {"Content-Encoding": "gzip"})
    fetcher = Fetcher(Options(timeout=5))
    try:
        response = fetcher.fetch(server.url("/bad"))
        after = fetcher.fetch(server.url("/bad"))  # the connection was not left half-read
    finally:
        fetcher.close()
    assert response.error.startswith("DecodeError") and not response.transient
    assert after.error == response.error


class RepeatedHeadersServer(RawSocketServer):
    def serve(self, conn: socket.socket) -> None:
        if read_request(conn) is not None:
            conn.sendall(b"HTTP/1.1 200 Fine\r\nSet-Cookie: a=1\r\nX-Other: o\r\n"
                         b"set-cookie: b=2\r\nContent-Length: 2\r\n\r\nok")


def test_the_response_head_is_kept_as_received_for_the_archive():
    server = RepeatedHeadersServer()
    told: list[tuple[Response, Wire | None]] = []
    fetcher = Fetcher(Options(timeout=5), on_exchange=lambda *heard: told.append(heard))
    try:
        response = fetcher.fetch(server.url("/"))
    finally:
        fetcher.close()
        server.close()
    [(heard, wire)] = told
    assert heard is response and wire is not None
    assert (wire.http_version, response.status, wire.reason) == ("HTTP/1.1", 200, "Fine")
    # Each field line is kept; urllib3 groups a repeated name under its first spelling.
    assert list(response.headers.items()) == [("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"),
                                              ("X-Other", "o"), ("Content-Length", "2")]
    # The header map is the core's: any case, each repeat kept (two X-Robots-Tag are two)
    assert response.headers["set-cookie"] == "a=1, b=2" and response.headers["x-other"] == "o"


def test_tls_to_a_plain_http_port_is_an_ssl_error_not_worth_a_retry(server):
    server.pages["/"] = Resource(b"plain")
    fetcher = Fetcher(Options(timeout=5))
    try:
        response = fetcher.fetch(server.origin.replace("http://", "https://") + "/")
    finally:
        fetcher.close()
    assert response.status is None and response.error.startswith("SSLError")
    assert not response.transient


def test_headers_are_lower_cased_and_repeats_kept_for_the_archive(server) -> None:
    server.pages["/p"] = Resource(b"<p>x</p>", 200, {"Content-Type": "text/html",
                                                      "ETag": '"v1"', "X-Two": "a"})
    exchanges: list[tuple[Response, Wire | None]] = []
    fetcher = Fetcher(Options(), on_exchange=lambda *heard: exchanges.append(heard))
    response = fetcher.fetch(server.url("/p"), headers={"If-None-Match": '"v0"'})
    assert response.headers["etag"] == '"v1"' and response.headers["content-type"] == "text/html"
    [(heard, wire)] = exchanges
    assert heard is response and wire is not None
    assert wire.request_line == "GET /p HTTP/1.1"
    assert ("If-None-Match", '"v0"') in wire.request_headers
    assert wire.request_headers[0] == ("Host", server.origin.split("//")[1])
    assert ("ETag", '"v1"') in response.headers.items() and wire.reason == "OK"
    assert server.requests[-1].headers["if-none-match"] == '"v0"'


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
    fetcher = Fetcher(Options(timeout=5))
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
    exchanges: list[tuple[Response, Wire | None]] = []
    fetcher = Fetcher(Options(timeout=5), on_exchange=lambda *heard: exchanges.append(heard))
    try:
        fetcher.fetch(server.url("/a?q=1"))
        fetcher.fetch(server.url("/b"), headers={"If-None-Match": '"v0"'})
    finally:
        server.close()
    for (response, wire), head in zip(exchanges, server.heads, strict=True):
        lines = head.decode().split("\r\n")
        assert wire is not None and wire.request_line == lines[0]
        assert [f"{k}: {v}" for k, v in wire.request_headers] == lines[1:]
        assert (wire.http_version, wire.reason) == ("HTTP/1.0", "Fine")
        assert list(response.headers.items())[:4] == [("Set-Cookie", "s=1; Path=/"),
                                                      ("X-Two", "a"), ("X-Two", "b"),
                                                      ("Content-Length", "2")]
    assert "Cookie: s=1" in server.heads[1].decode().split("\r\n")  # the cookie went back


def test_the_archive_hears_a_fetch_that_got_no_answer_with_what_went_out() -> None:
    """A refused connection: the answer (no status) with the request as it was to be sent and
    no status line; a URL no request could be made of: the answer alone (no Wire)."""
    with socket.socket() as probe:  # a port nothing listens on: bound, then let go
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    heard: list[tuple[Response, Wire | None]] = []
    fetcher = Fetcher(Options(timeout=5), on_exchange=lambda *exchange: heard.append(exchange))
    try:
        refused = fetcher.fetch(f"http://127.0.0.1:{port}/r")
        unparsable = fetcher.fetch("http://[::1/")
    finally:
        fetcher.close()
    assert [response for response, _ in heard] == [refused, unparsable]
    assert refused.status is None and refused.transient and refused.url.endswith("/r")
    wire = heard[0][1]
    assert wire is not None and wire.request_line == "GET /r HTTP/1.1"
    assert (wire.http_version, wire.reason) == ("", "")
    assert unparsable.error.startswith("InvalidURL") and not unparsable.transient
    assert heard[1][1] is None


class CookieServer(RawSocketServer):
    """``/set`` sets two cookies (one ``Set-Cookie`` field each, the second lower-case), ``/set2``
    one in an RFC 2965 ``Set-Cookie2`` field; every other path just answers. Keeps each
    request's ``Cookie`` field (None without one)."""

    def __init__(self) -> None:
        self.cookies: list[str | None] = []
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        pending = b""
        while (request := read_head(conn, pending)) is not None:
            head, pending = request
            fields = dict(line.split(": ", 1) for line in head.decode().split("\r\n")[1:])
            self.cookies.append(fields.get("Cookie"))
            cookies = (b"Set-Cookie: a=1; Path=/\r\nset-cookie: b=2; Path=/\r\n"
                       if head.startswith(b"GET /set ") else
                       b'SET-COOKIE2: c=3; Version="1"; Path="/"\r\n'
                       if head.startswith(b"GET /set2 ") else b"")
            conn.sendall(b"HTTP/1.1 200 OK\r\n%sContent-Type: text/plain; charset=koi8-r\r\n"
                         b"Content-Length: 2\r\n\r\nok" % cookies)


@pytest.mark.parametrize("no_cookies", [False, True], ids=["cookies", "no-cookies"])
def test_cookies_a_server_sets_go_back_with_the_next_requests(no_cookies) -> None:
    """Each fetcher of the crawl sends them (one jar, the crawl's); with --no-cookies none."""
    server = CookieServer()
    options = Options(timeout=5, no_cookies=no_cookies)
    jar = crawl_cookies(options)
    first, second = Fetcher(options, cookies=jar), Fetcher(options, cookies=jar)
    try:
        answers = [first.fetch(server.url("/before")), first.fetch(server.url("/set")),
                   first.fetch(server.url("/after")), second.fetch(server.url("/other"))]
    finally:
        first.close()
        second.close()
        server.close()
    assert [a.error for a in answers] == [None] * 4
    sent = None if no_cookies else "a=1; b=2"
    assert server.cookies == [None, None, sent, sent]


class ToldJar(RequestsCookieJar):
    """The crawl's cookie jar, counting the answers it is handed to find cookies in."""

    told = 0

    def extract_cookies(self, response, request) -> None:  # type: ignore[no-untyped-def]
        self.told += 1
        super().extract_cookies(response, request)


@pytest.mark.parametrize("rfc2965", [False, True], ids=["default-policy", "rfc2965-policy"])
def test_only_an_answer_that_sets_cookies_is_searched_for_them(rfc2965) -> None:
    """An answer without Set-Cookie or Set-Cookie2 is not handed to cookielib (issue 49), one
    with either is; Set-Cookie2 sets a cookie only under an RFC 2965 policy (cookielib's
    default, the crawl's, ignores it)."""
    server = CookieServer()
    # (requests' requests are "unverifiable" to cookielib, from an origin spelled with its port:
    # a strict RFC 2965 policy would take any Set-Cookie2 for a third party's)
    jar = ToldJar(DefaultCookiePolicy(rfc2965=rfc2965, strict_rfc2965_unverifiable=False))
    fetcher = Fetcher(Options(timeout=5), cookies=jar)
    try:
        told = []
        for path in ("/plain", "/set2", "/plain", "/set", "/plain"):
            assert fetcher.fetch(server.url(path)).error is None
            told.append(jar.told)
    finally:
        fetcher.close()
        server.close()
    assert told == [0, 1, 1, 2, 2]
    assert sorted(c.name for c in jar) == (["a", "b", "c"] if rfc2965 else ["a", "b"])
    assert server.cookies[2] == ('$Version=1; c=3; $Path="/"' if rfc2965 else None)


def test_run_py_builds_the_response_requests_builds_but_for_its_cookie_jar() -> None:
    """CrawlAdapter.build_response is HTTPAdapter.build_response without its parsing of the
    answer's cookies into Response.cookies (nothing reads that jar: the crawl's is filled from
    the answer itself): every other attribute alike, on one real answer."""
    server = CookieServer()
    pool = urllib3.PoolManager()
    try:
        answer = pool.request("GET", server.url("/set"), preload_content=False)
        request = requests.Request("GET", server.url("/set")).prepare()
        adapter = CrawlAdapter()
        ours, theirs = adapter.build_response(request, answer), \
            HTTPAdapter().build_response(request, answer)
    finally:
        pool.clear()
        server.close()
    assert ours.connection is adapter and len(ours.cookies) == 0 and ours.encoding == "koi8-r"
    assert sorted(c.name for c in theirs.cookies) == ["a", "b"]  # what ours leaves out
    skip = ("connection", "cookies")
    assert {k: v for k, v in vars(ours).items() if k not in skip} == \
        {k: v for k, v in vars(theirs).items() if k not in skip}
    assert adapter.last_status_line == ("HTTP/1.1", "OK")


@pytest.mark.parametrize("url", [
    "http://a.b/", "http://a.b", "http://a.b:8080/x/y.html?q=1&r=%41", "http://a.b/x#frag",
    "https://a.b/x?", "http://a.b/%7e/é?ü", "http://u:p@a.b/x"])
@pytest.mark.parametrize("proxies", [{}, {"http": "http://proxy:3128"},
                                     {"https": "http://proxy:3128"},
                                     {"http": "socks5://proxy:1080"}], ids=str)
def test_the_request_target_is_the_one_requests_sends(url, proxies) -> None:
    """CrawlAdapter.request_url takes the path and query without asking for proxies when there
    are none (issue 49): the same target as HTTPAdapter's, through a proxy or not."""
    request = requests.Request("GET", url).prepare()
    assert CrawlAdapter().request_url(request, proxies) == \
        HTTPAdapter().request_url(request, proxies)


def test_header_lines_written_once_go_out_as_http_client_writes_them() -> None:
    """run.py's connections write a header field they wrote before as they wrote it (issue 49):
    the server gets the same bytes as from requests' own adapter, request after request, as
    fields come, change and repeat."""
    server = KeepAliveServer(close_after=100)
    extras = [{}, {"If-None-Match": '"v1"'}, {}, {"X-Num": "1", "Cookie": "a=1"},
              {"If-None-Match": '"v1"', "Cookie": "a=2"}, {"Accept": "text/html"}, {}]
    try:
        for adapter in (HTTPAdapter(), CrawlAdapter(), CrawlAdapter()):
            session = requests.Session()
            session.mount("http://", adapter)
            for i, extra in enumerate(extras):
                assert session.get(server.url(f"/{i}"), headers=extra).status_code == 200
            session.close()
    finally:
        server.close()
    theirs, ours, again = (server.heads[i:i + len(extras)] for i in range(0, 21, 7))
    assert ours == theirs and again == theirs
    assert b"\r\nIf-None-Match: \"v1\"\r\n" in theirs[4] and b"Cookie: a=2" in theirs[4]


@pytest.mark.parametrize("fields", [
    [("X-Bad", "a\r\nb")], [("X Bad", "v")], [("X", 1), ("X", True)], [("X", b"v"), ("X", "v")],
    [("Host", urllib3.util.SKIP_HEADER), ("Host", "h")], [("X", "a", "b"), ("X", "a", "b")],
    [("X-Name", "caf\xe9"), ("X-Name", "caf\xe9")]], ids=str)
def test_a_field_is_refused_skipped_or_written_as_http_client_does(fields) -> None:
    """The first time and every time after: what urllib3 and http.client refuse is refused
    again (nothing kept of it), what urllib3 skips is skipped, other values are not taken for
    one that equals them (True == 1)."""
    from minicrawl.http.transport import BoundedConnection

    def lines(connection: urllib3.connection.HTTPConnection) -> list[object]:
        out: list[object] = []
        for _ in range(2):
            connection.putrequest("GET", "/", skip_host=True, skip_accept_encoding=True)
            for field in fields:
                try:
                    connection.putheader(*field)
                except ValueError as exc:
                    out.append(str(exc))
            out.append(connection._buffer[1:])
            connection._buffer.clear()
            connection._HTTPConnection__state = "Idle"  # (no request was sent)
        return out

    assert lines(BoundedConnection("a.b")) == lines(urllib3.connection.HTTPConnection("a.b"))


class HangingServer(RawSocketServer):
    """Answers ``/fast`` at once on a kept connection; never answers ``/slow``."""

    def serve(self, conn: socket.socket) -> None:
        pending = b""
        while (request := read_head(conn, pending)) is not None:
            head, pending = request
            if head.startswith(b"GET /slow "):
                time.sleep(5)
                return
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")


def test_one_timeout_serves_every_request_and_each_is_timed_anew() -> None:
    """The adapter makes urllib3's Timeout of --timeout once (issue 49); urllib3 times each
    request on a copy, so a read that stalls after others still times out, at --timeout."""
    server = HangingServer()
    fetcher = Fetcher(Options(timeout=0.5))
    try:
        first = [fetcher.fetch(server.url("/fast")) for _ in range(3)]
        start = time.monotonic()
        stalled = fetcher.fetch(server.url("/slow"))
        waited = time.monotonic() - start
        after = fetcher.fetch(server.url("/fast"))
    finally:
        fetcher.close()
        server.close()
    assert [r.body for r in first] == [b"ok"] * 3 and after.body == b"ok"
    assert stalled.error.startswith("ReadTimeout") and 0.4 < waited < 2.5
    (timeout,) = fetcher.adapter._timeouts.values()  # made once
    assert (timeout.connect_timeout, timeout.read_timeout) == (0.5, 0.5)


def test_a_pool_is_kept_per_origin_no_more_than_the_manager_keeps() -> None:
    # The adapter keeps each origin's pool (requests would build a key and ask its manager for
    # every request): the manager's own, and no more pools than the manager keeps.
    from minicrawl.demo.site import LocalSite
    sites = [LocalSite(host=f"127.0.0.{n}").start() for n in (2, 3, 4)]
    try:
        for site in sites:
            site.pages["/"] = Resource(b"<p>hi</p>")
        fetcher = Fetcher(Options())
        adapter = fetcher.adapter
        adapter._pool_connections = 2  # (as HTTPAdapter(pool_connections=2) would keep)
        asked = {}
        for site in sites:
            assert fetcher.fetch(site.url("/")).status == 200
            request = requests.Request("GET", site.url("/x")).prepare()
            asked[site.port] = adapter.get_connection_with_tls_context(request, True, {})
            assert asked[site.port] is adapter.get_connection_with_tls_context(request, True, {})
            assert asked[site.port] is HTTPAdapter.get_connection_with_tls_context(
                adapter, request, True, {})  # the manager's own
            assert len(adapter._pools) <= 2
        for site in sites:  # (the first origin's pool was let go: asked again)
            assert fetcher.fetch(site.url("/")).status == 200, site.url("/")
        assert all(len(site.requests) == 2 for site in sites)
        fetcher.close()
    finally:
        for site in sites:
            site.stop()
