"""``--check-links``, run as a user runs it (``python run.py`` in a subprocess) on a real local
site and a site out of its scope: what the pages lead to but the crawl does not follow — images,
scripts, stylesheets, links out, nofollow links, a ``<noscript>``'s — is checked once each and
never crawled: HEAD off the site (GET where HEAD fails), GET on it. The ``--links`` file says
which are broken, with every page linking to each; the servers' logs say what was asked."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from minicrawl.demo.site import LocalSite, Request, Resource, reset

ROOT = Path(__file__).resolve().parent.parent
FAST = ["--delay", "0", "--retries", "0", "--quiet"]
PNG = {"Content-Type": "image/png"}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def no_head(request: Request) -> Resource:
    """A server that refuses HEAD (405), fine for a GET."""
    return Resource(b"", 405) if request.method == "HEAD" else Resource(b"fine")


def head_lies(request: Request) -> Resource:
    """A server whose HEAD says 404 where a GET finds the page."""
    return Resource(b"", 404) if request.method == "HEAD" else Resource(b"here after all")


@pytest.fixture
def sites() -> Iterator[tuple[LocalSite, LocalSite, str]]:
    """(the site, a site out of its scope, a dead URL out of it)."""
    dead = f"http://127.0.0.1:{closed_port()}/x"
    with LocalSite() as site, LocalSite(host="127.0.0.2") as other:
        out = other.origin
        other.pages.update({
            "/ok": Resource(b"ok"), "/nohead": no_head, "/headlies": head_lies,
            "/moved": Resource(status=301, headers={"Location": "/gone"}),
            "/loop1": Resource(status=302, headers={"Location": "/loop2"}),
            "/loop2": Resource(status=302, headers={"Location": "/loop1"}),
            "/pic.png": Resource(b"PNG", 200, PNG),
        })
        site.pages.update({
            "/": Resource("\n".join([
                "<html><head>",
                '<link rel="stylesheet" href="/s.css"><script src="/missing.js"></script>',
                "</head><body>",
                '<a href="/a.html">A</a> <img src="/logo.png" alt="Logo">',
                '<img src="/broken.png" alt="Broken picture">',
                f'<a href="{out}/ok">ok out</a> <a href="{out}/gone">gone out</a>',
                f'<a href="{out}/nohead">no HEAD</a> <a href="{out}/headlies">HEAD lies</a>',
                f'<a href="{out}/moved">moved out</a> <a href="{out}/loop1">loop out</a>',
                f'<a href="{dead}">dead host</a> <img src="{out}/pic.png" alt="their picture">',
                '<a rel="nofollow" href="/login">log in</a> <a rel=nofollow href="/nf">nf</a>',
                '<noscript><img src="/ns-missing.png" alt="no script"></noscript>',
                '<a href="/a.html#there">there</a> <a href="/a.html#nowhere">nowhere</a>',
                '<a href="a.html#caf%C3%A9">café</a> <a href="/a.html#TOP">top</a> '
                '<a href="/a.html#old-anchor">old</a> <a href="#">this page</a>',
                "</body></html>"]).encode()),
            "/a.html": Resource('<link rel=stylesheet href=/s.css><a href="/">home</a> '
                                '<a href="/login">log in</a> <h2 id="there">There</h2>'
                                '<p id="café">Café</p><a name="old-anchor">x</a>\n'
                                '<img src="/logo.png"> <img src="/broken.png" alt="again">'
                                .encode()),
            "/login": Resource(b'<a href="/secret">secret</a>'),
            "/secret": Resource(b"secret"),
            "/nf": Resource(b'<a href="/never">never</a>'),
            "/s.css": Resource(b'body { background: url(bg.png) }\n'
                               b'/* url(/commented.png) */ p { background: url("/nobg.png") }\n'
                               b'@import "missing.css";', 200,
                               {"Content-Type": "text/css; charset=utf-8"}),
            "/bg.png": Resource(b"PNG", 200, PNG),
            "/logo.png": Resource(b"PNG", 200, PNG),
        })
        yield site, other, dead


def asked(site: LocalSite) -> Counter[tuple[str, str]]:
    return Counter((r.method, r.path) for r in site.requests if r.path != "/robots.txt")


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_what_the_pages_lead_to_is_checked_once_never_crawled(sites, tmp_path) -> None:
    site, other, dead = sites
    links, out = tmp_path / "links.jsonl", tmp_path / "pages.jsonl"
    done = run(site.url("/"), "--check-links", "--links", str(links), "--out", str(out), *FAST)
    assert "Traceback" not in done.stderr
    o, s = other.origin, site.origin
    broken = {(r["page"].removeprefix(s), r["href"].removeprefix(s), r["line"])
              for r in records(links) if r["broken"]}
    assert broken == {
        ("/", "/missing.js", 2), ("/", "/broken.png", 5), ("/a.html", "/broken.png", 2),
        ("/", f"{o}/gone", 6), ("/", f"{o}/moved", 8), ("/", f"{o}/loop1", 8),
        ("/", dead, 9), ("/", "/ns-missing.png", 11),
        # what a stylesheet loads: against the stylesheet and its line, once (two pages use it)
        ("/s.css", "/nobg.png", 2), ("/s.css", "missing.css", 3)}
    warned = {(r["page"].removeprefix(s), r["href"], r["line"], r["warning"])
              for r in records(links) if r["warning"]}
    assert warned == {("/", "/a.html#nowhere", 12, "fragment #nowhere not found")}
    nowhere = next(r for r in records(links) if r["href"] == "/a.html#nowhere")
    assert nowhere["broken"] is False and nowhere["status"] == 200
    fine = {r["href"] for r in records(links) if r["broken"] is False}
    assert {f"{o}/ok", f"{o}/nohead", f"{o}/headlies", f"{o}/pic.png", "/logo.png", "/s.css",
            "/login", "/nf", "/a.html", "bg.png"} <= fine
    assert ("GET", "/commented.png") not in asked(site)
    # Off the site: HEAD, once each; a GET only where the HEAD failed (a 4xx), once
    assert asked(other) == Counter({
        ("HEAD", "/ok"): 1, ("HEAD", "/pic.png"): 1,
        ("HEAD", "/nohead"): 1, ("GET", "/nohead"): 1,
        ("HEAD", "/headlies"): 1, ("GET", "/headlies"): 1,
        ("HEAD", "/gone"): 1, ("GET", "/gone"): 1,
        ("HEAD", "/moved"): 1, ("HEAD", "/loop1"): 1, ("HEAD", "/loop2"): 1})
    # On it: GET, each once — a URL checked for a nofollow link and crawled for a followed one
    # is asked twice (/login); one only ever nofollow is checked, its links never followed
    mine = asked(site)
    assert {key: n for key, n in mine.items() if n != 1} == {("GET", "/login"): 2}
    assert ("GET", "/never") not in mine and ("GET", "/ns-missing.png") in mine
    assert all(method == "GET" for method, _ in mine)
    # --out: a check's record says so; the pages are the crawled ones
    checks = {r["url"].removeprefix(s) for r in records(out) if r.get("check")}
    crawled = {r["url"].removeprefix(s) for r in records(out) if not r.get("check")}
    assert crawled == {"/", "/a.html", "/login", "/secret"}
    assert {"/logo.png", "/broken.png", "/missing.js", "/s.css", "/login", "/nf",
            "/ns-missing.png", f"{o}/ok", dead} <= checks


def test_without_check_links_nothing_but_pages_is_asked(sites, tmp_path) -> None:
    site, other, _ = sites
    run(site.url("/"), *FAST)
    assert other.requests == []
    assert {path for _, path in asked(site)} == {"/", "/a.html", "/login", "/secret"}


def test_links_past_max_depth_are_checked_not_crawled(sites, tmp_path) -> None:
    site, _, _ = sites
    links = tmp_path / "links.jsonl"
    run(site.url("/"), "--check-links", "--max-depth", "0", "--links", str(links), *FAST)
    mine = asked(site)
    assert mine[("GET", "/a.html")] == 1  # checked: its links are not followed
    assert ("GET", "/secret") not in mine
    assert {r["href"] for r in records(links) if r["href"] == "/a.html"} == {"/a.html"}
    assert {r["page"] for r in records(links)} == {site.url("/"), site.url("/s.css")}


def test_check_links_with_redis_is_refused_in_one_line(sites, tmp_path) -> None:
    # (with --state it works: tests/test_state_links.py)
    site, _, _ = sites
    done = run(site.url("/"), "--check-links", "--redis", "redis://127.0.0.1:1/0", *FAST)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--check-links does not work with --redis" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert site.requests == []


def test_a_check_is_saved_only_with_a_body_and_a_big_one_is_no_problem(sites, tmp_path) -> None:
    # --save-pages keeps what a GET brought (a stylesheet, an image of the site), never an
    # empty file for a HEAD off the site; a check's body over --max-bytes is cut but the link
    # is fine: its status is all a check asks.
    site, other, _ = sites
    site.pages["/huge.png"] = Resource(b"P" * 5000, 200, PNG)
    site.pages["/a.html"] = Resource(b'<img src="/huge.png"> <a href="/">home</a>')
    saved, stats, links = tmp_path / "saved", tmp_path / "stats.json", tmp_path / "l.jsonl"
    run(site.url("/"), "--check-links", "--save-pages", str(saved), "--stats", str(stats),
        "--links", str(links), "--max-bytes", "4096", *FAST)
    files = {str(p.relative_to(saved)) for p in saved.rglob("*") if p.is_file()}
    mine = f"127.0.0.1:{site.port}"  # (named as --mirror names them: host:port)
    assert {f"{mine}/s.css", f"{mine}/logo.png", f"{mine}/index.html"} <= files
    assert not any(name.startswith("127.0.0.2") for name in files)  # HEADs: nothing to keep
    assert f"{mine}/huge.png" not in files  # cut short: not a copy
    huge = [r for r in records(links) if r["href"] == "/huge.png"]
    assert huge and all(r["broken"] is False and r["status"] == 200 for r in huge)
    numbers = json.loads(stats.read_text())
    assert numbers["checked"] > 10 and numbers["pages"] == 2
    assert not any("max_bytes" in name or "large" in name for name in numbers), numbers


def test_exclude_keeps_a_url_from_being_checked_too(sites, tmp_path) -> None:
    # --exclude is the user's word that a URL is never requested: not as a page, not as a check
    # (a flaky host, a logout link, an offline run); its links are recorded, never fetched.
    site, other, _ = sites
    links = tmp_path / "links.jsonl"
    run(site.url("/"), "--check-links", "--exclude", r"/gone$|broken\.png|127\.0\.0\.2.*/ok",
        "--links", str(links), *FAST)
    assert ("GET", "/broken.png") not in asked(site)
    assert not {path for _, path in asked(other)} & {"/gone", "/ok"}
    assert ("HEAD", "/nohead") in asked(other)
    left = {r["href"].rpartition("/")[2]: r["broken"] for r in records(links)
            if r["href"].endswith(("/gone", "broken.png", "/ok"))}
    assert left == {"gone": None, "broken.png": None, "ok": None}


def test_a_head_link_to_a_page_is_checked_with_every_page_it_is_on(tmp_path) -> None:
    """A <link> with a hyperlink's rel (search, copyright, author… as Sphinx writes in every
    page's head), not followed, is a link of each page all the same: checked once, reported
    against every page it is on, its line and title; a hint (preconnect) is no link."""
    head = ('<link rel="search" title="Search" href="/search.html">\n'
            '<link rel="copyright" title="Copyright" href="/copyright.html">\n'
            '<link rel="author" href="/about.html"><link rel="preconnect" href="/hint/">\n')
    with LocalSite({
        "/": Resource(f'<html><head>\n{head}</head><body><a href="/a.html">A</a>'.encode()),
        "/a.html": Resource(f"<head>{head}</head>".encode()),
        "/copyright.html": Resource(b"(c)"), "/about.html": Resource(b"about"),
    }) as site:
        links = tmp_path / "links.jsonl"
        done = run(site.url("/"), "--check-links", "--links", str(links), *FAST)
        assert "Traceback" not in done.stderr
        got = {(r["page"].removeprefix(site.origin), r["href"], r["tag"], r["line"], r["text"],
                r["broken"]) for r in records(links) if r["tag"] == "link"}
        assert got == {
            ("/", "/search.html", "link", 2, "Search", True),
            ("/", "/copyright.html", "link", 3, "Copyright", False),
            ("/", "/about.html", "link", 4, "", False),
            ("/a.html", "/search.html", "link", 1, "Search", True),
            ("/a.html", "/copyright.html", "link", 2, "Copyright", False),
            ("/a.html", "/about.html", "link", 3, "", False)}
        mine = asked(site)
        assert mine[("GET", "/search.html")] == 1 and mine[("GET", "/copyright.html")] == 1
        assert not any(path.startswith("/hint") for _, path in mine)


def test_a_missing_fragment_is_a_warning_that_fails_only_with_fail_on_warnings(tmp_path) -> None:
    with LocalSite({"/": Resource(b'<a href="/a.html#here">ok</a> <a href="/a.html#gone">x</a>'),
                    "/a.html": Resource(b'<h1 id="here">Here</h1>')}) as site:
        links = tmp_path / "links.jsonl"
        plain = run(site.url("/"), "--check-links", "--links", str(links), *FAST)
        assert plain.returncode == 0, plain.stdout + plain.stderr
        assert [r["warning"] for r in records(links)] == [None, "fragment #gone not found"]
        assert all(r["broken"] is False for r in records(links))
        strict = run(site.url("/"), "--check-links", "--fail-on", "warnings", *FAST)
        assert strict.returncode == 1 and "Traceback" not in strict.stderr


def test_the_warnings_are_printed_after_the_broken_links_with_every_referrer(tmp_path) -> None:
    """What fails a CI job with --fail-on warnings is printed, as the broken links are: the
    URL with its #fragment, every page linking to it with its line and text (escaped, cut),
    under a headline that counts them; with --quiet too when they fail the job."""
    evil = "x\x1b[31m" + "y" * 200
    with LocalSite({
            "/": Resource(f'<a href="/a.html#here">ok</a>\n<a href="/a.html#gone">{evil}</a>'
                          .encode()),
            "/b.html": Resource(b'<p>b</p>\n\n<a href="a.html#gone">Again</a>'),
            "/a.html": Resource(b'<h1 id="here">Here</h1> <a href="/b.html">b</a>')}) as site:
        s = site.origin
        for extra in ([], ["--quiet"]):
            strict = run(site.url("/"), "--check-links", "--fail-on", "warnings", *FAST[:-1],
                         *extra)
            assert strict.returncode == 1, strict.stdout + strict.stderr
            lines = strict.stdout.splitlines()
            at = lines.index("Warnings: 1 #fragment not found, linked 2 times from 2 pages")
            assert lines[0].startswith("Broken links: none (")
            assert lines[at + 1:at + 4] == [
                f"200  {s}/a.html#gone  (fragment #gone not found)",
                f'     {s}/  line 2  "x\\x1b[31m{"y" * 53}…"  <a href="/a.html#gone">',
                f'     {s}/b.html  line 3  "Again"  <a href="a.html#gone">']
            assert "\x1b" not in strict.stdout
            if not extra:
                assert "2 warnings (a #fragment not found), listed above: exit status 1 " \
                    "(--fail-on warnings)" in strict.stdout
        plain = run(site.url("/"), "--check-links", *FAST[:-1])  # listed, and no failure
        assert plain.returncode == 0, plain.stdout + plain.stderr
        assert f"200  {s}/a.html#gone  (fragment #gone not found)" in plain.stdout
        quiet = run(site.url("/"), "--check-links", *FAST)  # nothing fails: nothing said
        assert quiet.returncode == 0 and quiet.stdout == ""


def test_at_max_pages_the_checks_found_are_still_asked(tmp_path) -> None:
    """--max-pages caps pages, not checks: once it is reached the pages left in ToDo are not
    fetched (and said to be left), but every image the fetched pages hold is still checked —
    a broken one among them too. Before, ToDo stopped with the checks in it: never asked."""
    with LocalSite() as site:
        chain = [f"/p{n}" for n in range(8)]
        for n, path in enumerate(chain):  # each page: the next, and an image of its own
            following = f'<a href="{chain[n + 1]}">next</a>' if n + 1 < len(chain) else ""
            site.pages[path] = Resource(f'{following} <img src="/i{n}.png" alt="i{n}">'
                                        f' <a href="/x{n}">x</a>'.encode())
            if n != 1:  # /i1.png is missing: broken
                site.pages[f"/i{n}.png"] = Resource(b"PNG", 200, PNG)
        for n in range(8):
            site.pages[f"/x{n}"] = Resource(b"<p>a leaf</p>")
        links = tmp_path / "links.jsonl"
        done = run(site.url("/p0"), "--check-links", "--links", str(links), "--max-pages", "3",
                   "--delay", "0", "--retries", "0", "--threads", "1")
        got = asked(site)
        broken = {r["url"].removeprefix(site.origin) for r in records(links) if r["broken"]}
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    pages = {path for method, path in got if not path.endswith(".png")}
    assert len(pages) == 3 and {"/p0", "/p1"} <= pages  # the cap (breadth first: p0, p1, …)
    fetched = {p for p in pages if p.startswith("/p")}
    images = {path for method, path in got if path.endswith(".png")}
    assert images == {f"/i{p[2:]}.png" for p in fetched}  # each fetched page's, each once
    assert all(n == 1 for n in got.values())
    assert broken == {"/i1.png"}
    assert re.search(r"; \d+ left in ToDo", done.stdout + done.stderr)


def test_a_dead_host_costs_a_few_requests_not_three_a_link(tmp_path) -> None:
    """A host nothing listens on, linked 30 times (robots.txt not read, so nothing learns it
    first): each of its links is broken, with why, but after the first tries fail in a row (a
    backoff between them, the host quiet meanwhile) the rest are not asked; before, 30 × 3.
    A page that resets its connection is no dead host: the site's other pages are crawled."""
    dead = f"http://127.0.0.1:{closed_port()}"
    with LocalSite() as site:
        site.pages["/"] = Resource(" ".join(
            [f'<a href="{dead}/n{i}">n{i}</a>' for i in range(30)]
            + [f'<a href="/r{i}">r</a> <a href="/p{i}">p</a>' for i in range(5)]).encode())
        site.pages.update({f"/r{i}": reset() for i in range(5)})
        site.pages.update({f"/p{i}": Resource(b"<p>fine</p>") for i in range(5)})
        links, stats = tmp_path / "links.jsonl", tmp_path / "stats.json"
        done = run(site.url("/"), "--check-links", "--links", str(links), "--stats", str(stats),
                   "--ignore-robots", "--delay", "0", "--retries", "2", "--retry-backoff", "0.1",
                   "--quiet")
        site_requests, origin = len(site.requests), site.origin
        rows = {r["url"]: r for r in records(links)}
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    counts = json.loads(stats.read_text())
    dead_requests = counts["requests"] - site_requests
    assert 3 <= dead_requests <= 10, dead_requests
    assert all(rows[f"{dead}/n{i}"]["broken"] for i in range(30))
    errors = {rows[f"{dead}/n{i}"]["error"] for i in range(30)}
    assert errors <= {"ConnectionError: [Errno 111] Connection refused (gave up after 3 attempts)",
                      "host unreachable: ConnectionError: [Errno 111] Connection refused "
                      "(3 tries in a row)"}, errors
    assert counts["host_unreachable"] >= 20
    assert all(rows[f"{origin}/p{i}"]["broken"] is False for i in range(5))
    assert all(rows[f"{origin}/r{i}"]["broken"] for i in range(5))
