"""``--links FILE``, run as a user runs it (``python run.py`` in a subprocess) on real local sites
with known links: every link of every page crawled — its page, href, text, element, attribute,
line, kind — joined with what its target answered (status, where its redirects ended, error,
broken). JSON lines, or CSV for a ``.csv`` name; ``--out FILE.csv`` is CSV too. Requisites and
links out of scope are recorded, never requested."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from minicrawl import Crawler
from minicrawl.demo.site import LocalSite, Resource, reset
from minicrawl.html import edges as html_edges
from minicrawl.records import broken as brokenlinks
from minicrawl.records import links as linkfile
from minicrawl.records.links import FIELDS
from minicrawl.records.output import COLUMNS, Output, keys_at_end

ROOT = Path(__file__).resolve().parent.parent
FAST = ["--delay", "0", "--threads", "1", "--retries", "0", "--quiet"]
REQUISITES = {"/style.css", "/favicon.ico", "/app.js", "/logo.png", "/home.png"}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def page(*lines: str) -> Resource:
    """A page whose line n is ``lines[n - 1]``."""
    return Resource("\n".join(lines).encode())


@pytest.fixture
def sites() -> Iterator[tuple[LocalSite, LocalSite]]:
    """(the site crawled, a site out of its scope on another host). The site's pages link to
    each other several times with different texts and on different lines; to a 404, redirects
    to a 404 and to a page, a chain with a link to its middle, a redirect loop, a chain of too
    many redirects, a connection reset, a URL robots.txt disallows, a nofollow link, the other
    site, a mailto; and load a stylesheet, an icon, a script and images (never requested)."""
    with LocalSite() as site, LocalSite(host="127.0.0.2") as other:
        site.pages.update({
            "/robots.txt": Resource(b"User-agent: *\nDisallow: /private/\n", 200,
                                    {"Content-Type": "text/plain"}),
            "/": page(
                "<!DOCTYPE html>",
                "<html><head><title>Home</title>",
                '<link rel="stylesheet" href="/style.css">',
                '<link rel="icon" href="/favicon.ico">',
                '<script src="/app.js"></script>',
                "</head><body>",
                '<p>Read <a href="/about">About us</a> and <a href="/docs/">the docs</a>.</p>',
                '<img src="/logo.png" alt="Our logo">',
                '<a href="/missing">A missing page</a>',
                '<a href="/gone">Gone</a>',
                '<a href="/old">Old address</a>',
                '<a href="/loop">Round and round</a>',
                '<a href="/hop/0">Far away</a>',
                '<a href="/reset">Resets</a>',
                '<a href="/private/x">Private</a>',
                '<a href="/nf" rel="nofollow">Not followed</a>',
                f'<a href="{other.origin}/partner">Partner site</a>',
                '<a href="mailto:info@example.org">Mail us</a>',
                '<a href="/moved">Moved</a> <a href="/moved-home">Moved home</a>',
                '<a href="/chain">A chain</a>',
                "</body></html>"),
            "/about": page(
                "<html><body>",
                "<h1>About</h1>",
                '<a href="/"><img src="/home.png" alt="Home icon"></a>',
                '<p>See <a href="/docs/#intro">  the',
                "   documentation </a></p>",
                '<a href="/missing">Broken, again</a>',
                "</body></html>"),
            "/docs/": page(
                '<html><body><a href="../about">About</a>',
                '<a href="/missing" title="t">Missing from the docs</a>',
                '<a href="/deep">Deeper</a></body></html>'),
            "/deep": page('<a href="/chain2">The middle of a chain</a>'),
            "/old": Resource(b"", 301, {"Location": "/gone"}),
            "/moved": Resource(b"", 308, {"Location": "/nowhere"}),
            "/moved-home": Resource(b"", 302, {"Location": "/about"}),
            "/chain": Resource(b"", 301, {"Location": "/chain2"}),
            "/chain2": Resource(b"", 301, {"Location": "/nowhere2"}),
            "/loop": Resource(b"", 302, {"Location": "/loop2"}),
            "/loop2": Resource(b"", 302, {"Location": "/loop"}),
            "/reset": reset(),
            "/nf": page("<p>never asked</p>"),
            "/private/x": page("<p>never asked</p>"),
            **{f"/hop/{n}": Resource(b"", 301, {"Location": f"/hop/{n + 1}"}) for n in range(15)},
            **{path: Resource(b"x", 200, {"Content-Type": "text/plain"}) for path in REQUISITES},
        })
        other.pages["/partner"] = page("<p>never asked</p>")
        yield site, other


def truth(site: LocalSite, other: LocalSite) -> list[dict[str, object]]:
    """Every record the --links file must hold, in FIELDS (nofollow apart), as the pages say."""
    o = site.origin

    def r(on: str, href: str, text: str, tag: str, attr: str, line: int, kind: str,
          url: str | None, status: int | None = None, final: str | None = None,
          error: str | None = None, broken: bool | None = None,
          nofollow: bool = False) -> dict[str, object]:
        return {"page": o + on, "url": url, "href": href, "text": text, "tag": tag,
                "attr": attr, "line": line, "kind": kind, "status": status,
                "final_url": final, "error": error, "broken": broken, "nofollow": nofollow,
                "warning": None}

    home, about, docs, missing = o + "/", o + "/about", o + "/docs/", o + "/missing"
    fine = {"status": 200, "broken": False}
    gone = {"status": 404, "error": "HTTP 404", "broken": True}
    return [
        r("/", "/style.css", "", "link", "href", 3, "requisite", o + "/style.css"),
        r("/", "/favicon.ico", "", "link", "href", 4, "requisite", o + "/favicon.ico"),
        r("/", "/app.js", "", "script", "src", 5, "requisite", o + "/app.js"),
        r("/", "/about", "About us", "a", "href", 7, "page", about, final=about, **fine),
        r("/", "/docs/", "the docs", "a", "href", 7, "page", docs, final=docs, **fine),
        r("/", "/logo.png", "Our logo", "img", "src", 8, "requisite", o + "/logo.png"),
        r("/", "/missing", "A missing page", "a", "href", 9, "page", missing, final=missing,
          **gone),
        r("/", "/gone", "Gone", "a", "href", 10, "page", o + "/gone", final=o + "/gone", **gone),
        # a redirect to a 404 (its target was crawled first, as a page of its own)
        r("/", "/old", "Old address", "a", "href", 11, "page", o + "/old", final=o + "/gone",
          **gone),
        r("/", "/loop", "Round and round", "a", "href", 12, "page", o + "/loop", status=302,
          final=o + "/loop", error="redirect loop", broken=True),
        r("/", "/hop/0", "Far away", "a", "href", 13, "page", o + "/hop/0", status=301,
          final=o + "/hop/11", error="more than 10 redirects", broken=True),
        r("/", "/reset", "Resets", "a", "href", 14, "page", o + "/reset", final=o + "/reset",
          error="RESET", broken=True),
        r("/", "/private/x", "Private", "a", "href", 15, "page", o + "/private/x",
          final=o + "/private/x", error="robots.txt disallows"),
        r("/", "/nf", "Not followed", "a", "href", 16, "page", o + "/nf", nofollow=True),
        r("/", f"{other.origin}/partner", "Partner site", "a", "href", 17, "external",
          other.origin + "/partner"),
        r("/", "mailto:info@example.org", "Mail us", "a", "href", 18, "page", None,
          error="not http(s)"),
        # a redirect to a 404 its chain went on to (no page of its own)
        r("/", "/moved", "Moved", "a", "href", 19, "page", o + "/moved", final=o + "/nowhere",
          **gone),
        # a redirect to a page crawled as a page of its own: fine
        r("/", "/moved-home", "Moved home", "a", "href", 19, "page", o + "/moved-home",
          final=about, **fine),
        r("/", "/chain", "A chain", "a", "href", 20, "page", o + "/chain",
          final=o + "/nowhere2", **gone),
        r("/about", "/", "Home icon", "a", "href", 3, "page", home, final=home, **fine),
        r("/about", "/home.png", "Home icon", "img", "src", 3, "requisite", o + "/home.png"),
        r("/about", "/docs/#intro", "the documentation", "a", "href", 4, "page", docs,
          final=docs, **fine),
        r("/about", "/missing", "Broken, again", "a", "href", 6, "page", missing,
          final=missing, **gone),
        r("/docs/", "../about", "About", "a", "href", 1, "page", about, final=about, **fine),
        r("/docs/", "/missing", "Missing from the docs", "a", "href", 2, "page", missing,
          final=missing, **gone),
        r("/docs/", "/deep", "Deeper", "a", "href", 3, "page", o + "/deep", final=o + "/deep",
          **fine),
        # a link to a hop of a chain started before its page was crawled: the chain's end
        r("/deep", "/chain2", "The middle of a chain", "a", "href", 1, "page", o + "/chain2",
          final=o + "/nowhere2", **gone),
    ]


def settled(records: list[dict[str, object]]) -> list[dict[str, object]]:
    """The records, the connection reset's error (the OS's words) as RESET, sorted."""
    for record in records:
        if str(record["href"]) == "/reset" and str(record["error"]).startswith(
                "ConnectionError"):
            record["error"] = "RESET"
    return sorted(records, key=lambda r: (str(r["page"]), int(r["line"] or 0),
                                          str(r["href"]), str(r["attr"])))


def from_csv(path: Path) -> tuple[list[str], list[dict[str, object]]]:
    """(the header, the records with JSON's types back: "" is null, true/false, numbers)."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    typed = []
    for row in rows[1:]:
        record: dict[str, object] = dict(zip(rows[0], row, strict=True))
        for name, value in record.items():
            if value == "":
                record[name] = "" if name in ("text", "href") else None
            elif value in ("true", "false"):
                record[name] = value == "true"
            elif name in ("line", "status", "seq", "depth", "bytes", "links", "new", "words",
                          "links_in"):
                record[name] = int(value)
            elif name == "redirects":
                record[name] = json.loads(value)
            elif name == "elapsed_ms":
                record[name] = float(value)
        typed.append(record)
    return rows[0], typed


def crawl(site: LocalSite, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = run(site.url("/"), *FAST, *args)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done


def test_every_edge_with_its_line_text_element_kind_and_target(sites, tmp_path) -> None:
    site, other = sites
    crawl(site, tmp_path, "--links", str(tmp_path / "links.jsonl"))
    lines = (tmp_path / "links.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert all(list(record) == list(FIELDS) for record in records)
    assert settled(records) == settled(truth(site, other))
    # each page's edges in document order
    for on in ("/", "/about", "/docs/", "/deep"):
        mine = [r["line"] for r in records if r["page"] == site.origin + on]
        assert mine == sorted(mine)
    # requisites, external links, nofollow and robots.txt's: recorded, never requested
    asked = set(site.fetch_counts())
    assert not asked & (REQUISITES | {"/nf", "/private/x"}), asked
    assert not other.requests


def test_the_csv_file_holds_the_same_records(sites, tmp_path) -> None:
    site, other = sites
    crawl(site, tmp_path, "--links", str(tmp_path / "links.CSV"))
    names, records = from_csv(tmp_path / "links.CSV")
    assert names == list(FIELDS)
    assert settled(records) == settled(truth(site, other))


def test_out_csv_is_csv(sites, tmp_path) -> None:
    """--out x.csv: a header and one CSV line per page, the JSON line's values (it wrote JSON
    lines before); --out x.jsonl as before."""
    site, _ = sites
    crawl(site, tmp_path, "--out", str(tmp_path / "pages.csv"))
    crawl(site, tmp_path, "--out", str(tmp_path / "pages.jsonl"))
    assert (tmp_path / "pages.csv").read_text().startswith("url,final_url,status,")
    names, rows = from_csv(tmp_path / "pages.csv")
    assert names == list(COLUMNS)
    pages = [json.loads(line) for line in (tmp_path / "pages.jsonl").read_text().splitlines()]
    by_url = {p["url"]: {"sitemap": False, "noindex": False, "check": False, **p} for p in pages}
    assert len(rows) == len(by_url) > 10
    for row in rows:
        expected = by_url[row["url"]]
        different = {name for name in COLUMNS if row[name] != expected[name]}
        assert different <= {"elapsed_ms", "fetched_at"}, (row, expected)
    reset = next(r for r in rows if str(r["url"]).endswith("/reset"))
    assert str(reset["error"]).startswith("ConnectionError")  # a comma, quotes: one field


def test_out_csv_resumed_with_a_state_is_one_csv_file(sites, tmp_path) -> None:
    """With --state the lines come from the state's outbox (JSON lines), written to a CSV
    file as CSV lines; a resumed crawl appends, without a second header."""
    site, _ = sites
    state, out = tmp_path / "state", tmp_path / "pages.csv"
    crawl(site, tmp_path, "--state", str(state), "--out", str(out), "--max-pages", "3")
    crawl(site, tmp_path, "--state", str(state), "--out", str(out))
    names, rows = from_csv(out)
    assert names == list(COLUMNS)
    assert out.read_text().count("url,final_url,") == 1
    seqs = [r["seq"] for r in rows]
    assert all(isinstance(seq, int) for seq in seqs) and seqs == sorted(seqs)  # type: ignore
    assert len({r["url"] for r in rows}) == len(rows) > 3


def test_the_links_wait_on_disk_not_in_memory(sites, tmp_path, monkeypatch) -> None:
    """The library's crawl with --links: the rows go to the scratch file as they come (a few
    at a time here), and the file is the same."""
    site, other = sites
    flushed: list[int] = []
    real = linkfile.LinkJoin._flush

    def flush(self):  # type: ignore[no-untyped-def]
        flushed.append(self._waiting)
        real(self)

    monkeypatch.setattr(linkfile, "BATCH", 4)
    monkeypatch.setattr(linkfile.LinkJoin, "_flush", flush)
    path = tmp_path / "links.jsonl"
    Crawler([site.url("/")], delay=0, threads=1, retries=0, links=str(path)).run()
    assert len(flushed) > 5 and max(flushed) < 4 + 20  # a batch, and at most one page more
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert settled(records) == settled(truth(site, other))


@pytest.mark.parametrize(("args", "says"), [
    (["--links", "{seeds}"], "--links '{seeds}' is the seed file"),
    (["--links", "{notes}"], "--links '{notes}' exists and is not a JSON-lines or CSV --links"),
    (["--links", "{out}", "--out", "{out}"], "--out and --links both name"),
    (["--links", "-", "--out", "-"], "--out and --links both write to standard output"),
    (["--links", "{tmp}/no/such/folder/l.jsonl"], "folder"),
    (["--links", ""], "--links must not be empty"),
])
def test_wrong_links_paths_are_refused_before_the_crawl(tmp_path, args, says) -> None:
    site = LocalSite().start()
    try:
        seeds, notes = tmp_path / "seeds.txt", tmp_path / "notes.txt"
        seeds.write_text(site.url("/") + "\n")
        notes.write_text("my notes\n")
        fill = {"seeds": str(seeds), "notes": str(notes), "out": str(tmp_path / "o.jsonl"),
                "tmp": str(tmp_path)}
        done = run(str(seeds), *FAST, *(a.format(**fill) for a in args))
        assert done.returncode == 2, done.stderr
        assert says.format(**fill) in done.stderr
        assert not site.requests
        assert notes.read_text() == "my notes\n"
    finally:
        site.stop()


def test_links_to_standard_output_moves_the_summary_to_stderr(sites, tmp_path) -> None:
    site, other = sites
    done = run(site.url("/"), "--delay", "0", "--threads", "1", "--retries", "0",
               "--links", "-")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert settled(records) == settled(truth(site, other))
    assert "pages" in done.stderr


def test_a_crawl_without_links_records_no_edges(sites, tmp_path, monkeypatch) -> None:
    """The default crawl pays nothing: no walk of it is an EdgeWalk, and no edge is made."""
    site, _ = sites
    made: list[object] = []
    real = html_edges.EdgeWalk.__init__

    def spy(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        made.append(self)
        real(self, *args, **kwargs)

    monkeypatch.setattr(html_edges.EdgeWalk, "__init__", spy)
    Crawler([site.url("/")], delay=0, threads=1, retries=0,
            out=str(tmp_path / "out.jsonl")).run()
    assert made == []
    Crawler([site.url("/")], delay=0, threads=1, retries=0,
            links=str(tmp_path / "links.jsonl")).run()
    assert len(made) == 4  # /, /about, /docs/, /deep


def test_the_end_of_a_csv_out_file_is_read_back(tmp_path) -> None:
    """A resume reads the last lines of the last run's --out file to know which of the state's
    records reached it (with a kill -9 between a commit and its line): of a CSV file too."""
    path = tmp_path / "pages.csv"
    out = Output(path)
    record = {"url": "http://h/a", "final_url": "http://h/a", "status": 200, "depth": 0,
              "referrer": None, "content_type": "text/html", "bytes": 3, "links": 0, "new": 0,
              "elapsed_ms": 1.0, "fetched_at": "t", "error": "x, \"y\"\nz", "change": None,
              "saved": None, "duplicate_of": None}
    out.write_lines([json.dumps({**record, "url": f"http://h/{n}", "seq": n}) for n in (1, 2)])
    out.close()
    with open(path, "a") as f:
        f.write("http://h/3,http://h/3,20")  # torn by a kill -9
    assert keys_at_end(str(path), {("http://h/1", 1), ("http://h/2", 2), ("http://h/3", 3)}) \
        == {("http://h/1", 1), ("http://h/2", 2)}
    names, rows = from_csv(path)
    assert names == list(COLUMNS) and [r["seq"] for r in rows] == [1, 2]
    assert rows[0]["error"] == 'x, "y" z'  # one line a record


def grouped(records: list[dict[str, object]]) -> list[tuple[tuple[object, ...], list[tuple]]]:
    """The broken records as the join's broken-link reader groups them: by target URL (with
    its status, error, final URL), each target's referrers by page, then line."""
    by_url: dict[str, list[dict[str, object]]] = {}
    for record in records:
        if record["broken"]:
            by_url.setdefault(str(record["url"]), []).append(record)
    return [((url, rows[0]["status"], rows[0]["error"], rows[0]["final_url"]),
             sorted((r["page"], r["line"], r["text"], r["tag"], r["attr"], r["href"], r["kind"])
                    for r in rows))
            for url, rows in sorted(by_url.items())]


def test_one_join_read_by_the_file_and_the_broken_links(sites, tmp_path, monkeypatch) -> None:
    """The join's one pass feeds the --links file and the broken-link reader alike: the reader
    holds every broken link of the truth, grouped by target, every referrer with its line and
    text, and counts what it was handed; its rows wait on disk, a few at a time."""
    site, other = sites
    flushed: list[int] = []
    real = brokenlinks.BrokenLinks._flush

    def flush(self):  # type: ignore[no-untyped-def]
        flushed.append(len(self._rows))
        real(self)

    monkeypatch.setattr(brokenlinks, "BATCH", 2)
    monkeypatch.setattr(brokenlinks.BrokenLinks, "_flush", flush)
    path = tmp_path / "links.jsonl"
    crawler = Crawler([site.url("/")], delay=0, threads=1, retries=0, links=str(path))
    crawler.run()
    records = settled([json.loads(line) for line in path.read_text().splitlines()])
    expected = settled(truth(site, other))
    assert records == expected
    broken = crawler.broken_links
    assert broken is not None and broken.complete and not broken.failed
    found = [(tuple(target), [tuple(r) for r in referrers])
             for target, referrers in broken.groups()]
    for target, _ in found:  # the OS's words for the reset, as settled() says them
        if str(target[0]).endswith("/reset"):
            assert str(target[2]).startswith("ConnectionError")
    found = [((t[0], t[1], "RESET" if str(t[0]).endswith("/reset") else t[2], t[3]), refs)
             for t, refs in found]
    assert found == grouped(expected)
    assert len(found) == 9 and sum(len(refs) for _, refs in found) == 11
    counts = broken.counts
    assert (counts.links, counts.pages, counts.broken, counts.broken_pages, counts.targets,
            counts.seeds) == (len(expected), 4, 11, 4, 9, 0)
    assert counts.unchecked == sum(r["broken"] is None for r in expected) == 9
    assert flushed and max(flushed) <= 2 and sum(flushed) == 11  # never all in memory
    broken.close()
    assert list(broken.groups()) == []


def test_a_rules_refusal_travels_with_its_page(tmp_path) -> None:
    """The join reads a refusal from the refused page itself (its error, no status): a link to a
    URL robots.txt disallows, or a host cap or the page cap kept, is not checked (broken null)
    even when no ``refused`` event came before the page, or one came from another worker; a URL
    whose robots.txt was unreachable is a failure (broken)."""
    from minicrawl.page import CrawledPage
    from minicrawl.records.edges import LinkEdge
    from minicrawl.records.links import LinkJoin, LinkReader, LinkRow
    from minicrawl.visit.robots import CAPPED_CHAIN, DISALLOWED, HOST_FULL

    class Rows(LinkReader):
        def __init__(self) -> None:
            self.rows: list[LinkRow] = []

        def take(self, row: LinkRow) -> None:
            self.rows.append(row)

    site = "http://example.test/"
    reasons = {f"{site}{n}": why for n, why in enumerate(
        (DISALLOWED, HOST_FULL, CAPPED_CHAIN, "robots.txt unreachable: HTTP 500"))}
    rows = Rows()
    join = LinkJoin(readers=[rows], temp_dir=str(tmp_path))
    join.crawl_started()
    home = CrawledPage(site, 0, None, site, status=200, worker=1)
    join.page_edges(home, [LinkEdge(site, url, None, url, "", "a", "href", 1, "page", False)
                           for url in reasons])
    join.on_page(home)
    join.refused(1, site + "elsewhere", DISALLOWED, "robots_disallowed")  # not these pages'
    for url, why in reasons.items():  # (worker 2 told no refusal before them)
        join.on_page(CrawledPage(url, 1, site, url, error=why, worker=2))
    join.join()
    broken = (None, None, None, True)  # not checked (a rule's), not checked, not checked, broken
    assert {row.url: row.broken for row in rows.rows} == dict(zip(reasons, broken, strict=True))


def test_a_damaged_row_of_the_scratch_file_is_skipped_and_counted(tmp_path, caplog) -> None:
    """The join reads its scratch file's edges and anchors back as it reads the state's: one
    damaged there (a disk's fault: this process wrote it) is skipped, counted in one line — the
    other pages' rows are joined as ever, the page whose anchors are damaged has none known."""
    from minicrawl.page import CrawledPage
    from minicrawl.records.edges import Damaged, LinkEdge
    from minicrawl.records.links import LinkJoin

    site = "http://example.test/"
    damaged = Damaged()
    join = LinkJoin(str(tmp_path / "links.jsonl"), temp_dir=str(tmp_path), damaged=damaged)
    join.crawl_started()
    for path, links in (("", ["a#x", "b#x"]), ("a", [""]), ("b", [""])):
        page = CrawledPage(site + path, 0, None, site + path, status=200, worker=1)
        join.page_edges(page, [LinkEdge(page.url, site + href.partition("#")[0], None, href,
                                        "", "a", "href", 1, "page", False) for href in links])
        join.page_anchors(page, frozenset({"elsewhere"}))
        join.on_page(page)
    with join._lock:  # (the rows into the file now, to damage them there)
        join._flush()
    db = join._scratch.db()
    db.execute("UPDATE pages SET edges = '[[1, 2]]' WHERE url = ?", (site + "a",))
    db.execute("UPDATE anchors SET names = '{\"x\": 1}' WHERE url = ?", (site + "b",))
    join.join()
    rows = [json.loads(line) for line in (tmp_path / "links.jsonl").read_text().splitlines()]
    assert [(r["page"], r["href"], r["warning"]) for r in rows] == [
        (site, "a#x", "fragment #x not found"), (site, "b#x", None),  # (b's: not known)
        (site + "b", "", None)]
    assert damaged.count("pages.edges", "anchors.names") == 2
    with caplog.at_level("WARNING", logger="minicrawl"):
        damaged.tell()
    said = [r.getMessage() for r in caplog.records if "damaged value" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("2 damaged values skipped — the links' "), said
    assert "1 in anchors.names" in said[0] and "1 in pages.edges" in said[0]
