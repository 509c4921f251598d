"""run.py's URLs: the core's canonical URL (tests/core/test_urls.py) with run.py's options after
it, the same answer for seeds, a redirect's Location read as browsers read it, and a URL's
origin and host (minicrawl/origins.py)."""

from __future__ import annotations

import socket
import threading

import pytest
from rawserver import RawSocketServer, read_request

from minicrawl import Crawler
from minicrawl.admission import repeated_segments
from minicrawl.core.crawler import Crawler as CoreCrawler
from minicrawl.core.limits import SameHost
from minicrawl.core.urls import canonical, canonicalize, host_of
from minicrawl.origins import origin_of
from minicrawl.resolve import canonical_url
from minicrawl.seeds import read_seeds

BASE = "http://example.com/a/b/c.html"


@pytest.mark.parametrize(("href", "expected"), [
    ("HTTP://Example.COM/x", "http://example.com/x"),
    ("http://example.com:80/x", "http://example.com/x"),
    ("https://example.com:443/x", "https://example.com/x"),
    ("http://example.com:8080/x", "http://example.com:8080/x"),
    ("https://example.com:80/x", "https://example.com:80/x"),
    ("http://example.com", "http://example.com/"),
    ("d.html", "http://example.com/a/b/d.html"),
    ("../d.html", "http://example.com/a/d.html"),
    ("../../../../d.html", "http://example.com/d.html"),
    ("./", "http://example.com/a/b/"),
    ("/x/./y/../z", "http://example.com/x/z"),
    ("?q=1", "http://example.com/a/b/c.html?q=1"),
    ("#frag", "http://example.com/a/b/c.html"),
    ("/p#frag", "http://example.com/p"),
    ("//other.org/p", "http://other.org/p"),
    ("/%7Euser/%41%62", "http://example.com/~user/Ab"),
    ("/a%2fb", "http://example.com/a%2Fb"),
    ("/%2e%2e/x", "http://example.com/x"),
    ("/caf\u00e9", "http://example.com/caf%C3%A9"),
    ("/a b", "http://example.com/a%20b"),
    ("/q?b=2&a=1", "http://example.com/q?b=2&a=1"),
    ("  /padded\n  ", "http://example.com/padded"),
    ("/ta\tb", "http://example.com/tab"),
    ("http://b\u00fccher.de/", "http://xn--bcher-kva.de/"),
    ("http://[::1]:8080/", "http://[::1]:8080/"),
    ("http://[0:0::1]/", "http://[::1]/"),
    ("http://us er:p@ss@host/x", "http://us%20er:p%40ss@host/x"),  # userinfo escaped too
    ("http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/"),
    # Changed to the URL Standard's answers (run.py's own canonicalizer answered otherwise):
    ("http://example.com./x", "http://example.com./x"),  # was example.com: another origin
    ("/100%", "http://example.com/100%25"),  # a stray "%" (a browser sends it as it is; we
    # write what urllib3 would send, so that the request line is the URL Visited holds)
    ("/a\x00b", "http://example.com/a%00b"),  # was refused: a browser sends %00
    ("http://a..b/", "http://a..b/"),  # was refused: the standard checks no DNS lengths
    ("http://xn--a.com/", "http://xn--a.com/"),  # was refused: ASCII labels pass as they are
])
def test_canonical_forms(href: str, expected: str) -> None:
    assert canonical_url(href, BASE) == (expected, "")


def test_sort_query_is_an_option_applied_after_the_cores_answer() -> None:
    assert canonical_url("/q?b=2&a=1#f", BASE, sort_query=True) == \
        ("http://example.com/q?a=1&b=2", "")
    assert canonical_url("/q?b=2&a=1#f", BASE) == ("http://example.com/q?b=2&a=1", "")
    assert canonical_url("/q", BASE, sort_query=True) == ("http://example.com/q", "")


def test_max_length_is_the_cores_limit_made_an_option() -> None:
    long = "/" + "a" * 3000
    assert canonical_url(long, BASE) == (None, "too long")
    assert canonical_url(long, BASE, max_length=4096) == ("http://example.com" + long, "")
    assert canonical_url("/" + "a" * 100, BASE, max_length=64) == (None, "too long")


@pytest.mark.parametrize(("href", "reason"), [
    ("javascript:void(0)", "not http(s)"),
    ("mailto:a@b.c", "not http(s)"),
    ("ftp://example.com/", "not http(s)"),
    ("data:text/html,hi", "not http(s)"),
    ("http://example.com:99999/", "invalid host or port"),
    ("http://example.com:abc/", "invalid host or port"),
    ("http://[::1/", "invalid host or port"),
    ("http://exa mple.com/", "invalid host or port"),
    ("http://:80/", "invalid host or port"),
    ("http://192.168.0.257/", "invalid host or port"),
    ("http://a\u200db.example/", "invalid host or port"),
    ("//", "invalid host or port"),
    ("/" + "a" * 2100, "too long"),
])
def test_bad_links_have_a_reason(href: str, reason: str) -> None:
    assert canonical_url(href, BASE) == (None, reason)


def test_repeated_segments() -> None:
    assert repeated_segments("http://h/a/a/a/a/") == 4
    assert repeated_segments("http://h/x/a/y/a/a/a?q=a/a/a/a/a") == 4  # the query is not path
    assert repeated_segments("http://h/") == 0 and repeated_segments("http://h/a/b/c") == 1


def test_a_seed_is_the_cores_canonical_url_and_a_refused_one_says_why() -> None:
    urls, problems = read_seeds(["HTTP://Example.org:80/a/../b#x", "example.org/x",
                                 "http://127.1/", "mailto:a@example.org"])
    assert urls == ["http://example.org/b", "http://127.0.0.1/"]
    assert problems == [
        "argument: 'example.org/x' is not a valid http(s) URL (no scheme; write "
        "https://example.org/x); skipped",
        "argument: 'mailto:a@example.org' is not a valid http(s) URL (not http(s)); skipped"]
    assert canonical("HTTP://Example.org:80/a/../b#x")[0] == urls[0]


class RedirectServer(RawSocketServer):
    """``/`` links to ``/old``, which redirects with a Location of raw non-ASCII bytes (as some
    servers send it, against RFC 9110); the target ``target`` is a page. Keeps the request
    targets as received."""

    def __init__(self, location: bytes, target: str) -> None:
        self.location, self.target = location, target
        self.paths: list[str] = []
        self.lock = threading.Lock()
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        if (request := read_request(conn)) is None:
            return
        with self.lock:
            self.paths.append(request[0])
        head = {"/": b"200 OK", "/old": b"302 Found", self.target: b"200 OK"}.get(
            request[0], b"404 Not Found")
        body = b'<a href="/old">old</a>' if request[0] == "/" else b"<p>here</p>"
        conn.sendall(b"HTTP/1.1 " + head + b"\r\nContent-Type: text/html\r\nLocation: " +
                     self.location + b"\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s"
                     % (len(body), body))


def crawl(crawler: str, server: RawSocketServer) -> None:
    if crawler == "run.py":
        Crawler([server.url("/")], delay=0, threads=1).run()
    else:
        CoreCrawler([server.url("/")], threads=1, admission=[SameHost([server.url("/")])]).run()


@pytest.mark.parametrize("crawler", ["run.py", "core"])
def test_a_location_in_raw_utf8_is_requested_as_a_browser_requests_it(crawler: str) -> None:
    """The server sees /caf%C3%A9 (é's UTF-8 bytes), not /caf%C3%83%C2%A9 (those bytes read as
    Latin-1, then encoded again), from either crawler."""
    server = RedirectServer("/café".encode(), "/caf%C3%A9")
    try:
        crawl(crawler, server)
    finally:
        server.close()
    assert server.paths[-1] == "/caf%C3%A9"
    assert not [path for path in server.paths if "%C3%83" in path]


@pytest.mark.parametrize("crawler", ["run.py", "core"])
def test_a_location_not_in_utf8_is_followed_as_chrome_follows_it(crawler: str) -> None:
    """A byte that is no UTF-8 (Latin-1's é) is U+FFFD, as in Chrome: the redirect is followed,
    not lost as an answer that never came (requests' own reading raises)."""
    server = RedirectServer(b"/caf\xe9", "/caf%EF%BF%BD")
    try:
        crawl(crawler, server)
    finally:
        server.close()
    assert server.paths[-1] == "/caf%EF%BF%BD"


# --- a URL's origin (minicrawl/origins.py) and its host, the one key of a host (core/urls.py) --

@pytest.mark.parametrize(("url", "origin_", "host"), [
    ("http://h.test/", "http://h.test", "h.test"),
    ("http://h.test/a/b?c=/d/e", "http://h.test", "h.test"),
    ("https://h.test:8443/a", "https://h.test:8443", "h.test:8443"),
    ("http://[::1]:8080/x?y=/z", "http://[::1]:8080", "[::1]:8080"),
    ("http://u:p@[::1]:8080/x", "http://u:p@[::1]:8080", "[::1]:8080"),
    ("http://u:p@h.test:8080/x", "http://u:p@h.test:8080", "h.test:8080"),
    ("http://u:p%40q@h.test/x", "http://u:p%40q@h.test", "h.test"),
])
def test_origin_and_host(url: str, origin_: str, host: str) -> None:
    assert origin_of(url) == origin_
    assert host_of(url) == host


def test_a_non_url_has_no_host() -> None:
    assert host_of("0") == host_of("") == ""


@pytest.mark.parametrize("other", ["https://H.test:8080/b", "http://user:pw@h.test:8080/c",
                                   "https://u@h.test:8080/"])
def test_one_server_is_one_host_by_either_scheme_and_whatever_the_credentials(other) -> None:
    """A host is its name and port: http and https of it, with or without user:password@, are
    one host (one pace, one page cap, one scope); another port is another server."""
    assert host_of(canonicalize(other)) == host_of("http://h.test:8080/a") == "h.test:8080"
    assert host_of("http://h.test:8081/") != "h.test:8080"
    assert host_of("http://h.test/") == host_of("https://h.test/") == "h.test"  # default ports
