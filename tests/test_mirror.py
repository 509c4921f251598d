"""--mirror DIR as a user runs it (`python run.py URL --mirror DIR`) against a real local site
(tests/mirrorsite.py): every page and requisite written once, nothing outside DIR, every link to
a saved URL leading to an existing file, the bytes changed only where a URL was."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

import lxml.html
import pytest
from mirrorsite import HOSTILE, LONG, fill

from minicrawl.core.urls import canonicalize
from minicrawl.demo.site import LocalSite, Resource
from minicrawl.html.css import css_links
from minicrawl.mirror.saver import MANIFEST

ROOT = Path(__file__).resolve().parent.parent
FAST = ["--delay", "0", "--threads", "4", "--retries", "0", "--quiet"]


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def tree(top: Path) -> set[str]:
    """Every file, folder and link under ``top`` (relative), symlinks not followed."""
    found = set()
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            found.add(str(Path(folder, name).relative_to(top)))
    return found


@pytest.fixture
def sites() -> Iterator[tuple[LocalSite, LocalSite]]:
    with LocalSite() as site, LocalSite(host="127.0.0.2") as cdn:
        fill(site, cdn)
        yield site, cdn


def manifest(mirror: Path) -> list[dict[str, object]]:
    """The table's lines that name a URL's file (not those saying one was rewritten, deleted)."""
    lines = [json.loads(line) for line in (mirror / MANIFEST).read_text().splitlines()]
    return [line for line in lines if "path" in line]


def saved_urls(mirror: Path) -> dict[str, str]:
    """URL → file (relative to the mirror) of every URL that leads to a file."""
    return {str(e["url"]): str(e["path"]) for e in manifest(mirror)}


def links_leading_to_files(mirror: Path, pages: list[Path]) -> int:
    """How many links ``pages`` hold, each asserted to lead to a file the mirror saved."""
    saved = set(saved_urls(mirror).values())
    resolved = 0
    for path in pages:
        for href in links_of(path):
            target = Path(os.path.normpath(path.parent / unquote(href.partition("#")[0])))
            assert target.is_file() and str(target.relative_to(mirror)) in saved, (path, href)
            resolved += 1
    return resolved


def links_of(path: Path) -> list[str]:
    """Every URL a saved HTML page or stylesheet holds, found independently of the rewriter
    (lxml for HTML; the CSS tokenizer for CSS, style attributes and elements)."""
    body = path.read_bytes()
    if path.name.endswith(".css"):
        return [link.href for link in css_links(body)]
    doc = lxml.html.document_fromstring(body)
    found = []
    for element in doc.iter():
        if not isinstance(element.tag, str):
            continue
        for attr in ("href", "src", "poster", "data", "background"):
            if (value := element.get(attr)) is not None and element.tag != "base":
                found.append(value.strip())
        if (srcset := element.get("srcset")) is not None:
            found += [c.split()[0] for c in srcset.split(",") if c.strip()]
        if (style := element.get("style")) is not None:
            found += [link.href for link in css_links(style.encode())]
        if element.tag == "style":
            found += [link.href for link in css_links((element.text or "").encode())]
    return found


def test_every_page_and_requisite_once_nothing_outside_dir(sites, tmp_path) -> None:
    site, cdn = sites
    work = tmp_path / "work"  # the crawl's cwd; DIR inside it; its neighbours watched too
    work.mkdir()
    (tmp_path / "neighbour.txt").write_text("untouched")
    before = tree(tmp_path)
    done = run(work, site.url("/"), "--mirror", "m", *FAST)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    after = tree(tmp_path)
    # nothing written anywhere but under work/m (the whole tree the crawl could reach by a
    # "../" from DIR: its cwd, the folder above, their neighbours)
    assert "work/m" in after and all(p.startswith("work/m") for p in after - before)
    assert (tmp_path / "neighbour.txt").read_text() == "untouched"
    mirror = work / "m"
    host = f"127.0.0.1:{site.port}"
    entries = manifest(mirror)
    files = [e for e in entries if not e.get("alias")]
    # one file per URL, one URL per file
    assert len({e["url"] for e in files}) == len(files) == len({e["path"] for e in files})
    on_disk = {p for p in tree(mirror) if (mirror / p).is_file() and p != MANIFEST}
    assert on_disk == {e["path"] for e in files}
    # each page and requisite was asked for once (a redirect: once, its target once)
    counts = site.fetch_counts()
    assert counts and max(counts.values()) == 1, counts
    assert len(files) == len(counts) - 2  # all but /docs and /home, redirects, have a file
    assert cdn.fetch_counts() == {}  # a CDN's stylesheet: not without the flag
    expected = {"index.html", "about.html", "docs/index.html", "docs/page.html",
                "list?page=2&sort=up.html", "list?page=3&sort=up.html", "café/naïve.html",
                "css/main.css?v=3.css", "css/base.css", "css/deep/nested.css", "js/app.js",
                "favicon.ico", "fonts/f.woff2", "img/logo.png", "img/logo-2x.png",
                "img/bg.png", "img/bg2.png", "img/n.png"}
    assert {f"{host}/{name}" for name in expected} <= on_disk
    long_names = [p for p in on_disk if p.startswith(f"{host}/long/")]
    assert len(long_names) == 1 and len(long_names[0].rpartition("/")[2].encode()) <= 255
    assert long_names[0].endswith(".html") and LONG[:100] in long_names[0]
    # the hostile names: each a plain file in the host's folder, named by its escapes
    hostile = {e["url"].partition(host)[2]: e["path"] for e in files
               if e["url"].partition(host)[2] in {canonicalize(site.url(h)).partition(host)[2]
                                                 for h in HOSTILE}}
    assert len(hostile) == len(HOSTILE)
    for path in hostile.values():
        assert (mirror / path).resolve().parent == (mirror / host).resolve()
    assert f"{host}/..%2F..%2Fescape.html" in on_disk
    assert f"{host}/bidi%E2%80%AEtxt.html" in on_disk  # a bidi override stays an escape
    assert f"{host}/nul%00byte.html" in on_disk


def test_every_link_to_a_saved_url_leads_to_its_file(sites, tmp_path) -> None:
    site, cdn = sites
    done = run(tmp_path, site.url("/"), "--mirror", "m", *FAST)
    assert done.returncode == 0, done.stderr
    mirror = tmp_path / "m"
    saved = saved_urls(mirror)
    checked = 0
    for entry in manifest(mirror):
        if entry.get("alias") or not str(entry["path"]).endswith((".html", ".css")):
            continue
        path = mirror / str(entry["path"])
        for href in links_of(path):
            if not href or href.startswith(("#", "mailto:", "data:")):
                continue
            if urlsplit(href).scheme in ("http", "https"):
                # an absolute URL: one that was not saved (else it would be relative)
                assert canonicalize(href) not in saved, (path, href)
                continue
            target = Path(os.path.normpath(path.parent / unquote(href.partition("#")[0])))
            assert target.is_file(), (path, href)
            assert target.resolve().is_relative_to(mirror.resolve())
            checked += 1
    assert checked > 40
    index = (mirror / f"127.0.0.1:{site.port}" / "index.html").read_text()
    assert f'href="{cdn.url("/cdn.css")}"' in index  # not saved: absolute
    assert 'href="about.html#team"' in index  # the fragment kept
    assert 'href="index.html">home (redirected' in index  # a redirect to a page crawled before
    assert 'href="https://example.invalid/elsewhere"' in index
    assert "<base" not in index or 'href=""' in index


def test_bytes_change_only_where_a_url_was_and_the_encoding_is_kept(server, tmp_path) -> None:
    latin = ("<!doctype html><html><head><meta charset=iso-8859-1><title>Caf\xe9</title>"
             "<base href='/sub/'>"
             "<style>/* url(not-a-link.png) */ p { background: url( 'bg.png' ) }</style>"
             "</head><body><p title=\"url(x)\">D\xe9j\xe0 vu &amp; co</p>"
             "<a href=page.html?q=\xe9t\xe9>accented query</a>"
             "<A HREF='/sub/page.html#x' class=k>upper case</A>"
             "<img src=\"bg.png\" alt='href=no'>\n<!-- <a href=\"/sub/page.html\"> -->"
             "<script>var a = '<a href=\"page.html\">';</script>"
             "<a href=\"mailto:x@example.org\">mail</a><a href=\"javascript:void(0)\">js</a>"
             "</body></html>").encode("iso-8859-1")
    server.pages.update({
        "/robots.txt": Resource(b"", 404),
        "/": Resource(latin, headers={"Content-Type": "text/html"}),
        "/sub/bg.png": Resource(b"\x89PNG", headers={"Content-Type": "image/png"}),
        "/sub/page.html?q=%E9t%E9": Resource(b"<p>query</p>"),
        "/sub/page.html": Resource(b"<p>page</p>"),
    })
    done = run(tmp_path, server.url("/"), "--mirror", "m", *FAST)
    assert done.returncode == 0, done.stderr
    saved = (tmp_path / "m" / f"127.0.0.1:{server.port}" / "index.html").read_bytes()
    assert b"Caf\xe9" in saved and b"D\xe9j\xe0 vu &amp; co" in saved  # still latin-1

    def skeleton(body: bytes) -> bytes:  # the page without its URLs' values
        body = re.sub(rb"""(?i)\b(href|src)=("[^"]*"|'[^']*'|[^\s>]+)""", rb"\1=U", body)
        return re.sub(rb"url\([^)]*\)", b"url(U)", body)

    assert skeleton(saved) == skeleton(latin)
    assert b"<base href=''" not in saved and b"<base href=\"\"" in saved  # no base any more
    assert b'href="sub/page.html%3Fq=%25E9t%25E9.html"' in saved  # (the name holds "%E9")
    assert b"HREF='sub/page.html#x'" in saved  # (its quotes as they were)
    assert b"url( 'sub/bg.png' )" in saved and b"/* url(not-a-link.png) */" in saved
    assert b"'<a href=\"page.html\">'" in saved  # a script's text is no markup
    assert b"<!-- <a href=\"/sub/page.html\"> -->" in saved
    assert b'title="url(x)"' in saved and b"alt='href=no'" in saved
    assert b'href="mailto:x@example.org"' in saved and b'href="javascript:void(0)"' in saved


def test_mirror_names_windows_writes_no_character_windows_forbids(server, tmp_path) -> None:
    page = (b"<!doctype html><meta charset=utf-8><a href=list?page=2>2</a>"
            b"<a href=./a:b>colon</a><a href='q%7Cpipe'>pipe</a><a href=star*>star</a>"
            b"<a href=list?page=3>3</a>")
    server.pages.update({
        "/robots.txt": Resource(b"", 404),
        "/": Resource(page),
        "/list?page=2": Resource(b"<p>2</p><a href=/>home</a>"),
        "/list?page=3": Resource(b"<p>3</p>"),
        "/a:b": Resource(b"<p>colon</p>"),
        "/q%7Cpipe": Resource(b"<p>pipe</p>"),
        "/star*": Resource(b"<p>star</p>"),
    })
    done = run(tmp_path, server.url("/"), "--mirror", "m", "--mirror-names", "windows", *FAST)
    assert done.returncode == 0, done.stderr
    mirror = tmp_path / "m"
    files = [p for p in mirror.rglob("*") if p.is_file() and p.name != MANIFEST]
    names = [str(p.relative_to(mirror)).partition("/")[2] for p in files]  # (the host's
    assert len(names) == 6  # folder holds the port's ":": a name of its own, below)
    for name in names:
        assert not set('<>:"|?*\\') & set(name), name
    host = {str(p.relative_to(mirror)).partition("/")[0] for p in files}
    assert host == {f"127.0.0.1%3A{server.port}"}
    assert links_leading_to_files(mirror, [p for p in files if p.suffix == ".html"]) == 6
    done = run(tmp_path, server.url("/"), "--mirror-names", "windows", *FAST)
    assert done.returncode == 2 and "--mirror-names would do nothing" in done.stderr


def test_names_an_os_reserves_are_escaped_and_their_links_lead_to_them(server,
                                                                       tmp_path) -> None:
    # a mirror copied to Windows or a FAT/NTFS/SMB share: no file named as a device (any case,
    # any extension, a folder too), none ending in a dot (Windows drops it)
    page = (b"<!doctype html><meta charset=utf-8><a href=con>con</a><a href=/nul.html>nul</a>"
            b"<a href=aux/x>aux</a><a href=trailing.>dot</a><a href=com%C2%B9.txt>com1</a>"
            b"<img src=/LPT1.png><a href=console>not a device</a>")
    server.pages.update({
        "/robots.txt": Resource(b"", 404),
        "/": Resource(page),
        "/con": Resource(b"<p>con</p><a href=aux/x#top>back</a>"),
        "/nul.html": Resource(b"<p>nul</p>"),
        "/aux/x": Resource(b"<p>aux</p><a href=../con>con</a><a href=../trailing.>dot</a>"),
        "/trailing.": Resource(b"a text", headers={"Content-Type": "text/plain"}),
        "/com%C2%B9.txt": Resource(b"com1", headers={"Content-Type": "text/plain"}),
        "/LPT1.png": Resource(b"\x89PNG", headers={"Content-Type": "image/png"}),
        "/console": Resource(b"<p>console</p>"),
    })
    done = run(tmp_path, server.url("/"), "--mirror", "m", *FAST)
    assert done.returncode == 0, done.stderr
    mirror = tmp_path / "m"
    host = mirror / f"127.0.0.1:{server.port}"
    assert {str(p.relative_to(host)) for p in host.rglob("*") if p.is_file()} == {
        "index.html", "%63on.html", "%6Eul.html", "%61ux/x.html", "trailing%2E",
        "%63om¹.txt", "%4CPT1.png", "console.html"}
    assert links_leading_to_files(mirror, list(host.rglob("*.html"))) == 10
    index = (host / "index.html").read_text()
    assert 'href="%2563on.html"' in index and 'src="%254CPT1.png"' in index
    assert 'href="trailing%252E"' in index
    assert 'href="../%2563on.html"' in (host / "%61ux" / "x.html").read_text()


def test_external_requisites_are_saved_when_asked(sites, tmp_path) -> None:
    site, cdn = sites
    done = run(tmp_path, site.url("/"), "--mirror", "m", "--mirror-external-requisites", *FAST)
    assert done.returncode == 0, done.stderr
    assert cdn.fetch_counts() == {"/cdn.css": 1}
    mirror = tmp_path / "m"
    assert (mirror / f"127.0.0.2:{cdn.port}" / "cdn.css").read_bytes() == b"p { margin: 0 }"
    index = (mirror / f"127.0.0.1:{site.port}" / "index.html").read_text()
    assert f'href="../127.0.0.2%3A{cdn.port}/cdn.css"' in index
    assert "example.invalid" in index  # a page link out is no requisite: never fetched


def test_a_symlink_in_dir_is_an_error_of_its_own_and_the_crawl_goes_on(sites, tmp_path) -> None:
    site, _ = sites
    outside = tmp_path / "outside"
    outside.mkdir()
    host = tmp_path / "m" / f"127.0.0.1:{site.port}"
    host.mkdir(parents=True)
    (host / "img").symlink_to(outside)  # planted: the images' folder leads out of DIR
    out = tmp_path / "out.jsonl"
    done = run(tmp_path, site.url("/"), "--mirror", "m", "--out", str(out), "--stats",
               str(tmp_path / "stats.json"), *FAST)
    assert "Traceback" not in done.stderr
    assert list(outside.iterdir()) == []
    records = [json.loads(line) for line in out.read_text().splitlines()]
    unsafe = [r for r in records if (r["error"] or "").startswith("UnsafePath")]
    assert {urlsplit(r["url"]).path for r in unsafe} == {
        "/img/logo.png", "/img/logo-2x.png", "/img/bg.png", "/img/bg2.png", "/img/n.png"}
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["error_UnsafePath"] == 5
    assert (host / "index.html").is_file() and (host / "css" / "base.css").is_file()


def test_a_symlinked_table_is_refused_in_one_line(sites, tmp_path) -> None:
    site, _ = sites
    (tmp_path / "m").mkdir()
    (tmp_path / "elsewhere.jsonl").write_text("")
    (tmp_path / "m" / MANIFEST).symlink_to(tmp_path / "elsewhere.jsonl")
    done = run(tmp_path, site.url("/"), "--mirror", "m", *FAST)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert (tmp_path / "elsewhere.jsonl").read_text() == ""
    assert site.fetch_counts() == {}


def test_requisites_come_with_the_last_pages_and_exclude_keeps_one_out(sites, tmp_path) -> None:
    # --max-depth 0: the seed alone, but with everything it needs (as wget -p); --exclude is the
    # user's word that a URL is never requested, a requisite too
    site, _ = sites
    done = run(tmp_path, site.url("/"), "--mirror", "m", "--max-depth", "0",
               "--exclude", r"\.woff2$", *FAST)
    assert done.returncode == 0, done.stderr
    counts = site.fetch_counts()
    assert "/fonts/f.woff2" not in counts and "/about" not in counts
    assert {"/", "/css/main.css?v=3", "/css/base.css", "/css/deep/nested.css", "/js/app.js",
            "/img/logo.png", "/img/logo-2x.png", "/img/bg.png", "/img/bg2.png", "/img/n.png",
            "/favicon.ico"} == set(counts)
    css = (tmp_path / "m" / f"127.0.0.1:{site.port}" / "css" / "main.css?v=3.css").read_text()
    assert f'url("{site.url("/fonts/f.woff2")}")' in css  # not saved: absolute
    assert "@import \"base.css\"" in css and "url(../img/bg2.png)" in css


def test_max_pages_keeps_the_requisites_of_the_pages_it_fetched(sites, tmp_path) -> None:
    site, _ = sites
    done = run(tmp_path, site.url("/"), "--mirror", "m", "--max-pages", "1", *FAST)
    assert done.returncode == 0, done.stderr
    host = tmp_path / "m" / f"127.0.0.1:{site.port}"
    pages = [p for p in host.rglob("*.html")]
    assert [p.name for p in pages] == ["index.html"]
    for name in ("css/main.css?v=3.css", "css/base.css", "css/deep/nested.css", "js/app.js",
                 "img/logo.png", "img/logo-2x.png", "img/bg.png", "img/n.png", "favicon.ico"):
        assert (host / name).is_file(), name


def test_a_second_run_into_the_same_dir_keeps_every_name(sites, tmp_path) -> None:
    site, _ = sites
    assert run(tmp_path, site.url("/"), "--mirror", "m", *FAST).returncode == 0
    first = tree(tmp_path / "m")
    names = {e["url"]: e["path"] for e in manifest(tmp_path / "m") if not e.get("alias")}
    assert run(tmp_path, site.url("/"), "--mirror", "m", *FAST).returncode == 0
    assert tree(tmp_path / "m") == first  # the same files, none added under another name
    again = [e for e in manifest(tmp_path / "m") if not e.get("alias")]
    assert all(names[e["url"]] == e["path"] for e in again)


def test_the_summary_says_files_bytes_and_where(sites, tmp_path) -> None:
    site, _ = sites
    done = run(tmp_path, site.url("/"), "--mirror", "m", *FAST[:-1])
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("Written:"))
    files = len([e for e in manifest(tmp_path / "m") if not e.get("alias")])
    assert re.search(rf"m \(--mirror: {files} files, [0-9.]+ KB\)", line), line


def test_the_live_view_says_files_bytes_and_where() -> None:
    from rich.console import Console

    from minicrawl.watch.progress import Progress
    from minicrawl.watch.view import render_progress

    numbers = dict(elapsed=1.0, pages=30, todo=5, in_flight=2, workers=4, at_work=2, visited=60,
                   fill_ratio=None, fp_rate=None, links_new=50, links_dropped=3,
                   links_out_of_scope=1, errors=0, max_pages=None, checked=12)
    console = Console(file=io.StringIO(), width=140, color_system=None)
    console.print(render_progress(Progress(**numbers, saved_files=42, saved_bytes=2_500_000,
                                           saved_in="site"), pages_per_s=3.0))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "42 files, 2.5 MB in site" in text and "12 URLs the pages lead to" in text
    console = Console(file=io.StringIO(), width=140, color_system=None)
    console.print(render_progress(Progress(**numbers), pages_per_s=3.0))
    assert " saved " not in console.file.getvalue()  # type: ignore[attr-defined]


@pytest.mark.parametrize(("args", "says"), [
    (["--mirror", ""], "--mirror must not be empty"),
    (["--mirror", "m", "--save-pages", "p"], "--save-pages is --mirror's simpler case"),
    (["--mirror-external-requisites"], "--mirror-external-requisites would do nothing"),
    (["--mirror", "m", "--redis", "redis://127.0.0.1:9/"],
     "--mirror does not work with --redis yet"),
    (["--mirror", "afile"], "--mirror"),
])
def test_bad_input_is_one_line(server, tmp_path, args, says) -> None:
    (tmp_path / "afile").write_text("a file, not a folder")
    done = run(tmp_path, server.url("/"), *args, *FAST)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert server.requests == []
