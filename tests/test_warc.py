"""--warc: WARC/1.1 archives of real crawls of local servers, read back with warcio's own CLI
(``warcio index``, ``warcio check``) and ``ArchiveIterator``."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import resource
import signal
import subprocess
import sys
import time
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

from minicrawl import Crawler
from minicrawl.core.interfaces import Response
from minicrawl.demo.site import Request, Resource, reset, sequence
from minicrawl.http.fetch import Fetcher
from minicrawl.options import Options
from minicrawl.page import Page
from minicrawl.records.warc import WarcArchive, cut_partial_record

ROOT = Path(__file__).resolve().parent.parent
WARCIO = Path(sys.executable).with_name("warcio")
FAST = ["--delay", "0", "--per-host", "8", "--threads", "8", "--quiet"]
HTML = {"Content-Type": "text/html; charset=utf-8"}


def run(*args: str, timeout: float = 120, **kwargs: Any) -> subprocess.CompletedProcess:
    kwargs.setdefault("cwd", ROOT)
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], text=True,
                          capture_output=True, timeout=timeout, **kwargs)


def warcio(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([str(WARCIO), *args], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def sha1_b32(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def records(path: Path) -> list[dict[str, Any]]:
    """Every record of a WARC file: type, URI, WARC headers, HTTP headers, block after them."""
    out = []
    with open(path, "rb") as f:
        for rec in ArchiveIterator(f):
            out.append({
                "type": rec.rec_type, "uri": rec.rec_headers.get_header("WARC-Target-URI"),
                "warc": dict(rec.rec_headers.headers), "http": rec.http_headers,
                "body": rec.raw_stream.read(), "file": path.name,
            })
    return out


def by_type(recs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r for r in recs if r["type"] == kind]


def check_pairs(recs: list[dict[str, Any]]) -> None:
    """Each request record names a response or revisit of the same file and URI; every record
    names its file's warcinfo."""
    info = {r["file"]: r["warc"]["WARC-Record-ID"] for r in by_type(recs, "warcinfo")}
    answers = {r["warc"]["WARC-Record-ID"]: r for r in recs if r["type"] in ("response",
                                                                              "revisit")}
    requests = by_type(recs, "request")
    assert len(requests) == len(answers)
    for r in requests:
        answer = answers[r["warc"]["WARC-Concurrent-To"]]
        assert (answer["uri"], answer["file"]) == (r["uri"], r["file"])
        assert answer["warc"]["WARC-Date"] == r["warc"]["WARC-Date"]
    for r in recs:
        if r["type"] != "warcinfo":
            assert r["warc"]["WARC-Warcinfo-ID"] == info[r["file"]]


def test_demo_crawl_archive_passes_warcio_and_holds_one_response_per_fetch(make_site, tmp_path):
    server, site = make_site(pages=150, robots=True)
    warc, out = tmp_path / "demo.warc.gz", tmp_path / "out.jsonl"
    done = run(server.url("/"), "--warc", str(warc), "--out", str(out), *FAST)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    files = sorted(tmp_path.glob("demo*.warc.gz"))
    assert [f.name for f in files] == ["demo-00000.warc.gz"]  # under 1 GB: one file
    path = files[0]
    index = warcio("index", str(path))
    assert index.returncode == 0
    check = warcio("check", "-v", str(path))
    assert check.returncode == 0 and "digest failed" not in check.stdout, check.stdout

    recs = records(path)
    assert len(index.stdout.splitlines()) == len(recs)
    assert recs[0]["type"] == "warcinfo" and recs[0]["warc"]["WARC-Filename"] == path.name
    assert b"robots: classic" in recs[0]["body"]
    responses = by_type(recs, "response")
    # Exactly one response record per request the server answered, robots.txt included.
    on_wire = Counter(server.url(r.path) for r in server.requests)
    assert Counter(r["uri"] for r in responses) == on_wire
    assert server.url("/robots.txt") in on_wire
    check_pairs(recs)
    # ... and the same URLs as the --out records (each chain's first URL and where it ended).
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    fetched = {r["url"] for r in lines if r["status"]} | {r["final_url"] for r in lines
                                                          if r["status"]}
    assert {r["uri"] for r in responses} - {server.url("/robots.txt")} == fetched
    # The bytes: each body as served, its digest; each request as the server received it.
    asked = {server.url(r.path): r.headers for r in server.requests}
    for r in responses:
        path_ = r["uri"][len(server.origin):]
        served = site.pages.get(path_)
        if served is not None:
            assert r["body"] == served.body
            assert r["http"].get_statuscode() == str(served.status)
        assert r["warc"]["WARC-Payload-Digest"] == sha1_b32(r["body"])
    for r in by_type(recs, "request"):
        assert r["http"].protocol == "GET" and r["http"].statusline.endswith(" HTTP/1.1")
        sent = {k.lower(): v for k, v in r["http"].headers}
        assert sent == asked[r["uri"]]


def chunked(body: bytes, headers: list[tuple[str, str]]) -> Resource:
    """Answer with ``Transfer-Encoding: chunked`` (no Content-Length), in 700-byte chunks."""
    def send(h: Any) -> None:
        h.send_response(200)
        for name, value in headers:
            h.send_header(name, value)
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        for i in range(0, len(body), 700):
            part = body[i:i + 700]
            h.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
        h.wfile.write(b"0\r\n\r\n")
    return Resource(send=send)


def test_decoded_bodies_are_recorded_with_consistent_headers(server, tmp_path):
    page = b"<html><body>" + b"<p>compressible text</p>" * 120 + b"</body></html>"
    packed = gzip.compress(page)
    other = page.replace(b"<body>", b"<body><h1>sent in chunks</h1>")  # not a duplicate
    big = b"x" * 5000
    server.pages.update({
        "/": Resource(b'<a href="/gz">g</a> <a href="/chunked">c</a> <a href="/big">b</a>'),
        "/gz": Resource(packed, 200, {**HTML, "Content-Encoding": "gzip", "X-Name": "caf\xe9"}),
        "/chunked": chunked(other, [("Content-Type", "text/html"), ("Set-Cookie", "a=1"),
                                   ("X-Other", "1"), ("Set-Cookie", "b=2")]),
        "/big": chunked(big, [("Content-Type", "application/octet-stream")]),
    })
    warc = tmp_path / "enc.warc.gz"
    Crawler(server.url("/"), warc=str(warc), warc_max_size=0, delay=0, ignore_robots=True,
            max_bytes=4096, retries=0).run()
    assert warcio("check", str(warc)).returncode == 0
    got = {r["uri"][len(server.origin):]: r for r in by_type(records(warc), "response")}

    gz = got["/gz"]  # gzip undone by the fetcher: the record says so and holds the page
    assert gz["body"] == page
    assert gz["http"].get_header("Content-Encoding") is None
    assert gz["http"].get_header("X-Minicrawl-Original-Content-Encoding") == "gzip"
    assert gz["http"].get_header("Content-Length") == str(len(page))
    assert gz["http"].get_header("X-Minicrawl-Original-Content-Length") == str(len(packed))
    assert gz["warc"]["WARC-Payload-Digest"] == sha1_b32(page)
    whole = gzip.decompress(warc.read_bytes())  # all the members
    assert b"X-Name: caf\xe9\r\n" in whole  # Latin-1 as sent, not percent-encoded

    ch = got["/chunked"]  # de-chunked: Transfer-Encoding moved aside, the length given
    assert ch["body"] == other
    assert ch["http"].get_header("Transfer-Encoding") is None
    assert ch["http"].get_header("X-Minicrawl-Original-Transfer-Encoding") == "chunked"
    assert ch["http"].get_header("Content-Length") == str(len(other))
    assert [v for k, v in ch["http"].headers if k == "Set-Cookie"] == ["a=1", "b=2"]
    assert ch["http"].statusline == "200 OK" and ch["http"].protocol == "HTTP/1.1"

    cut = got["/big"]  # cut at max_bytes: marked truncated
    assert cut["body"] == big[:4096]
    assert cut["warc"]["WARC-Truncated"] == "length"
    assert "WARC-Truncated" not in got["/gz"]["warc"]


def test_every_attempt_is_archived_and_a_fetch_without_answer_is_counted(server, tmp_path):
    server.pages.update({
        "/": Resource(b'<a href="/flaky">f</a> <a href="/reset">r</a> <a href="/moved">m</a>'),
        "/flaky": sequence(Resource(b"busy", 503, {"Retry-After": "0"}), Resource(b"<p>ok</p>")),
        "/reset": reset(),
        "/moved": Resource(b"", 301, {"Location": "/target"}),
        "/target": Resource(b"<p>here</p>"),
    })
    warc = tmp_path / "tries.warc.gz"
    stats = Crawler(server.url("/"), warc=str(warc), warc_max_size=0, delay=0, retries=1,
                    retry_backoff=0.0).run()
    assert warcio("check", str(warc)).returncode == 0
    recs = records(warc)
    check_pairs(recs)
    statuses = [(r["uri"][len(server.origin):], r["http"].get_statuscode())
                for r in by_type(recs, "response")]
    assert sorted(statuses) == sorted([("/robots.txt", "404"), ("/", "200"), ("/flaky", "503"),
                                       ("/flaky", "200"), ("/moved", "301"),
                                       ("/target", "200")])
    assert stats["warc_no_response"] == 2  # /reset, tried twice: nothing came back


class ConditionalSite:
    """``/`` links ``/etag``, which answers If-None-Match "e1" with 304."""

    def __init__(self, server: Any) -> None:
        self.not_modified = 0
        server.pages.update({"/": Resource(b'<a href="/etag">e</a>', 200, HTML),
                             "/etag": self.etag})

    def etag(self, request: Request) -> Resource:
        if request.headers.get("if-none-match") == '"e1"':
            self.not_modified += 1
            return Resource(b"", 304, {"ETag": '"e1"'})
        return Resource(b"<p>same forever</p>" * 20, 200, {**HTML, "ETag": '"e1"'})


def test_a_304_is_archived_as_a_revisit(server, tmp_path):
    site = ConditionalSite(server)
    warc, state = tmp_path / "re.warc.gz", tmp_path / "state"
    settings = {"warc": str(warc), "state": str(state), "delay": 0.0}
    Crawler(server.url("/"), **settings).run()
    stats = Crawler(server.url("/"), recrawl=True, **settings).run()
    assert site.not_modified == 1 and stats["warc_revisits"] == 1
    path = tmp_path / "re-00000.warc.gz"  # with --state the second run went on in it
    assert warcio("check", str(path)).returncode == 0
    recs = records(path)
    assert len(by_type(recs, "warcinfo")) == 2
    check_pairs([{**r, "file": i} for i, r in _runs(recs)])
    etag = [r for r in recs if r["uri"] == server.url("/etag") and r["type"] != "request"]
    assert [r["type"] for r in etag] == ["response", "revisit"]
    revisit = etag[1]
    assert revisit["warc"]["WARC-Profile"].endswith("/revisit/server-not-modified")
    assert revisit["warc"]["WARC-Refers-To-Target-URI"] == server.url("/etag")
    assert revisit["http"].get_statuscode() == "304" and revisit["body"] == b""
    request = next(r for r in by_type(recs, "request")
                   if r["warc"]["WARC-Concurrent-To"] == revisit["warc"]["WARC-Record-ID"])
    assert request["http"].get_header("If-None-Match") == '"e1"'


def _runs(recs: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """(run number, record): a new run starts at each warcinfo of an appended file."""
    run_no, out = -1, []
    for r in recs:
        run_no += r["type"] == "warcinfo"
        out.append((run_no, r))
    return out


def test_a_page_recorded_as_a_duplicate_is_archived_as_a_revisit_of_the_first(server, tmp_path):
    body = b"<html><body><p>one page, two addresses</p></body></html>"
    server.pages.update({"/a": Resource(body, 200, HTML), "/a?ref=nav": Resource(body, 200, HTML),
                         "/c": Resource(b"<p>other</p>", 200, HTML),
                         "/old": Resource(b"", 301, {"Location": "/a"})})
    warc = tmp_path / "dup.warc.gz"
    options = Options(warc=str(warc), warc_max_size=0)
    archive = WarcArchive(options, [server.url("/old")]).start()
    fetcher = Fetcher(options, on_exchange=archive.exchange)
    start, first, second = server.url("/old"), server.url("/a"), server.url("/a?ref=nav")
    fetcher.fetch(start)  # the first copy is reached through a redirect: its record is /old's
    fetcher.fetch(first)
    archive.page(Page(start, 0, None, first, status=200))
    fetcher.fetch(second)
    page = Page(second, 1, first, second, status=200)
    page.duplicate_of = start  # what the crawl's duplicate check records (issue 16, part 1)
    archive.page(page)
    fetcher.fetch(server.url("/c"))  # held back, never recorded as a page: written at close
    stats = archive.close()
    fetcher.close()
    assert stats["warc_responses"] == 3 and stats["warc_revisits"] == 1
    assert warcio("check", str(warc)).returncode == 0
    recs = records(warc)
    check_pairs(recs)
    original = next(r for r in by_type(recs, "response") if r["uri"] == first)
    revisit = next(r for r in by_type(recs, "revisit"))
    assert revisit["uri"] == second
    assert revisit["warc"]["WARC-Profile"].endswith("/revisit/identical-payload-digest")
    assert revisit["warc"]["WARC-Refers-To-Target-URI"] == first
    assert revisit["warc"]["WARC-Refers-To-Date"] == original["warc"]["WARC-Date"]
    assert revisit["warc"]["WARC-Refers-To"] == original["warc"]["WARC-Record-ID"]
    assert revisit["warc"]["WARC-Payload-Digest"] == original["warc"]["WARC-Payload-Digest"] \
        == sha1_b32(body)
    assert revisit["body"] == b"" and revisit["http"].get_statuscode() == "200"
    assert {r["uri"] for r in by_type(recs, "response")} == {start, first, server.url("/c")}


def test_a_response_without_the_wire_fields_is_still_archived(server, tmp_path):
    """A fetch heard without its Wire (the request and status line as on the wire: optional):
    the request is rebuilt from the URL, the reason phrase from the status."""
    server.pages["/x?q=1"] = Resource(b"<p>x</p>", 200, HTML)
    url = server.url("/x?q=1")
    full = Fetcher(Options()).fetch(url)  # a real answer, then stripped to the basic fields
    basic = Response(url, full.status, full.body, headers=full.headers)
    warc = tmp_path / "basic.warc.gz"
    archive = WarcArchive(Options(warc=str(warc), warc_max_size=0), [url]).start()
    archive.exchange(basic, None)
    archive.close()
    assert warcio("check", str(warc)).returncode == 0
    recs = records(warc)
    check_pairs(recs)
    response, request = by_type(recs, "response")[0], by_type(recs, "request")[0]
    assert response["body"] == b"<p>x</p>" and response["http"].statusline == "200 OK"
    assert request["http"].statusline == "/x?q=1 HTTP/1.1"
    assert request["http"].get_header("Host") == url.split("/")[2]


def test_a_crawl_archives_duplicates_as_revisits_and_sitemaps_as_responses(server, tmp_path):
    body = b"<html><body><p>printable</p><a href='/'>home</a></body></html>"
    server.pages.update({
        "/": Resource(b'<a href="/a">a</a> <a href="/a?print=1">print</a>', 200, HTML),
        "/a": Resource(body, 200, HTML), "/a?print=1": Resource(body, 200, HTML),
        "/robots.txt": Resource(f"Sitemap: {server.url('/sm.xml')}\n".encode(), 200,
                                {"Content-Type": "text/plain"}),
        "/sm.xml": Resource(b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                            b"<url><loc>" + server.url("/only").encode() + b"</loc></url>"
                            b"</urlset>", 200, {"Content-Type": "application/xml"}),
        "/only": Resource(b"<p>listed only in the sitemap</p>", 200, HTML),
    })
    warc = tmp_path / "e2e.warc.gz"
    settings: dict[str, Any] = {"sitemaps": True} if "sitemaps" in Options.__dataclass_fields__ \
        else {}
    Crawler(server.url("/"), warc=str(warc), warc_max_size=0, delay=0, threads=1,
            **settings).run()
    assert warcio("check", str(warc)).returncode == 0
    recs = records(warc)
    check_pairs(recs)
    revisits = by_type(recs, "revisit")
    assert len(revisits) == 1 and revisits[0]["uri"] in (server.url("/a"),
                                                          server.url("/a?print=1"))
    first = next(r for r in by_type(recs, "response") if r["body"] == body)
    assert revisits[0]["warc"]["WARC-Refers-To-Target-URI"] == first["uri"]
    assert revisits[0]["warc"]["WARC-Refers-To"] == first["warc"]["WARC-Record-ID"]
    if settings:  # every fetch is archived: the sitemap too (its reader's Fetcher has the hook)
        on_wire = Counter(server.url(r.path) for r in server.requests)
        archived = Counter(r["uri"] for r in recs if r["type"] in ("response", "revisit"))
        assert archived == on_wire, "pass on_exchange to the sitemap reader's Fetcher"


def test_files_roll_over_and_each_one_checks(make_site, tmp_path):
    server, site = make_site(pages=150)
    old = gzip.compress(b"WARC/1.1\r\n")  # (a file that is no WARC file is not replaced)
    for n in range(40):  # an earlier archive of the same name: replaced, not mixed in
        (tmp_path / f"roll-{n:05d}.warc.gz").write_bytes(old)
    limit = 20_000
    stats = Crawler(server.url("/"), warc=str(tmp_path / "roll.warc.gz"), warc_max_size=limit,
                    delay=0, per_host=8, threads=8).run()
    files = sorted(tmp_path.glob("roll-*.warc.gz"))
    assert len(files) >= 3 and stats["warc_files"] == len(files)
    assert [f.name for f in files] == [f"roll-{n:05d}.warc.gz" for n in range(len(files))]
    check = warcio("check", *map(str, files))
    assert check.returncode == 0, check.stdout
    recs = []
    for f in files:
        assert f.stat().st_size <= limit
        part = records(f)
        assert part[0]["type"] == "warcinfo" and part[0]["warc"]["WARC-Filename"] == f.name
        assert len(by_type(part, "response")) >= 1
        recs += part
    check_pairs(recs)  # a request and its response never straddle two files
    on_wire = Counter(server.url(r.path) for r in server.requests)
    assert Counter(r["uri"] for r in by_type(recs, "response")) == on_wire


def test_cut_partial_record_keeps_exactly_the_complete_records(server, tmp_path):
    server.pages.update({"/": Resource(b'<a href="/1">1</a><a href="/2">2</a>' + b"x" * 3000),
                         "/1": Resource(os.urandom(5000), 200, {"Content-Type": "image/png"}),
                         "/2": Resource(b"<p>two</p>" * 500)})
    warc = tmp_path / "w.warc.gz"
    Crawler(server.url("/"), warc=str(warc), warc_max_size=0, delay=0).run()
    data = warc.read_bytes()
    ends, d = [], zlib.decompressobj(16 + zlib.MAX_WBITS)
    offset = 0
    while offset < len(data):  # where each gzip member ends, found independently
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        d.decompress(data[offset:])
        offset = len(data) - len(d.unused_data)
        ends.append(offset)
    assert len(ends) == 1 + 2 * 4  # warcinfo, then 4 fetches (robots.txt, /, /1, /2)
    for cut_at in sorted({1, 5, ends[0] - 1, ends[0], ends[0] + 3, ends[3] + 20,
                          (ends[4] + ends[5]) // 2, ends[-1] - 1, ends[-1]}):
        copy = tmp_path / "copy.warc.gz"
        copy.write_bytes(data[:cut_at])
        cut = cut_partial_record(str(copy))
        keep = max([0] + [e for e in ends if e <= cut_at])
        assert copy.stat().st_size == keep and cut == cut_at - keep, cut_at
        if keep:
            assert len(records(copy)) == ends.index(keep) + 1


def test_kill_9_leaves_readable_records_and_resume_cuts_a_partial_one(make_site, tmp_path):
    server, site = make_site(pages=1500)
    state, warc, out = tmp_path / "state", tmp_path / "k.warc.gz", tmp_path / "out.jsonl"
    args = [server.url("/"), "--state", str(state), "--warc", str(warc), "--out", str(out), *FAST]
    proc = subprocess.Popen([sys.executable, str(ROOT / "run.py"), *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while len(server.requests) < 300 and proc.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    path = tmp_path / "k-00000.warc.gz"
    data = path.read_bytes()
    try:
        gzip.decompress(data)  # every member complete (unless the kill hit a write)
        partial = False
    except (EOFError, zlib.error):
        partial = True
    if not partial:
        killed = records(path)  # all of them read back, digests and all
        assert len(by_type(killed, "response")) > 100
        assert warcio("check", str(path)).returncode == 0
    # A kill in the middle of a write leaves part of a record: as if it had, here.
    member = gzip.compress(b"WARC/1.1\r\nWARC-Type: response\r\n" + os.urandom(4000))
    path.write_bytes(data + member[: len(member) // 2])
    before = len(server.requests)
    done = run(*args)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "cut a partial last record" in done.stderr
    assert warcio("check", str(path)).returncode == 0
    recs = records(path)
    assert len(by_type(recs, "warcinfo")) == 2
    check_pairs([{**r, "file": n} for n, r in _runs(recs)])
    responses = Counter(r["uri"] for r in by_type(recs, "response"))
    on_wire = Counter(server.url(r.path) for r in server.requests)
    assert not responses - on_wire  # nothing archived that was not fetched
    resumed = Counter(server.url(r.path) for r in server.requests[before:])
    assert not resumed - Counter(r["uri"] for n, r in _runs(recs) if n == 1
                                 and r["type"] == "response")  # the resumed run: all of it
    assert set(server.fetch_counts()) == set(site.reachable())


def _limit_file_size() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
    resource.setrlimit(resource.RLIMIT_FSIZE, (60_000, 60_000))


def test_a_failing_archive_is_reported_and_the_crawl_goes_on(make_site, tmp_path):
    server, site = make_site(pages=200)
    warc, stats_file = tmp_path / "full.warc.gz", tmp_path / "stats.json"
    done = run(server.url("/"), "--warc", str(warc), "--warc-max-size", "0", "--stats",
               str(stats_file), *FAST, preexec_fn=_limit_file_size)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "WARC archive stopped" in done.stderr and "File too large" in done.stderr
    stats = json.loads(stats_file.read_text())
    assert stats["warc_errors"] == 1 and stats["pages"] == len(site.reachable())
    assert warcio("check", str(warc)).returncode == 0  # ends with its last complete record
    assert 0 < len(by_type(records(warc), "response")) < len(site.reachable())


@pytest.mark.parametrize("flags, message", [
    (["--warc", "crawl.warc"], "--warc must name a .warc.gz file"),
    (["--warc", "x.warc.gz", "--warc-max-size", "-1"], "--warc-max-size must be at least 0"),
    (["--warc", "/nonexistent/dir/x.warc.gz"], "folder '/nonexistent/dir' does not exist"),
])
def test_bad_warc_options_are_usage_errors(flags, message, tmp_path):
    done = run("http://127.0.0.1:9/", *flags, cwd=tmp_path)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
