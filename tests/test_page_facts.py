"""Page facts in ``--out``, run as a user runs it (``python run.py`` in a subprocess) on a real
local site whose pages' facts are known exactly: title, description, canonical, language, word
count, links out and in, response time, the redirect chain that led to the page — in JSON lines
and in CSV alike; ``links_in`` written at the crawl's end only where it is true."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from minicrawl import Crawler
from minicrawl.demo.site import LocalSite, Resource, Slow
from minicrawl.html.facts import MAX_FACT
from minicrawl.page import CrawledPage, record
from minicrawl.records import linksin
from minicrawl.records.output import COLUMNS, Output, keys_at_end, record_line
from tests.test_links import from_csv

ROOT = Path(__file__).resolve().parent.parent
FAST = ["--delay", "0", "--threads", "1", "--retries", "0", "--quiet"]
FACTS = ("title", "description", "canonical", "lang", "words", "links", "links_in", "status",
         "final_url", "redirects")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def html(text: str, encoding: str = "utf-8", **headers: str) -> Resource:
    return Resource(text.encode(encoding), 200,
                    {"Content-Type": f"text/html; charset={encoding}", **headers})


def raw(body: bytes, **headers: str) -> Resource:
    return Resource(body, 200, {"Content-Type": "text/html", **headers})


HOME = """<!DOCTYPE html><html lang=" en-GB "><head>
<title>  Home &amp;
   garden </title>
<meta name="DESCRIPTION" content=" Plants, tools  and
 more ">
<link rel=canonical href="./?from=home#top">
<script>var hidden = "no words here";</script><style>p { color: red }</style>
</head><body>
<h1>Welcome home</h1>
<p>Four more words here.</p>
<a href="/r1">Redirected</a> <a href="/a">A</a> <a href="/b">B</a> <a href="/a#x">A again</a>
<a href="/missing">Missing</a> <a href="/doc.pdf">PDF</a> <a href="/c" rel="nofollow">C</a>
</body></html>"""


@pytest.fixture
def site() -> Iterator[LocalSite]:
    """A site whose every page's facts are known (see ``expected``): odd titles (none, two, in
    the body, entities, windows-1252, Shift_JIS, huge), a relative canonical and one against a
    <base>, a Link header canonical, a language from <html lang> and from Content-Language, a
    non-HTML page, a 404, a redirect chain of 2 hops into a page (linked at its start, its
    middle and its end), a nofollow link."""
    with LocalSite() as s:
        s.pages.update({
            "/": html(HOME),
            "/?from=home": html("<title>Home (canonical)</title>"),
            "/a": html("<html><head><title>A</title><title>Second title</title></head><body>\n"
                       "<p>Page A.</p>\n<a href='/'>Home</a> <a href='c'>C</a></body></html>"),
            "/b": html("<p>Bee</p>\n<a href=/a>A</a>\n<a href=/c>C</a>",
                       Link='<https://elsewhere.example/x>; rel="next", </b-canonical>; '
                            'title="a, b; c"; rel="Canonical"', **{"Content-Language": "de"}),
            "/c": html("<html><head></head><body><p>See</p>\n<title>Body  title</title>\n"
                       "<a href=/r2>middle of a chain</a> <a href=/target>the end of a chain"
                       "</a> <a href=/d>D</a></body></html>"),
            "/d": raw(b"<title>Caf\xe9 \x96 cr\xe8me</title><meta name=description "
                      b'content="Cr\xe8me br\xfbl\xe9e"><p>Un caf\xe9</p>\n<a href=/e>E</a>',
                      **{"Content-Type": "text/html; charset=windows-1252"}),
            "/e": Resource('<html lang=ja><meta charset="shift_jis"><base href="/sub/">'
                           '<title>日本語の ページ</title><link rel=canonical href="page.html">'
                           '<p>日本語 です</p>\n<a href="/huge">huge</a> <a href="/entities">'
                           "entities</a></html>".encode("shift_jis"), 200,
                           {"Content-Type": "text/html"}),
            "/sub/page.html": html("<title>Sub</title>"),
            "/huge": html("<title>" + "x " * 5000 + "</title><p>tiny</p>\n"
                          "<a href=/>H</a> <a href=/a>A</a>"),
            "/entities": html('<html lang=""><title>&eacute;t&eacute; &mdash; &lt;summer&gt; '
                              "&#x1F600;</title><p>a&nbsp;b</p>\n<a href=/>H</a> <a href=/a>A</a>",
                              **{"Content-Language": "de"}),
            "/doc.pdf": Resource(b"%PDF-1.4 <title>not HTML</title>", 200,
                                 {"Content-Type": "application/pdf",
                                  "Link": "<https://example.org/doc.pdf>; rel=canonical",
                                  "Content-Language": "fr"}),
            "/r1": Resource(b"", 301, {"Location": "/r2"}),
            "/r2": Resource(b"", 302, {"Location": "/target"}),
            "/target": html("<title>Target</title><p>Arrived here</p>"),
        })
        yield s


def expected(site: LocalSite) -> dict[str, dict[str, object]]:
    """Every record's facts, by URL, as the pages above say."""
    o = site.origin

    def r(path: str, title: str | None, words: int | None, links: int, links_in: int,
          description: str | None = None, canonical: str | None = None,
          lang: str | None = None, status: int = 200, final: str | None = None,
          redirects: list[dict[str, object]] | None = None) -> dict[str, object]:
        return {"title": title, "description": description, "canonical": canonical,
                "lang": lang, "words": words, "links": links, "links_in": links_in,
                "status": status, "final_url": o + (final or path), "redirects": redirects or []}

    records = [
        # in: /a, /huge, /entities; out: its canonical, /r1, /a, /b, /missing, /doc.pdf (the
        # nofollow /c and the second /a not counted)
        r("/", "Home & garden", 14, 6, 3, "Plants, tools and more", o + "/?from=home",
          "en-GB"),
        r("/?from=home", "Home (canonical)", 0, 0, 1),
        # in: /r1 from /, /r2 and /target from /c: all three are this record's
        r("/r1", "Target", 2, 0, 3, final="/target",
          redirects=[{"url": o + "/r1", "status": 301}, {"url": o + "/r2", "status": 302}]),
        r("/a", "A", 4, 2, 4),  # the first of two titles; in: /, /b, /huge, /entities
        r("/b", None, 3, 2, 1, canonical=o + "/b-canonical", lang="de"),  # from its headers
        r("/c", "Body title", 11, 3, 2),  # a title in the body, none in the head
        r("/d", "Café – crème", 3, 1, 1, "Crème brûlée"),  # windows-1252
        r("/e", "日本語の ページ", 4, 3, 1, canonical=o + "/sub/page.html", lang="ja"),
        r("/sub/page.html", "Sub", 0, 0, 1),
        r("/huge", ("x " * 5000)[:MAX_FACT - 1] + "…", 3, 2, 1),
        r("/entities", "été — <summer> 😀", 4, 2, 1),  # lang="": unknown, not the header's
        r("/doc.pdf", None, None, 0, 1, canonical="https://example.org/doc.pdf", lang="fr"),
        r("/missing", None, None, 0, 1, status=404),  # its HTML is not read
    ]
    paths = ["/", "/?from=home", "/r1", "/a", "/b", "/c", "/d", "/e", "/sub/page.html",
             "/huge", "/entities", "/doc.pdf", "/missing"]
    return {o + path: record for path, record in zip(paths, records, strict=True)}


def facts_of(records: list[dict[str, object]]) -> dict[str, dict[str, object]]:
    return {str(rec["url"]): {name: rec[name] for name in FACTS} for rec in records}


def same(records: list[dict[str, object]], site: LocalSite, *, links_in: bool = True) -> None:
    """The records' facts are those ``expected``, page by page, field by field (``links_in``
    aside, unless asked)."""
    got, want = facts_of(records), expected(site)
    assert sorted(got) == sorted(want)
    for url, facts in want.items():
        for name, value in facts.items():
            if name != "links_in" or links_in:
                assert got[url][name] == value, (url, name)


def test_the_facts_of_every_page_in_json_lines(site, tmp_path) -> None:
    out = tmp_path / "pages.jsonl"
    done = run(site.url("/"), *FAST, "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "links_in" not in done.stderr and "Traceback" not in done.stderr
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    same(records, site)
    assert sum(r["links_in"] for r in records) == sum(r["links"] for r in records)
    for rec in records:  # the response time: the chain's requests', each timed
        assert isinstance(rec["elapsed_ms"], float) and 0 < rec["elapsed_ms"] < 10_000
    chain = next(r for r in records if r["url"].endswith("/r1"))
    alone = next(r for r in records if r["url"].endswith("/?from=home"))
    assert chain["elapsed_ms"] > 0 and alone["elapsed_ms"] > 0


def test_the_same_facts_in_csv(site, tmp_path) -> None:
    """The CSV file's columns: the JSON record's fields in one stable order (the facts after
    the fields there were before them); a redirect chain is its JSON text."""
    out = tmp_path / "pages.csv"
    done = run(site.url("/"), *FAST, "--out", str(out))
    assert done.returncode == 0, done.stderr
    names, rows = from_csv(out)
    assert names == list(COLUMNS)
    assert names[:18] == ["url", "final_url", "status", "depth", "referrer", "content_type",
                          "bytes", "links", "new", "elapsed_ms", "fetched_at", "error",
                          "change", "saved", "duplicate_of", "sitemap", "noindex", "check"]
    assert names[18:] == ["title", "description", "canonical", "lang", "words", "links_in",
                          "redirects", "seq"]
    same(rows, site)


def test_links_in_is_null_while_the_crawl_runs_and_where_it_is_not_true(site, tmp_path) -> None:
    """Standard output is never rewritten; a crawl kept in a state that stops before its end
    (here, at its cap) leaves links_in null, and so does the run that resumes it (it has not
    the first run's links), each saying why; a state's crawl that ends in its first run has
    them."""
    done = run(site.url("/"), *FAST, "--out", "-")
    assert done.returncode == 0, done.stderr
    streamed = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(streamed) == 13 and all(r["links_in"] is None for r in streamed)
    assert "links_in" not in done.stderr  # (the user chose a stream)

    state, out = tmp_path / "state", tmp_path / "pages.jsonl"
    done = run(site.url("/"), *FAST, "--state", str(state), "--out", str(out),
               "--max-pages", "4")
    assert done.returncode == 0, done.stderr
    assert "links_in left null: the crawl is not over" in done.stderr
    first = [json.loads(line) for line in out.read_text().splitlines()]
    assert 0 < len(first) < 13 and all(r["links_in"] is None for r in first)
    done = run(site.url("/"), *FAST, "--state", str(state), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "links_in left null: the state holds pages of earlier runs" in done.stderr
    both = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(both) == 13 and all(r["links_in"] is None for r in both)
    assert [r["seq"] for r in both] == sorted(r["seq"] for r in both)
    # The other facts: whichever run recorded the page. (A chain the cap cut resumes at its
    # next hop, recorded under it: its redirects are those from there.)
    hop = next((r for r in both if r["url"] == site.url("/r2")), None)
    if hop is not None:
        assert hop["redirects"] == [{"url": site.url("/r2"), "status": 302}]
        hop.update(url=site.url("/r1"), redirects=expected(site)[site.url("/r1")]["redirects"])
    same(both, site, links_in=False)

    fresh, whole = tmp_path / "fresh", tmp_path / "whole.csv"
    done = run(site.url("/"), *FAST, "--state", str(fresh), "--out", str(whole))
    assert done.returncode == 0, done.stderr
    assert "links_in" not in done.stderr
    same(from_csv(whole)[1], site)


def test_a_crawl_interrupted_leaves_links_in_null(site, tmp_path) -> None:
    """Ctrl-C: the pages in flight finish, the file is complete, links_in stays null (the
    count is of pages the crawl did not finish reading), and the crawl says so."""
    site.pages["/b"] = Slow(site.pages["/b"], 30.0)  # type: ignore[arg-type]
    out = tmp_path / "pages.jsonl"
    proc = subprocess.Popen([sys.executable, str(ROOT / "run.py"), site.url("/"), *FAST,
                             "--timeout", "1", "--out", str(out)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not any(r.path == "/b" for r in site.requests):  # (the page it waits for)
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert "links_in left null: the crawl was interrupted" in stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records and all(r["links_in"] is None for r in records)


def test_the_counts_wait_on_disk_not_in_memory(site, tmp_path, monkeypatch) -> None:
    """The library's crawl: counts go to the scratch file a few at a time (never more than a
    batch and a page's in memory), and the file is the same."""
    flushed: list[int] = []
    real = linksin.LinksIn._flush

    def flush(self):  # type: ignore[no-untyped-def]
        flushed.append(len(self._counts) + len(self._records))
        real(self)

    monkeypatch.setattr(linksin, "BATCH", 3)
    monkeypatch.setattr(linksin.LinksIn, "_flush", flush)
    out = tmp_path / "pages.jsonl"
    Crawler([site.url("/")], delay=0, threads=1, retries=0, out=str(out)).run()
    assert len(flushed) > 5 and max(flushed) < 3 + 6 + 3  # a batch, and one page's more
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    same(records, site)


def test_the_rewritten_file_keeps_its_mode_and_its_lines(site, tmp_path) -> None:
    """The file is replaced by one of the same lines in the same order, its permissions kept
    (a symlink's target replaced, the link kept)."""
    target = tmp_path / "real.jsonl"
    target.write_text("")
    os.chmod(target, 0o640)
    link = tmp_path / "pages.jsonl"
    link.symlink_to(target)
    done = run(site.url("/"), *FAST, "--out", str(link))
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and os.stat(target).st_mode & 0o777 == 0o640
    lines = target.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    same(records, site)
    assert [list(r) for r in records] == [list(records[0])] * len(records)  # field order
    assert not [p for p in tmp_path.iterdir() if p.name not in ("real.jsonl", "pages.jsonl")]


def test_a_recrawl_reads_the_facts_of_the_pages_that_changed(site, tmp_path) -> None:
    """A page unchanged in a recrawl is not read again: its HTML facts are null (its headers'
    are there); a page that changed has its new title. links_in: null, said why."""
    state = tmp_path / "state"
    assert run(site.url("/"), *FAST, "--state", str(state)).returncode == 0
    site.pages["/a"] = html("<title>A, new</title><p>changed</p>")
    out = tmp_path / "again.jsonl"
    done = run(site.url("/"), *FAST, "--state", str(state), "--recrawl", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "links_in left null: the state holds pages of earlier runs" in done.stderr
    records = {r["url"]: r for r in map(json.loads, out.read_text().splitlines())}
    a, b = records[site.url("/a")], records[site.url("/b")]
    assert (a["change"], a["title"], a["words"]) == ("changed", "A, new", 1)
    assert (b["change"], b["title"], b["words"]) == ("unchanged", None, None)
    assert (b["canonical"], b["lang"]) == (site.url("/b-canonical"), "de")
    assert all(r["links_in"] is None for r in records.values())


def test_the_facts_with_every_link_recorded_too(site, tmp_path) -> None:
    """--links asks the same walk for the edges: the facts are the same."""
    out, links = tmp_path / "pages.jsonl", tmp_path / "links.jsonl"
    done = run(site.url("/"), *FAST, "--out", str(out), "--links", str(links))
    assert done.returncode == 0, done.stderr
    same([json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()], site)
    edges = [json.loads(line) for line in links.read_text(encoding="utf-8").splitlines()]
    assert len([e for e in edges if e["page"] == site.url("/")]) == 8  # every <a>, the <link>


def test_a_csv_file_an_earlier_version_began_goes_on_in_its_columns(tmp_path) -> None:
    """A --out CSV file begun before the facts' columns existed (a state resumed by this
    version): the records go on in its own columns, one width a file, and a resume reads its
    last lines back."""
    old = [name for name in COLUMNS if name not in ("title", "description", "canonical",
                                                    "lang", "words", "links_in", "redirects")]
    path = tmp_path / "pages.csv"
    path.write_text(",".join(old) + "\n" + ",".join(["http://h/1"] + [""] * (len(old) - 2)
                                                   + ["1"]) + "\n")
    out = Output(str(path), continued=True)
    assert out.columns == tuple(old)
    page = CrawledPage("http://h/2", 0, None, "http://h/2", status=200)
    page.facts.title = "Two"
    out.write_lines([record_line(record(page), 2)])
    out.close()
    names, rows = from_csv(path)
    assert names == old and [r["url"] for r in rows] == ["http://h/1", "http://h/2"]
    assert "title" not in rows[1] and rows[1]["status"] == 200 and rows[1]["seq"] == 2
    assert keys_at_end(str(path), {("http://h/1", 1), ("http://h/2", 2)}) == \
        {("http://h/1", 1), ("http://h/2", 2)}
