"""--sitemaps: pages only a sitemap links are crawled; gzip, indexes, limits, hostile sitemaps;
the fetches are polite; --recrawl skips a page whose <lastmod> is not newer than its fetch."""

from __future__ import annotations

import gzip
import json
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from minicrawl import Crawler
from minicrawl.demo.site import LocalSite, Resource
from minicrawl.sitemaps.parse import MAX_BYTES, MAX_URLS, parse_lastmod, parse_sitemap

ROOT = Path(__file__).resolve().parent.parent
FAST = {"delay": 0, "per_host": 8, "threads": 4}
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
XML = {"Content-Type": "application/xml"}


def urlset(*locs: str, lastmod: dict[str, str] | None = None) -> bytes:
    lastmod = lastmod or {}
    entries = "".join(f"<url><loc>{loc}</loc>"
                      + (f"<lastmod>{lastmod[loc]}</lastmod>" if loc in lastmod else "")
                      + "</url>\n" for loc in locs)
    return f'<?xml version="1.0"?>\n<urlset xmlns="{NS}">\n{entries}</urlset>\n'.encode()


def index(*locs: str) -> bytes:
    entries = "".join(f"<sitemap><loc>{loc}</loc></sitemap>\n" for loc in locs)
    return f'<?xml version="1.0"?>\n<sitemapindex xmlns="{NS}">{entries}</sitemapindex>'.encode()


def robots(server: LocalSite, *sitemaps: str, rules: str = "") -> Resource:
    lines = "".join(f"Sitemap: {server.url(s)}\n" for s in sitemaps)
    return Resource(f"User-agent: *\n{rules}\n{lines}".encode(),
                    headers={"Content-Type": "text/plain"})


def page(text: str = "", *links: str) -> Resource:
    return Resource(f"<html><body><p>{text}</p>".encode()
                    + b"".join(f'<a href="{h}">x</a>'.encode() for h in links)
                    + b"</body></html>")


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_page_linked_only_from_a_sitemap_is_crawled(server, tmp_path):
    server.pages.update({
        "/robots.txt": robots(server, "/sm.xml"),
        "/sm.xml": Resource(urlset(server.url("/only"), server.url("/"), "/relative-is-ok",
                                   "http://offsite.invalid/x"), headers=XML),
        "/": page("home", "/a"), "/a": page("a"), "/only": page("only", "/from-only"),
        "/from-only": page("linked from the sitemap-only page"), "/relative-is-ok": page("r"),
    })
    Crawler([server.url("/")], **FAST).run()  # without --sitemaps: invisible
    assert "/only" not in server.fetch_counts() and "/sm.xml" not in server.fetch_counts()
    server.requests.clear()
    out, trace = tmp_path / "out.jsonl", tmp_path / "trace.txt"
    stats = Crawler([server.url("/")], sitemaps=True, out=str(out), trace=str(trace),
                    **FAST).run()
    counts = server.fetch_counts()
    assert set(counts) == {"/", "/a", "/only", "/from-only", "/relative-is-ok", "/sm.xml"}
    assert max(counts.values()) == 1
    assert stats["sitemap_urls"] == 2 and stats["sitemap_out_of_scope"] == 1
    by_url = {r["url"]: r for r in records(out)}
    only = by_url[server.url("/only")]
    assert only["depth"] == 0 and only["referrer"] == server.url("/sm.xml")
    assert by_url[server.url("/from-only")]["depth"] == 1
    sitemap = by_url[server.url("/sm.xml")]
    assert sitemap["sitemap"] is True and sitemap["error"] is None
    assert sitemap["links"] == 4 and sitemap["new"] == 2
    assert sitemap["referrer"] == server.url("/robots.txt")
    text = trace.read_text()
    assert f"SITEMAP {server.url('/sm.xml')}: 4 entries, 2 → TODO (depth 0)" in text
    assert f"SITEMAP URL {server.url('/only')} from {server.url('/sm.xml')} → TODO" in text


def test_a_gzipped_sitemap_index_is_followed(server):
    server.pages.update({
        "/robots.txt": robots(server, "/index.xml.gz"),
        # gzip recognized by its bytes, whatever the headers claim
        "/index.xml.gz": Resource(gzip.compress(index(server.url("/a.xml.gz"),
                                                      server.url("/b.xml"))),
                                  headers={"Content-Type": "text/html"}),
        "/a.xml.gz": Resource(gzip.compress(urlset(server.url("/only-a"))),
                              headers={"Content-Type": "application/octet-stream"}),
        # compressed on the wire only (Content-Encoding): the fetcher inflates it
        "/b.xml": Resource(gzip.compress(urlset(server.url("/only-b"))),
                           headers={"Content-Type": "application/xml",
                                    "Content-Encoding": "gzip"}),
        "/": page("home"), "/only-a": page("a"), "/only-b": page("b"),
    })
    stats = Crawler([server.url("/")], sitemaps=True, **FAST).run()
    counts = server.fetch_counts()
    assert counts["/only-a"] == counts["/only-b"] == 1
    assert counts["/index.xml.gz"] == counts["/a.xml.gz"] == counts["/b.xml"] == 1
    assert stats["sitemaps_read"] == 3 and stats["sitemap_urls"] == 2


def test_without_a_sitemap_line_sitemap_xml_is_read(server):
    server.pages.update({"/": page("home"), "/only": page("only"),
                         "/sitemap.xml": Resource(urlset(server.url("/only")), headers=XML)})
    stats = Crawler([server.url("/")], sitemaps=True, **FAST).run()
    assert server.fetch_counts()["/only"] == 1 and stats["sitemap_urls"] == 1


def test_sitemap_fetches_obey_robots_and_the_delay(server, tmp_path):
    server.pages.update({
        "/robots.txt": robots(server, "/private/sm.xml", "/sm1.xml", "/sm2.xml",
                              rules="Disallow: /private/"),
        "/private/sm.xml": Resource(urlset(server.url("/secret")), headers=XML),
        "/sm1.xml": Resource(urlset(server.url("/one")), headers=XML),
        "/sm2.xml": Resource(urlset(server.url("/two")), headers=XML),
        "/": page("home"), "/one": page("one"), "/two": page("two"), "/secret": page("s"),
    })
    out = tmp_path / "out.jsonl"
    Crawler([server.url("/")], sitemaps=True, out=str(out), delay=0.3, threads=4).run()
    counts = server.fetch_counts(exclude=())
    assert "/private/sm.xml" not in counts and "/secret" not in counts
    assert all(counts[p] == 1 for p in ("/robots.txt", "/sm1.xml", "/sm2.xml", "/one", "/two"))
    refused = next(r for r in records(out) if r["url"] == server.url("/private/sm.xml"))
    assert refused["sitemap"] and "robots.txt disallows" in refused["error"]
    times = sorted(r.time for r in server.requests)
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    # As the server saw them: robots, sitemaps, pages alike. Arrival, not booked start: a send
    # can lag its start by a thread's scheduling (12 ms seen on a loaded 2-core machine); a
    # delay not kept shows as gaps near 0, so 10 % of slack still catches it.
    assert min(gaps) >= 0.27, gaps


def oversized(first: str, last: str, mib: int = 60) -> bytes:
    """A gzipped sitemap of ``mib`` MiB uncompressed: ``first``, padding, then ``last``."""
    pad = b"<pad>" + b" " * 1000 + b"</pad>\n"  # (libxml2 refuses text nodes over 10 MB)
    body = urlset(first).replace(b"</urlset>", pad * (mib * 2**20 // len(pad)) + b"<url><loc>"
                                 + last.encode() + b"</loc></url></urlset>")
    return gzip.compress(body, compresslevel=1)


def billion_laughs() -> bytes:
    entities = ['<!ENTITY lol0 "lol">'] + [
        f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)]
    return (f'<?xml version="1.0"?>\n<!DOCTYPE urlset [{"".join(entities)}]>\n'
            f'<urlset xmlns="{NS}"><url><loc>http://h/&lol9;</loc></url></urlset>').encode()


def test_hostile_and_broken_sitemaps_give_records_and_the_crawl_goes_on(server, tmp_path):
    u = server.url
    external = (f'<?xml version="1.0"?>\n<!DOCTYPE urlset [<!ENTITY x SYSTEM '
                f'"file:///etc/passwd">]>\n<urlset xmlns="{NS}"><url><loc>{u("/")}&x;'
                f'</loc></url></urlset>').encode()
    malformed = urlset(u("/before-error")).replace(b"</urlset>", b"<url><loc>x</urlset>")
    huge = oversized(u("/first-of-huge"), u("/past-limit"))  # past the 50 MiB limit
    server.pages.update({
        "/robots.txt": robots(server, "/bomb.xml", "/external.xml", "/malformed.xml",
                              "/loop.xml", "/huge.xml.gz", "/html.xml", "/missing.xml",
                              "/empty.xml"),
        "/bomb.xml": Resource(billion_laughs(), headers=XML),
        "/external.xml": Resource(external, headers=XML),
        "/malformed.xml": Resource(malformed, headers=XML),
        "/loop.xml": Resource(index(u("/loop.xml"), u("/loop2.xml")), headers=XML),
        "/loop2.xml": Resource(index(u("/loop.xml"), u("/in-loop.xml")), headers=XML),
        "/in-loop.xml": Resource(urlset(u("/from-loop")), headers=XML),
        "/huge.xml.gz": Resource(huge, headers={"Content-Type": "application/gzip"}),
        "/html.xml": Resource(b"<!DOCTYPE html><html><body>not a sitemap</body></html>"),
        "/empty.xml": Resource(b"", headers=XML),
        "/": page("home"), "/before-error": page("b"), "/from-loop": page("l"),
        "/first-of-huge": page("f"), "/past-limit": page("p"),
    })
    out, stats_file = tmp_path / "out.jsonl", tmp_path / "stats.json"
    result = subprocess.run(
        [sys.executable, "run.py", u("/"), "--sitemaps", "--delay", "0", "--quiet",
         "--out", str(out), "--stats", str(stats_file)],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    counts = server.fetch_counts()
    for path in ("/", "/before-error", "/from-loop", "/first-of-huge"):
        assert counts[path] == 1, path
    assert "/past-limit" not in counts
    assert counts["/loop.xml"] == counts["/loop2.xml"] == 1  # each read once
    errors = {r["url"].removeprefix(server.origin): r["error"] for r in records(out)
              if r.get("sitemap")}
    assert errors["/bomb.xml"].startswith("refused: the document has a DTD")
    assert errors["/external.xml"].startswith("refused: the document has a DTD")
    assert errors["/malformed.xml"].startswith("malformed XML")
    assert errors["/html.xml"] == "not a sitemap: root element <html>"
    assert errors["/huge.xml.gz"] == "cut at 50 MiB uncompressed"
    assert errors["/missing.xml"] == "HTTP 404"
    assert errors["/empty.xml"] is not None
    assert errors["/loop2.xml"] == f"loop: lists {u('/loop.xml')} again"
    assert errors["/in-loop.xml"] is None
    stats = json.loads(stats_file.read_text())
    assert stats["sitemaps_refused"] == 3 and stats["sitemaps_malformed"] >= 1
    assert stats["sitemap_loops"] == 2 and stats["sitemaps_cut"] == 1
    assert "sitemap " + u("/bomb.xml") in result.stderr  # a clear warning names it


def test_the_sitemaps_org_limits_hold_per_file():
    over = urlset(*(f"http://h/{n}" for n in range(MAX_URLS + 10)))
    for body in (over, gzip.compress(over)):
        parsed = parse_sitemap(body)
        assert parsed.error is None and parsed.kind == "urlset"
        assert len(parsed.entries) == MAX_URLS and parsed.over_limit == 10
        assert parsed.entries[-1] == (f"http://h/{MAX_URLS - 1}", None)
    # a gzip bomb (0.6 MB → 100 MiB) is inflated only up to the limit
    parsed = parse_sitemap(oversized("http://h/first", "http://h/past", mib=100))
    assert parsed.cut and parsed.error is None
    assert parsed.entries == [("http://h/first", None)]
    assert MAX_BYTES == 50 * 2**20


@pytest.mark.parametrize(("text", "latest"), [
    ("2024-05-01T10:00:00Z", "2024-05-01T10:00:00+00:00"),
    ("2024-05-01T10:00:00.25+02:00", "2024-05-01T08:00:00+00:00"),
    ("2024-05-01T10:00-05:00", "2024-05-01T15:00:00+00:00"),
    ("2024-05-01", "2024-05-02T12:00:00+00:00"),  # any time that day, in any zone
    ("2024-05", "2024-06-01T12:00:00+00:00"),
    ("2024", "2025-01-01T12:00:00+00:00"),
    ("2024-05-01T10:00:00", "2024-05-01T22:00:00+00:00"),  # no zone: the latest it may be
    ("yesterday", None), ("2024-13-01", None), ("", None), (None, None),
])
def test_lastmod_means_the_latest_instant_it_may_name(text, latest):
    parsed = parse_lastmod(text)
    assert (parsed.isoformat() if parsed else None) == latest


def test_recrawl_skips_pages_whose_lastmod_is_not_newer(server, tmp_path):
    long_ago = "2020-01-01"
    state, out = tmp_path / "state", tmp_path / "out.jsonl"
    server.pages.update({
        "/robots.txt": robots(server, "/sm.xml"),
        "/": page("home", "/linked"), "/linked": page("linked"),
        "/old": page("old"), "/edited": page("edited v1"), "/undated": page("undated"),
    })
    paths = ["/", "/linked", "/old", "/edited", "/undated"]
    dates = {server.url(p): long_ago for p in ("/", "/linked", "/old", "/edited")}
    server.pages["/sm.xml"] = Resource(urlset(*map(server.url, paths), lastmod=dates),
                                       headers=XML)
    settings = {"sitemaps": True, "state": str(state), "out": str(out), **FAST}
    Crawler([server.url("/")], **settings).run()
    assert all(server.fetch_counts()[p] == 1 for p in paths)
    # /edited changes after the first crawl, and the sitemap says so
    server.pages["/edited"] = page("edited v2")
    dates[server.url("/edited")] = (datetime.now(UTC) + timedelta(seconds=1)).isoformat()
    server.pages["/sm.xml"] = Resource(urlset(*map(server.url, paths), lastmod=dates),
                                       headers=XML)
    out.unlink()
    stats = Crawler([server.url("/")], recrawl=True, **settings).run()
    counts = server.fetch_counts()
    assert counts["/old"] == counts["/linked"] == counts["/"] == 1  # no request
    assert counts["/edited"] == counts["/undated"] == 2
    assert stats["sitemap_unchanged"] == 3 and stats["change_unchanged"] == 4
    assert stats["change_changed"] == 1
    by_url = {r["url"]: r for r in records(out) if not r.get("sitemap")}
    assert by_url[server.url("/old")]["change"] == "unchanged"
    assert by_url[server.url("/old")]["status"] == 200
    assert by_url[server.url("/edited")]["change"] == "changed"


def test_sigterm_while_reading_sitemaps_stops_cleanly(server, tmp_path):
    from minicrawl.demo.site import hang

    server.pages.update({"/": page("home"), "/sitemap.xml": hang(30)})
    state = tmp_path / "state"
    proc = subprocess.Popen([sys.executable, "run.py", server.url("/"), "--sitemaps", "--quiet",
                             "--state", str(state), "--delay", "0"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while "/sitemap.xml" not in server.fetch_counts():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert "interrupted while reading the sitemaps" in err
    assert "/" not in server.fetch_counts()  # no page was fetched, the seed stays journaled
    server.pages["/sitemap.xml"] = Resource(urlset(server.url("/")), headers=XML)
    again = subprocess.run([sys.executable, "run.py", server.url("/"), "--sitemaps", "--quiet",
                            "--state", str(state), "--delay", "0"],
                           cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert server.fetch_counts()["/"] == 1


def test_sitemap_records_reach_out_with_a_state_too(tmp_path):
    """With --state the state's writer writes the pages' --out lines; a sitemap file is no page
    of the state, and its record must still reach --out."""
    with LocalSite() as server:
        server.pages.update({"/robots.txt": robots(server, "/sm.xml"),
                             "/sm.xml": Resource(urlset(server.url("/only")), headers=XML),
                             "/": page("home"), "/only": page("only")})
        out = tmp_path / "out.jsonl"
        Crawler([server.url("/")], sitemaps=True, out=str(out), state=str(tmp_path / "st"),
                **FAST).run()
        expected = {server.url("/"), server.url("/only")}, [server.url("/sm.xml")]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["url"] for r in records if r.get("sitemap")] == expected[1]
    assert {r["url"] for r in records if not r.get("sitemap")} == expected[0]
