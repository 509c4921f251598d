"""One trip, two crawlers: ``python run.py`` (robots.txt ignored, no retries, no delay, no
sitemaps) and ``python -m minicrawl.core`` request exactly the same URLs from the same site.

Each row of ``CASES`` is a small site, served on 127.0.0.1 (a free port) by a server that logs
every request; both crawlers crawl it from its ``/``, at once, as separate processes (the log
tells them apart by their User-Agent). Each row names the requests expected, so that a URL both
crawlers skip fails too. The rule under test is :func:`minicrawl.core.links.follows_links`: a
200 HTML page's links are followed, its body whole or cut short (the size cap, a lost
connection), not those of an error page, a binary one or a body whose coding is not undone.
"""

from __future__ import annotations

import base64
import gzip
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from minicrawl.core.fetch import USER_AGENT as CORE_AGENT
from minicrawl.demo.site import LocalSite, Request, Resource, truncated

ROOT = Path(__file__).resolve().parents[1]
CAP = 16 * 1024  # both crawlers' body cap (--max-bytes), small: a cut page is quick to send
HTML = {"Content-Type": "text/html"}  # no charset: what a page declares is read from it

CRAWLERS = {
    "run.py": lambda seed: [sys.executable, "run.py", seed, "--ignore-robots", "--retries", "0",
                            "--delay", "0", "--threads", "2", "--max-bytes", str(CAP),
                            "--quiet"],
    "core": lambda seed: [sys.executable, "-m", "minicrawl.core", seed, "--threads", "2",
                          "--max-bytes", str(CAP)],
}


def links(*hrefs: str, pad: int = 0, title: str = "") -> bytes:
    """A page linking ``hrefs`` (its ``title`` keeps two pages' bytes apart: run.py follows no
    duplicate's links), then ``pad`` bytes of text."""
    anchors = "".join(f'<a href="{href}">{href}</a>\n' for href in hrefs)
    return f"<html><title>{title or ' '.join(hrefs)}</title><body>\n{anchors}".encode() \
        + b"x" * pad


def page(*hrefs: str, status: int = 200) -> Resource:
    return Resource(links(*hrefs), status, dict(HTML))


def redirect(location: str, status: int = 301) -> Resource:
    return Resource(b"", status, {"Location": location, **HTML})


def unsized(body: bytes, headers: dict[str, str] | None = None) -> Resource:
    """``body`` with no Content-Length: it ends when the connection closes."""
    def send(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        for name, value in {**HTML, **(headers or {}), "Connection": "close"}.items():
            h.send_header(name, value)
        h.end_headers()
        try:
            h.wfile.write(body)
        except OSError:  # the crawler hung up at its cap
            pass
        h.close_connection = True
    return Resource(send=send)


@dataclass(frozen=True)
class Case:
    """A site (path → answer; ``{port}`` in a header is the site's port) and the requests a
    crawl of it from ``/`` makes (``host/path?query`` as sent, the host only when not the
    seed's). With ``userinfo`` (``user:password``) in the seed, the site asks for it (Basic):
    a request without it is answered 401."""

    pages: dict[str, Resource]
    expected: tuple[str, ...]
    userinfo: str = ""


CASES: dict[str, Case] = {
    # Error pages: their links are not followed, whatever the status (500: once, no retry).
    "error pages": Case({
        "/": page("/404", "/410", "/500"),
        "/404": page("/from-404", status=404),
        "/410": page("/from-410", status=410),
        "/500": page("/from-500", status=500),
    }, ("/", "/404", "/410", "/500")),
    # A body past the cap, no Content-Length: cut at the cap; the link before the cut is real.
    "cut at the cap": Case({
        "/": unsized(links("/before-cut", pad=2 * CAP) + b'<a href="/after-cut">a</a>'),
    }, ("/", "/before-cut")),
    # The same cut after decompression: 32 KiB of gzip inflate past the cap.
    "cut at the cap, gzip": Case({
        "/": Resource(gzip.compress(links("/before-cut", pad=4 * CAP)
                                    + b'<a href="/after-cut">a</a>'),
                      headers={**HTML, "Content-Encoding": "gzip"}),
    }, ("/", "/before-cut")),
    # A connection lost mid-body (Content-Length promised more): the links that came count.
    "connection lost": Case({
        "/": truncated(links("/before-loss"), claimed=10_000, headers=HTML),
    }, ("/", "/before-loss")),
    # Declared over the cap by Content-Length: not read at all, so no link.
    "declared over the cap": Case({
        "/": Resource(links("/in-big", pad=2 * CAP), headers=dict(HTML)),
    }, ("/",)),
    # A body in a coding not undone here is kept as it came: no page to read links from.
    "coding not undone": Case({
        "/": Resource(links("/in-coded"), headers={**HTML, "Content-Encoding": "x-unknown"}),
    }, ("/",)),
    # A chain (each hop once), a relative Location, one off the seed's host (not followed).
    "redirects": Case({
        "/": page("/r1", "/rel/start", "/away"),
        "/r1": redirect("/r2"), "/r2": redirect("/r3", 302), "/r3": redirect("/final", 307),
        "/final": page("/after-chain"),
        "/rel/start": redirect("next", 302), "/rel/next": page("/after-rel"),
        "/away": redirect("http://localhost:{port}/elsewhere"),
    }, ("/", "/r1", "/r2", "/r3", "/final", "/after-chain", "/rel/start", "/rel/next",
        "/after-rel", "/away")),
    # A loop of two, and one to itself: each URL once.
    "redirect loop": Case({
        "/": page("/loop-a", "/self"),
        "/loop-a": redirect("/loop-b"), "/loop-b": redirect("/loop-a"), "/self": redirect("/self"),
    }, ("/", "/loop-a", "/loop-b", "/self")),
    # Binary: no Content-Type and no HTML signature; image/png whose bytes are a link.
    "binary pages": Case({
        "/": page("/blob", "/png"),
        "/blob": Resource(b"\x89PNG\r\n\x1a\n\0\0" + links("/from-blob"), headers={}),
        "/png": Resource(b'<a href="/from-png">x</a>', headers={"Content-Type": "image/png"}),
    }, ("/", "/blob", "/png")),
    # Latin-1 declared nowhere (windows-1252, as browsers): é in the path is UTF-8, in the
    # query the page's encoding.
    "undeclared latin-1": Case({
        "/": Resource(b'<p>caf\xe9</p><a href="/caf\xe9?q=\xe9">x</a>', headers=dict(HTML)),
    }, ("/", "/caf%C3%A9?q=%E9")),
    # No Content-Type, and bytes that sniff as HTML (<html): a page, its link followed.
    "sniffed as HTML": Case({
        "/": Resource(links("/sniffed"), headers={}),
    }, ("/", "/sniffed")),
    # A seed's user:password@, sent to its origin with every request (the URLs hold none).
    "password in the seed": Case({
        "/": page("/locked"), "/locked": page("/locked/deeper"), "/locked/deeper": page(),
    }, ("/", "/locked", "/locked/deeper"), userinfo="user:pw"),
}


class TableSite(LocalSite):
    """Serves a case's pages (a 404 for any other path), ``{port}`` in headers filled in."""

    def __init__(self, pages: dict[str, Resource], userinfo: str = "") -> None:
        super().__init__()
        self.table = pages
        self.password = "Basic " + base64.b64encode(userinfo.encode()).decode() \
            if userinfo else None

    def resolve(self, request: Request) -> Resource:
        if self.password and request.headers.get("authorization") != self.password:
            return Resource(links("/from-401"), 401, {**HTML, "WWW-Authenticate": "Basic"})
        answer = self.table.get(request.path)
        if answer is None:
            return Resource(b"not found", 404, {"Content-Type": "text/plain"})
        if answer.send is None:
            answer = Resource(answer.body, answer.status,
                              {k: v.replace("{port}", str(self.port))
                               for k, v in answer.headers.items()})
        return answer

    def requested(self, agent: Callable[[str], bool]) -> Counter[str]:
        """The requests of the crawler whose User-Agent ``agent`` accepts, as in
        :attr:`Case.expected` (robots.txt and sitemaps left out)."""
        seed_host = f"127.0.0.1:{self.port}"
        return Counter(("" if r.headers.get("host") == seed_host else r.headers.get("host", ""))
                       + r.path for r in list(self.requests)
                       if agent(r.headers.get("user-agent", ""))
                       and r.path != "/robots.txt" and "sitemap" not in r.path)


def crawl_both(site: TableSite, userinfo: str = "") -> dict[str, Counter[str]]:
    """Both crawlers crawl ``site`` from its ``/`` (as ``userinfo``) at once: what each
    requested."""
    seed = site.url("/").replace("://", f"://{userinfo}@" if userinfo else "://")
    procs = {name: subprocess.Popen(command(seed), cwd=ROOT, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
             for name, command in CRAWLERS.items()}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, f"{name}: {err[-2000:]}"
        assert "Traceback" not in err, f"{name}: {err[-2000:]}"
    return {"run.py": site.requested(lambda agent: agent != CORE_AGENT),
            "core": site.requested(lambda agent: agent == CORE_AGENT)}


@pytest.mark.parametrize("name", CASES)
def test_both_crawlers_request_the_same_urls(name: str) -> None:
    case = CASES[name]
    with TableSite(case.pages, case.userinfo) as site:
        requested = crawl_both(site, case.userinfo)
    expected = Counter(case.expected)
    assert requested == {"run.py": expected, "core": expected}
