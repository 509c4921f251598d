"""--mirror DIR with --state: a mirror killed (-9) at any moment resumes with nothing lost or
fetched twice (but the few in flight) and every link rewritten; --recrawl asks each page and
requisite conditionally, saves only what changed, deletes nothing, and rewrites the files it
kept where a URL now has a copy. Run as a user runs it: `python run.py URL --mirror DIR
--state S` against a real local site."""

from __future__ import annotations

import fcntl
import hashlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from mirrorsite import png
from test_mirror import links_of, manifest, saved_urls

from minicrawl.core.urls import canonicalize
from minicrawl.demo.site import LocalSite, Request, Resource
from minicrawl.mirror.saver import MANIFEST

ROOT = Path(__file__).resolve().parent.parent
THREADS = 8
FAST = ["--delay", "0", "--threads", str(THREADS), "--per-host", str(THREADS), "--retries", "0",
        "--quiet"]
PAGES = 150


def etagged(body: bytes, ctype: str) -> Callable[[Request], Resource]:
    """An answer with an ETag, 304 to a request that names it (as a real server's)."""
    tag = '"' + hashlib.md5(body).hexdigest() + '"'

    def answer(request: Request) -> Resource:
        if request.headers.get("if-none-match") == tag:
            return Resource(b"", 304, {"ETag": tag})
        return Resource(body, 200, {"Content-Type": ctype, "ETag": tag})
    return answer


def page(i: int, extra: str = "") -> bytes:
    return (f'<html><head><link rel=stylesheet href="/css/s{i}.css"></head><body>'
            f'<img src="../img/shared.png"><a href="/p{(i + 1) % PAGES}.html">next</a>'
            f'<a href="/later.html">later</a>{extra}</body></html>').encode()


def fill(site: LocalSite) -> None:
    """An index, PAGES pages each with a stylesheet of its own that loads an image of its own,
    an image they share, and a link to /later.html, which is not there yet (404)."""
    links = "".join(f'<a href="p{i}.html">{i}</a>' for i in range(PAGES))
    site.pages["/"] = etagged(f"<html><body>{links}</body></html>".encode(), "text/html")
    site.pages["/img/shared.png"] = etagged(png(), "image/png")
    for i in range(PAGES):
        site.pages[f"/p{i}.html"] = etagged(page(i), "text/html")
        site.pages[f"/css/s{i}.css"] = etagged(
            f"body {{ background: url(../img/i{i}.png) }}".encode(), "text/css")
        site.pages[f"/img/i{i}.png"] = etagged(png(1, i % 7 + 1), "image/png")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], capture_output=True,
                          text=True, timeout=180, stdin=subprocess.DEVNULL)


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(ROOT / "run.py"), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)


def assert_links_resolve(mirror: Path) -> int:
    """Every link in every saved HTML page and stylesheet that names a saved URL is a relative
    path to its file; how many were checked."""
    # (a copy deleted as gone, --forget-gone, is no longer saved: links lead to its URL)
    saved = {url: path for url, path in saved_urls(mirror).items() if (mirror / path).exists()}
    checked = 0
    for entry in manifest(mirror):
        if entry.get("alias") or not str(entry["path"]).endswith((".html", ".css")) \
                or entry["url"] not in saved:
            continue
        path = mirror / str(entry["path"])
        for href in links_of(path):
            if urlsplit(href).scheme in ("http", "https"):
                assert canonicalize(href) not in saved, (path, href)  # else it would be local
                continue
            target = Path(os.path.normpath(path.parent / unquote(href.partition("#")[0])))
            assert target.is_file(), (path, href)
            checked += 1
    return checked


@dataclass
class Mirrored:
    """A site mirrored once, completely, with --state: its server, DIR, the host's folder in
    it, and the command line that did it (run again: a resume, a recrawl)."""

    site: LocalSite
    mirror: Path
    host: Path
    args: list[str]


@pytest.fixture
def mirrored(tmp_path: Path) -> Iterator[Mirrored]:
    with LocalSite() as site:
        fill(site)
        mirror, state = tmp_path / "m", tmp_path / "s"
        args = [site.url("/"), "--mirror", str(mirror), "--state", str(state), *FAST]
        assert run(*args).returncode == 0
        yield Mirrored(site, mirror, mirror / f"127.0.0.1:{site.port}", args)


def journal_rows(state: Path) -> int:
    with sqlite3.connect(state / "crawl.db") as db:
        return db.execute("SELECT count(*) FROM todo").fetchone()[0]


def test_a_mirror_killed_at_random_moments_resumes_with_nothing_lost(tmp_path) -> None:
    with LocalSite() as site:
        fill(site)
        for path, answer in list(site.pages.items()):  # slow enough to be killed mid-crawl
            site.pages[path] = slowed(answer, 0.004)
        mirror, state = tmp_path / "m", tmp_path / "s"
        args = [site.url("/"), "--mirror", str(mirror), "--state", str(state), *FAST]
        rng = random.Random(int(os.environ.get("MINICRAWL_KILL_SEED", "20261128")))
        kills = 0
        for _ in range(3):
            proc = start(*args)
            wanted = len(site.requests) + rng.randrange(30, 120)
            deadline = time.monotonic() + 60
            while len(site.requests) < wanted and proc.poll() is None:
                assert time.monotonic() < deadline, "the crawl made no progress"
                time.sleep(0.002)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
            proc.communicate(timeout=30)
        assert kills >= 2
        expected = {"/"} | {f"/{kind}{i}.{ext}" for i in range(PAGES)
                            for kind, ext in (("p", "html"), ("css/s", "css"), ("img/i", "png"))}
        expected |= {"/img/shared.png", "/later.html"}
        assert journal_rows(state) > 0  # really interrupted
        final = run(*args)
        assert final.returncode == 0, final.stderr
        assert "Traceback" not in final.stderr
        counts = site.fetch_counts()
        assert set(counts) == expected
        duplicates = sum(n - 1 for n in counts.values())
        assert duplicates <= THREADS * kills, counts.most_common(5)
        assert journal_rows(state) == 0
        # every page and requisite has its file, one file a URL (a page in flight at a kill is
        # saved again, at the same name: the table says so twice)
        files = [e for e in manifest(mirror) if not e.get("alias")]
        pairs = {(e["url"], e["path"]) for e in files}
        assert len(pairs) == len({e["path"] for e in files}) == len(expected) - 1  # not the 404
        assert len(files) - len(pairs) <= duplicates
        host = f"127.0.0.1:{site.port}"
        on_disk = {str(p.relative_to(mirror)) for p in mirror.rglob("*")
                   if p.is_file() and p.name != MANIFEST}
        assert on_disk == {str(e["path"]) for e in files}
        assert not (mirror / ".minicrawl-part").exists()  # the kills' parts cleared, then it
        assert f"{host}/css/s7.css" in on_disk and f"{host}/img/i7.png" in on_disk
        # the pages saved by the killed runs were rewritten too, by the run that ended
        assert assert_links_resolve(mirror) >= 4 * PAGES
        # and a completed mirror run again fetches nothing and changes no byte
        before = {p: p.read_bytes() for p in mirror.rglob("*") if p.is_file()}
        asked = len(site.requests)
        again = run(*args)
        assert again.returncode == 0 and "is complete" in again.stderr
        assert len(site.requests) - asked <= 1  # robots.txt at most
        assert {p: p.read_bytes() for p in mirror.rglob("*") if p.is_file()
                if p.name != MANIFEST} == {p: b for p, b in before.items() if p.name != MANIFEST}


def slowed(answer: Callable[[Request], Resource], seconds: float
           ) -> Callable[[Request], Resource]:
    def slow(request: Request) -> Resource:
        time.sleep(seconds)
        return answer(request)
    return slow


def test_a_file_left_as_saved_is_rewritten_by_the_next_run(mirrored: Mirrored) -> None:
    # A kill between the table's note and the rewritten file: the file is as saved, the note
    # names other bytes; the next run rewrites it (and leaves the others as they are).
    copy = mirrored.host / "p3.html"
    assert b'href="p4.html"' in copy.read_bytes()  # rewritten: relative, to its file
    copy.write_bytes(page(3))  # as the server sent it
    other = (mirrored.host / "p4.html").read_bytes()
    done = run(*mirrored.args)
    assert done.returncode == 0, done.stderr
    assert b'href="p4.html"' in copy.read_bytes() and b'href="/p4.html"' not in \
        copy.read_bytes()
    assert (mirrored.host / "p4.html").read_bytes() == other
    assert assert_links_resolve(mirrored.mirror) >= 4 * PAGES


def test_recrawl_asks_conditionally_saves_what_changed_deletes_nothing(mirrored: Mirrored) -> None:
    site, mirror, host, args = (mirrored.site, mirrored.mirror, mirrored.host,
                                mirrored.args)
    first = {p: p.read_bytes() for p in host.rglob("*") if p.is_file()}
    assert b"http://127.0.0.1" in (host / "p1.html").read_bytes()  # /later: 404
    # Since then: one page and one stylesheet changed, /later.html is there, p9 is gone
    site.pages["/p2.html"] = etagged(page(2, "<p>new text</p>"), "text/html")
    site.pages["/css/s5.css"] = etagged(b"body { color: red }", "text/css")
    site.pages["/later.html"] = etagged(b"<html><body>at last</body></html>", "text/html")
    del site.pages["/p9.html"]
    asked = len(site.requests)
    done = run(*args, "--recrawl")
    assert done.returncode == 0, done.stderr
    recrawl = [r for r in site.requests[asked:] if r.path != "/robots.txt"]
    paths = [r.path for r in recrawl]
    assert len(paths) == len(set(paths))  # each once
    # every URL saved before was asked conditionally, requisites as pages
    tagged = {r.path for r in recrawl if "if-none-match" in r.headers}
    assert {"/css/s1.css", "/img/i1.png", "/img/shared.png", "/p1.html"} <= tagged
    assert len(tagged) == len(first)
    after = {p: p.read_bytes() for p in host.rglob("*") if p.is_file()}
    assert set(first) < set(after)  # nothing deleted, the gone page's copy kept
    later = (f'href="{site.url("/later.html")}"'.encode(), b'href="later.html"')

    def same_but_later(path: Path) -> bool:  # the bytes kept, but the link to /later.html
        return after[path] == first[path].replace(*later) and later[1] in after[path]
    assert same_but_later(host / "p9.html")
    assert after[host / "later.html"] == b"<html><body>at last</body></html>"
    assert b"color: red" in after[host / "css" / "s5.css"]
    assert b"new text" in after[host / "p2.html"]
    # an unchanged page (304: its copy kept) now leads to /later.html's copy
    assert same_but_later(host / "p1.html")
    assert b"http://127.0.0.1" not in after[host / "p1.html"]
    assert assert_links_resolve(mirror) >= 4 * PAGES


def test_a_second_crawl_into_the_same_dir_is_refused_in_one_line(tmp_path) -> None:
    with LocalSite() as site:
        fill(site)
        mirror = tmp_path / "m"
        mirror.mkdir()
        with open(mirror / MANIFEST, "a") as held:  # as a crawl writing into it holds it
            fcntl.flock(held, fcntl.LOCK_EX)
            done = run(site.url("/"), "--mirror", str(mirror), *FAST)
        assert done.returncode == 2, done.stderr
        assert "another crawl is writing into it" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and site.requests == []
        (mirror / ".minicrawl-part").mkdir()
        (mirror / ".minicrawl-part" / "0123.part").write_bytes(b"half a fi")  # a kill's
        assert run(site.url("/"), "--mirror", str(mirror), *FAST).returncode == 0
        assert not (mirror / ".minicrawl-part").exists()  # cleared, then removed, empty


@pytest.mark.parametrize("flag", ["--mirror", "--save-pages"])
def test_a_crawl_that_ends_leaves_no_spool_folder_unless_it_holds_something(
        tmp_path, flag: str) -> None:
    """The spool holds each file while it is written: a crawl that ends removes it, empty (a
    user's DIR holds the copies and the table, nothing else); what is not a part of ours in it
    (a user's file) is never removed, so neither is the folder."""
    with LocalSite() as site:
        fill(site)
        mirror = tmp_path / "m"
        done = run(site.url("/"), flag, str(mirror), *FAST)
        assert done.returncode == 0, done.stderr
        assert not (mirror / ".minicrawl-part").exists()
        assert sorted(p.name for p in mirror.iterdir()) == [MANIFEST, f"127.0.0.1:{site.port}"]
        (mirror / ".minicrawl-part").mkdir()
        (mirror / ".minicrawl-part" / "notes.txt").write_text("mine")
        assert run(site.url("/"), flag, str(mirror), *FAST).returncode == 0
        assert (mirror / ".minicrawl-part" / "notes.txt").read_text() == "mine"


def test_forget_gone_deletes_a_gone_page_s_copy_and_links_lead_to_its_url(
        mirrored: Mirrored) -> None:
    site, mirror, host, args = (mirrored.site, mirrored.mirror, mirrored.host,
                                mirrored.args)
    assert b'href="p9.html"' in (host / "p8.html").read_bytes()
    del site.pages["/p9.html"]
    loud = [a for a in args if a != "--quiet"]  # (the summary)
    done = run(*loud, "--recrawl", "--forget-gone")
    assert done.returncode == 0, done.stderr
    assert "1 deleted (gone: --forget-gone)" in done.stdout
    assert not (host / "p9.html").exists()
    assert (host / "css" / "s9.css").exists()  # its requisites are still there
    p8 = (host / "p8.html").read_bytes()  # unchanged (304), kept, its link out
    assert f'href="{site.url("/p9.html")}"'.encode() in p8
    assert assert_links_resolve(mirror) >= 4 * (PAGES - 1)
    # back again, found by a page that changed (a forgotten page is not asked for by
    # itself): saved under its name, and links lead to it again
    site.pages["/p9.html"] = etagged(page(9), "text/html")
    site.pages["/p8.html"] = etagged(page(8, "<p>changed</p>"), "text/html")
    assert run(*args, "--recrawl").returncode == 0
    assert (host / "p9.html").exists()
    assert b'href="p9.html"' in (host / "p8.html").read_bytes()
    assert assert_links_resolve(mirror) >= 4 * PAGES
