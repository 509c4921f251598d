"""--recrawl: conditional GETs, content signatures, and what changed between two runs."""

from __future__ import annotations

import json
import sqlite3
from email.utils import formatdate
from urllib.parse import urlsplit

import pytest

from minicrawl import Crawler
from minicrawl.demo.site import Request, Resource
from minicrawl.state.recrawl import Prior, classify

HTML = {"Content-Type": "text/html; charset=utf-8"}
LAST_MODIFIED = formatdate(1_700_000_000, usegmt=True)


class ChangingSite:
    """A site whose pages change between runs (``run`` 1, 2, ...), counting the 304s it sends."""

    def __init__(self, server) -> None:
        self.server = server
        self.run = 1
        self.not_modified: list[str] = []
        server.pages.update({
            "/": self.index, "/etag": self.etag, "/lastmod": self.lastmod, "/same": self.same,
            "/dynamic": self.dynamic, "/etag-changes": self.etag_changes,
            "/gone404": self.gone(404), "/gone410": self.gone(410), "/new": self.new,
            "/broken": Resource(b"never there", 404),
        })

    def index(self, request: Request) -> Resource:
        paths = ["/etag", "/lastmod", "/same", "/dynamic", "/etag-changes", "/gone404",
                 "/gone410", "/broken"] + (["/new"] if self.run >= 2 else [])
        return Resource("".join(f'<a href="{p}">{p}</a>' for p in paths).encode(), 200, HTML)

    def _maybe_304(self, request: Request, path: str, headers: dict[str, str],
                   fresh: bool) -> Resource | None:
        if fresh:
            self.not_modified.append(path)
            return Resource(b"", 304, headers)
        return None

    def etag(self, request: Request) -> Resource:
        headers = {**HTML, "ETag": '"e1"'}
        return self._maybe_304(request, "/etag", {"ETag": '"e1"'},
                               request.headers.get("if-none-match") == '"e1"') or Resource(
            b"<p>etag page, same forever</p>" * 20, 200, headers)

    def lastmod(self, request: Request) -> Resource:
        headers = {**HTML, "Last-Modified": LAST_MODIFIED}
        return self._maybe_304(request, "/lastmod", {},
                               request.headers.get("if-modified-since") == LAST_MODIFIED) or \
            Resource(b"<p>last-modified page</p>" * 30, 200, headers)

    def same(self, request: Request) -> Resource:  # no validators; BaseHTTPServer adds Date
        return Resource(b"<p>identical body every time</p>", 200, HTML)

    def dynamic(self, request: Request) -> Resource:
        return Resource(f"<p>run {self.run}</p>".encode(), 200, HTML)

    def etag_changes(self, request: Request) -> Resource:
        tag = f'"v{self.run}"'
        return self._maybe_304(request, "/etag-changes", {"ETag": tag},
                               request.headers.get("if-none-match") == tag) or Resource(
            f"<p>version {self.run}</p>".encode(), 200, {**HTML, "ETag": tag})

    def gone(self, status: int):
        def handler(request: Request) -> Resource:
            if self.run == 1:
                return Resource(b"<p>here for now</p>", 200, HTML)
            return Resource(b"gone", status)
        return handler

    def new(self, request: Request) -> Resource:
        return Resource(b"<p>brand new</p>", 200, HTML)

    def requests(self, since: int) -> list[Request]:
        return [r for r in self.server.requests[since:] if r.path != "/robots.txt"]


def crawl(server, state, **settings):
    pages: dict[str, object] = {}
    settings = {"threads": 4, "delay": 0, **settings}
    stats = Crawler([server.url("/")], state=str(state),
                    on_page=lambda p: pages.__setitem__(urlsplit(p.url).path, p),
                    **settings).run()
    return pages, stats


def test_recrawl_classifies_every_kind_of_change(server, tmp_path):
    site = ChangingSite(server)
    state = tmp_path / "state"
    first, stats1 = crawl(server, state)
    assert {path: p.change for path, p in first.items()} == {
        path: "new" for path in ["/", "/etag", "/lastmod", "/same", "/dynamic", "/etag-changes",
                                 "/gone404", "/gone410", "/broken"]}
    assert stats1["change_new"] == 9

    site.run = 2
    mark = len(server.requests)
    out = tmp_path / "recrawl.jsonl"
    second, stats = crawl(server, state, recrawl=True, out=str(out))
    assert {path: p.change for path, p in second.items()} == {
        "/": "changed",          # no validators, the body links /new now
        "/etag": "unchanged",    # If-None-Match → 304
        "/lastmod": "unchanged",  # If-Modified-Since → 304
        "/same": "unchanged",    # neither, but the same MD5 and size
        "/dynamic": "changed",   # neither, another body
        "/etag-changes": "changed",  # If-None-Match with the old tag → 200, another body
        "/gone404": "gone", "/gone410": "gone",
        "/broken": "unchanged",  # missing then, missing now
        "/new": "new",           # found on the changed index
    }
    # The 304s: asked conditionally, answered without a body, recorded as no bytes.
    asked = {r.path: r.headers for r in site.requests(mark)}
    assert asked["/etag"]["if-none-match"] == '"e1"'
    assert asked["/lastmod"]["if-modified-since"] == LAST_MODIFIED
    assert asked["/etag-changes"]["if-none-match"] == '"v1"'
    assert "if-none-match" not in asked["/same"] and "if-modified-since" not in asked["/same"]
    assert sorted(site.not_modified) == ["/etag", "/lastmod"]
    for path in ("/etag", "/lastmod"):
        assert second[path].status == 304 and second[path].body == b""
    saved = len(first["/etag"].body) + len(first["/lastmod"].body)
    assert stats["bytes_saved_304"] == saved > 0
    assert (stats["change_new"], stats["change_changed"], stats["change_unchanged"],
            stats["change_gone"]) == (1, 3, 4, 2)
    assert stats["recrawl_queued"] == 9
    records = {urlsplit(r["url"]).path: r for r in map(json.loads, out.read_text().splitlines())}
    assert records["/etag"]["bytes"] == 0 and records["/etag"]["change"] == "unchanged"
    assert records["/gone410"]["status"] == 410 and records["/gone410"]["change"] == "gone"
    # The database keeps the resource's own status and signature for the 304 pages.
    with sqlite3.connect(state / "crawl.db") as db:
        row = db.execute("SELECT status, size, etag FROM pages WHERE url = ?",
                         (server.url("/etag"),)).fetchone()
    assert row == (200, len(first["/etag"].body), '"e1"')

    # A third run with nothing changed: all unchanged (the gone pages too: still missing),
    # and the new ETag of /etag-changes is the one asked for now.
    site.not_modified.clear()
    third, stats3 = crawl(server, state, recrawl=True)
    assert set(p.change for p in third.values()) == {"unchanged"}
    assert stats3["change_unchanged"] == len(third) == 10
    assert sorted(site.not_modified) == ["/etag", "/etag-changes", "/lastmod"]


def test_forget_gone_pages_are_not_revisited_until_a_link_brings_them_back(server, tmp_path):
    state = tmp_path / "state"
    version = {"run": 1}

    def index(request):
        extra = '<a href="/c">c</a>' if version["run"] >= 4 else ""
        return Resource(f'<a href="/a">a</a><a href="/b">b</a>{extra}'.encode(), 200, HTML)

    def b(request):
        return Resource(b"b", 404) if version["run"] in (2, 3) else Resource(b"<p>b</p>", 200,
                                                                             HTML)

    server.pages.update({"/": index, "/a": Resource(b"<p>a</p>", 200, HTML), "/b": b,
                         "/c": Resource(b"<p>c</p>", 200, HTML)})
    crawl(server, state)
    version["run"] = 2
    second, _ = crawl(server, state, recrawl=True, forget_gone=True)
    assert second["/b"].change == "gone"
    with sqlite3.connect(state / "crawl.db") as db:
        assert db.execute("SELECT forgotten FROM pages WHERE url = ?",
                          (server.url("/b"),)).fetchone() == (1,)
    version["run"] = 3
    third, stats3 = crawl(server, state, recrawl=True, forget_gone=True)
    assert "/b" not in third and stats3["recrawl_queued"] == 2  # / and /a
    assert server.fetch_counts()["/b"] == 2
    version["run"] = 4  # /b is back, and the index changed (it links /c too)
    fourth, _ = crawl(server, state, recrawl=True, forget_gone=True)
    assert fourth["/"].change == "changed"
    assert fourth["/b"].change == "new" and fourth["/c"].change == "new"
    assert server.fetch_counts()["/b"] == 3
    with sqlite3.connect(state / "crawl.db") as db:
        assert db.execute("SELECT forgotten, status FROM pages WHERE url = ?",
                          (server.url("/b"),)).fetchone() == (0, 200)


@pytest.mark.parametrize("visited", ["auto", "bloom", "exact"])
def test_a_page_found_gone_is_fetched_once_per_run_and_revived_by_the_next(server, tmp_path,
                                                                           visited):
    """In the run that finds /b gone, a second link to it (from /c, which changed) must not fetch
    it again; in the next run, a link brings it back, once — also with a Visited rebuilt from
    the database (scalable, exact), which leaves the forgotten page out: it was revived a second
    time by the second link, and fetched twice."""
    state = tmp_path / "state"
    run = {"n": 1}

    def page(body):
        return lambda request: Resource(f"{body} (run {run['n']})".encode(), 200, HTML)

    def b(request):
        return Resource(b"gone", 404) if run["n"] == 2 else Resource(b"<p>b</p>", 200, HTML)

    server.pages.update({"/": page('<a href="/a">a</a><a href="/b">b</a><a href="/c">c</a>'),
                         "/a": Resource(b"<p>a</p>", 200, HTML), "/b": b,
                         "/c": page('<a href="/b">b again</a>')})
    crawl(server, state, threads=1, visited=visited)
    run["n"] = 2
    server.requests.clear()
    second, _ = crawl(server, state, threads=1, recrawl=True, forget_gone=True, visited=visited)
    assert second["/b"].change == "gone" and second["/c"].change == "changed"
    assert server.fetch_counts()["/b"] == 1
    run["n"] = 3
    server.requests.clear()
    third, _ = crawl(server, state, threads=1, recrawl=True, forget_gone=True, visited=visited)
    assert third["/b"].change == "new" and server.fetch_counts()["/b"] == 1


def test_a_killed_recrawl_resumes_as_a_recrawl(server, tmp_path):
    site = ChangingSite(server)
    state = tmp_path / "state"
    crawl(server, state)
    site.run = 2
    part, _ = crawl(server, state, recrawl=True, max_pages=4, threads=1)
    assert len(part) == 4
    rest, stats = crawl(server, state, recrawl=True)
    assert stats["state_resumed"] > 0 and "recrawl_queued" not in stats
    assert set(part) | set(rest) == set(server.pages)
    assert not set(part) & set(rest)  # nothing recorded in the first part was fetched again
    both = {**part, **rest}
    assert both["/etag"].change == "unchanged" and both["/gone404"].change == "gone"


def test_recrawl_keeps_saved_copies_and_rewrites_changed_ones(server, tmp_path):
    site = ChangingSite(server)
    state, pages_dir = tmp_path / "state", tmp_path / "pages"
    first, _ = crawl(server, state, save_pages=str(pages_dir))
    site.run = 2
    second, _ = crawl(server, state, recrawl=True, save_pages=str(pages_dir))
    assert second["/etag"].saved == first["/etag"].saved  # 304: the copy is still right
    with open(second["/dynamic"].saved, "rb") as f:
        assert f.read() == b"<p>run 2</p>"


@pytest.mark.parametrize(("prior", "status", "body", "change"), [
    (None, 200, b"x", "new"),
    (Prior(200, None, None, "9dd4e461268c8034f5c8564e155c67a6", 1), 200, b"x", "unchanged"),
    (Prior(200, None, None, "9dd4e461268c8034f5c8564e155c67a6", 1), 200, b"y", "changed"),
    (Prior(200, None, None, "9dd4e461268c8034f5c8564e155c67a6", 1), 500, b"x", "changed"),
    (Prior(200, '"e"', None, "9dd4e461268c8034f5c8564e155c67a6", 1), 304, b"", "unchanged"),
    (Prior(200, None, None, "m", 1), 404, b"", "gone"),
    (Prior(200, None, None, "m", 1), 410, b"", "gone"),
    (Prior(404, None, None, "m", 1), 404, b"", "unchanged"),
    (Prior(410, None, None, "m", 1), 200, b"x", "new"),
    (Prior(200, None, None, "m", 1, forgotten=True), 200, b"x", "new"),
    (Prior(404, None, None, "m", 1, forgotten=True), 404, b"", "gone"),
])
def test_classify(prior, status, body, change):
    assert classify(prior, status, body) == change


def test_conditional_headers_come_from_the_record():
    assert Prior(200, '"abc"', LAST_MODIFIED, "m", 1).request_headers() == {
        "If-None-Match": '"abc"', "If-Modified-Since": LAST_MODIFIED}
    assert Prior(200, None, None, "m", 1).request_headers() == {}


def test_redirects_recrawl_as_unchanged_and_their_targets_are_compared(server, tmp_path):
    """A target reached only through a redirect is recorded in its chain's record; a recrawl
    asks for it under its own URL and compares it with that record, and the redirect itself
    (still to the same target) is unchanged. The chain's middle hop, which the state keeps so
    that a resumed crawl never fetches it twice, is the crawl before's: the recrawl follows
    the chain through it again."""
    state = tmp_path / "state"
    body = {"target": b"<p>target v1</p>"}
    server.pages.update({
        "/": Resource(b'<a href="/old">old</a><a href="/also">also</a>', 200, HTML),
        "/old": Resource(b"", 301, {"Location": "/mid"}),
        "/mid": Resource(b"", 302, {"Location": "/target"}),
        "/target": lambda request: Resource(body["target"], 200, HTML),
        "/also": Resource(b"<p>also</p>", 200, HTML)})
    first, _ = crawl(server, state)
    assert set(first) == {"/", "/old", "/also"} and first["/old"].final_url.endswith("/target")
    second, stats = crawl(server, state, recrawl=True)
    assert {path: p.change for path, p in second.items()} == {
        "/": "unchanged", "/old": "unchanged", "/also": "unchanged", "/target": "unchanged"}
    assert server.fetch_counts()["/target"] == server.fetch_counts()["/mid"] == 2
    body["target"] = b"<p>target v2</p>"
    third, _ = crawl(server, state, recrawl=True)
    assert third["/target"].change == "changed" and third["/old"].change == "unchanged"


def test_recrawling_an_unchanged_generated_site_finds_nothing_changed(make_site, tmp_path):
    server, site = make_site(pages=300)
    state = tmp_path / "state"
    first = Crawler([server.url("/")], threads=8, delay=0, per_host=8, state=str(state)).run()
    counts_before = server.fetch_counts()
    stats = Crawler([server.url("/")], threads=8, delay=0, per_host=8, state=str(state),
                    recrawl=True).run()
    changes = {k: v for k, v in stats.items() if k.startswith("change_")}
    assert set(changes) == {"change_unchanged"}, changes
    assert stats["change_unchanged"] == stats["pages"] == stats["recrawl_queued"] >= first["pages"]
    counts = server.fetch_counts()
    # every page asked for once more, none twice (redirects stop at their recorded target)
    assert set(counts) == set(counts_before)
    assert all(counts[p] - counts_before[p] <= 1 for p in counts)
