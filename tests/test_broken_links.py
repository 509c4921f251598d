"""``--check-links``, run as a user runs it (``python run.py`` in a subprocess) on a real local
site with known breakage: the broken links printed on stdout, grouped by target, each with every
page linking to it, its line and text; the summary after them; the exit status (1 when anything
is broken, ``--fail-on`` to change it; the crawl's own codes first); ``--quiet``; hostile link
texts and URLs (markup, terminal escapes, a 1 MB text, a page not in UTF-8).

Every page of the site is in scope here; its image and its nofollow link are checked and fine
(what is checked and how: tests/test_check_links.py)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from minicrawl.demo.site import LocalSite, Resource, reset
from minicrawl.records.broken import Counts
from minicrawl.watch.broken import headline
from minicrawl.watch.summary import short_summary

ROOT = Path(__file__).resolve().parent.parent
FAST = ["--delay", "0", "--threads", "2", "--retries", "0"]
PAGES = 12  # /p/0 … /p/11, each with the menu: /missing is linked from every one
HUGE = 1_000_000  # characters of one link's text
TARGET = re.compile(r"^(\d{3}|ERR)  (\S+?)(?: → (\S+))?  \((.*)\)$")
REFERRER = re.compile(r'^     (\S+)  line (\S+)  ("(?:.*)"|\(no text\))  (<.*>)$')


def run(*args: str, timeout: float = 120,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})


def lines(*rows: str) -> bytes:
    """A page whose line n is ``rows[n - 1]``."""
    return "\n".join(rows).encode()


MENU = '<nav><a href="/missing">Missing page</a> <a href="/about">About</a></nav>'


@pytest.fixture
def site() -> Iterator[LocalSite]:
    """Home links to a 404 (twice; the menu on every page links to it too), a 500, a redirect
    to a 404, a redirect loop, a connection reset, a page robots.txt disallows, a nofollow
    link, an image (a requisite: checked) and a page of hostile links."""
    with LocalSite() as server:
        server.pages.update({
            "/robots.txt": Resource(b"User-agent: *\nDisallow: /private/\n", 200,
                                    {"Content-Type": "text/plain"}),
            "/": Resource(lines(
                "<!DOCTYPE html>",
                "<html><head><title>Home</title></head><body>",
                MENU,
                '<a href="/boom">Server error</a>',
                '<a href="/old">Old address</a>',
                '<a href="/loop">Round and round</a>',
                '<a href="/reset">Resets</a>',
                '<a href="missing">Missing, again</a>',
                '<a href="/p/0">Pages</a>',
                '<a href="/private/x">Private</a>',
                '<a href="/nf" rel="nofollow">Not followed</a>',
                '<img src="/logo.png" alt="Our logo">',
                '<a href="/h">Hostile</a>',
                "</body></html>")),
            "/about": Resource(lines(MENU, '<p><a href="/old">  the', "   old   one </a></p>")),
            **{f"/p/{n}": Resource(lines(MENU, f'<a href="/p/{n + 1}">Next</a>'
                                         if n + 1 < PAGES else "<p>The end</p>"))
               for n in range(PAGES)},
            "/h": Resource(
                lines('<a href="/gone-1">&lt;script&gt;alert(1)&lt;/script&gt;</a>',
                      '<a href="/gone-2">\x1b[2J&#x202e;evil</a>',
                      '<a href="/gone-3">' + "x" * HUGE + "</a>",
                      '<a href="/caf\xe9">caf\xe9</a>').replace(b"\xc3\xa9", b"\xe9"),
                headers={"Content-Type": "text/html; charset=windows-1252"}),
            "/logo.png": Resource(b"PNG", 200, {"Content-Type": "image/png"}),
            "/nf": Resource(b"not followed, checked"),
            "/boom": Resource(b"down", 500),
            "/old": Resource(b"", 301, {"Location": "/gone"}),
            "/loop": Resource(b"", 302, {"Location": "/loop2"}),
            "/loop2": Resource(b"", 302, {"Location": "/loop"}),
            "/reset": reset(),
        })
        yield server


def truth(o: str) -> dict[tuple[str, str, str | None, str], list[tuple[str, str, str, str]]]:
    """What the list must say: (status, URL, where its redirects ended, why) → every link to
    it (page, line, text, element), in the list's order."""
    menu = [(o + "/", "3"), (o + "/about", "1"),
            *sorted((o + f"/p/{n}", "1") for n in range(PAGES))]
    missing = sorted([(page, line, '"Missing page"', '<a href="/missing">')
                      for page, line in menu]
                     + [(o + "/", "8", '"Missing, again"', '<a href="missing">')])
    h = o + "/h"
    return {
        ("500", o + "/boom", None, "Internal Server Error (gave up after 1 attempt)"): [
            (o + "/", "4", '"Server error"', '<a href="/boom">')],
        ("404", o + "/caf%C3%A9", None, "Not Found"): [
            (h, "4", '"café"', '<a href="/café">')],
        ("404", o + "/gone-1", None, "Not Found"): [
            (h, "1", '"<script>alert(1)</script>"', '<a href="/gone-1">')],
        ("404", o + "/gone-2", None, "Not Found"): [
            (h, "2", '"\\x1b[2J\\u202eevil"', '<a href="/gone-2">')],
        ("404", o + "/gone-3", None, "Not Found"): [
            (h, "3", '"' + "x" * 59 + '…"', '<a href="/gone-3">')],
        ("302", o + "/loop", None, "redirect loop"): [
            (o + "/", "6", '"Round and round"', '<a href="/loop">')],
        ("404", o + "/missing", None, "Not Found"): missing,
        ("404", o + "/old", o + "/gone", "Not Found"): [
            (o + "/", "5", '"Old address"', '<a href="/old">'),
            (o + "/about", "2", '"the old one"', '<a href="/old">')],
        ("ERR", o + "/reset", None, "RESET"): [
            (o + "/", "7", '"Resets"', '<a href="/reset">')],
    }


LINKS = 12 + 3 + (2 * PAGES + PAGES - 1) + 4  # on /, /about, /p/*, /h
UNCHECKED = 1  # /private/x (robots.txt); /nf (nofollow) and /logo.png (a requisite): checked


def parsed(stdout: str) -> tuple[str, dict[tuple, list[tuple]], list[str]]:
    """(the list's headline, its targets with their links, the lines after the list)."""
    rows = stdout.splitlines()
    assert rows and rows[0].startswith("Broken links: "), stdout
    found: dict[tuple, list[tuple]] = {}
    at = 1
    while at < len(rows):
        if (target := TARGET.match(rows[at])) is not None:
            status, url, final, why = target.groups()
            if why.startswith("ConnectionError"):  # the OS's words
                why = "RESET"
            key = (status, url, final, why)
            assert key not in found, f"{url} listed twice"
            found[key] = []
        elif (referrer := REFERRER.match(rows[at])) is not None:
            found[key].append(referrer.groups())
        else:
            break
        at += 1
    return rows[0], found, rows[at:]


def test_every_broken_link_with_every_page_linking_to_it_and_exit_1(site) -> None:
    done = run(site.url("/"), "--check-links", *FAST)
    assert done.returncode == 1, done.stderr
    assert done.stderr == ""  # the broken links are the result, not the crawl's error
    headline, found, after = parsed(done.stdout)
    expected = truth(site.origin)
    assert found == expected
    assert list(found) == sorted(found, key=lambda key: key[1])  # by URL; links by page, line
    links = sum(len(v) for v in expected.values())
    assert headline == (f"Broken links: 9 URLs, linked {links} times from {PAGES + 3} pages "
                        f"(of {LINKS} links on {PAGES + 3} pages, {UNCHECKED} not checked)")
    # then the short summary, naming the broken links and where the list is
    assert after[0] == "" and len(after) <= 12, after
    assert re.match(r"Crawl finished: \d+ pages in ", after[1]), after
    assert f"Broken links: 9 URLs, linked {links} times — listed above, each with every " \
           "page linking to it; exit status 1 (--fail-on never: 0)" in after
    assert not any(" ← " in line for line in after)  # no "first problems": the list has all
    # the hostile page was read whole, its markup and escapes never printed as they are
    assert "\x1b" not in done.stdout and "\u202e" not in done.stdout


def test_an_ascii_terminal_gets_escapes_not_a_traceback(site) -> None:
    """stdout that cannot write "é" or "—" (PYTHONIOENCODING=ascii): the list and the summary
    are printed with backslash escapes, the exit status is the broken links'."""
    done = run(site.url("/"), "--check-links", *FAST, env={"PYTHONIOENCODING": "ascii"})
    assert done.returncode == 1, done.stderr
    assert done.stderr == ""
    assert f'     {site.url("/h")}  line 4  "caf\\xe9"  <a href="/caf\\xe9">' in \
        done.stdout.splitlines()
    assert "Problems: 9 \\u2014 " in done.stdout


def test_the_links_file_and_the_list_come_from_one_join(site, tmp_path) -> None:
    """With --links too: the file's broken records are the list's links, one for one."""
    path = tmp_path / "links.jsonl"
    done = run(site.url("/"), "--check-links", "--links", str(path), *FAST)
    assert done.returncode == 1, done.stderr
    _, found, after = parsed(done.stdout)
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(records) == LINKS
    assert sum(r["broken"] is None for r in records) == UNCHECKED
    broken = sorted((r["url"], r["page"], str(r["line"])) for r in records if r["broken"])
    listed = sorted((key[1], page, line) for key, links in found.items()
                    for page, line, _, _ in links)
    assert broken == listed
    assert any(f"{path} (--links)" in line for line in after), after


def test_quiet_prints_the_list_and_nothing_else(site) -> None:
    """A CI job runs it with --quiet: no summary, no note on the pace, but the list that failed
    it."""
    done = run(site.url("/"), "--check-links", "--quiet", *FAST)
    assert done.returncode == 1 and done.stderr == ""
    headline, found, after = parsed(done.stdout)
    assert found == truth(site.origin) and after == []


@pytest.mark.parametrize(("fail_on", "code"), [("never", 0), ("warnings", 1), ("broken", 1)])
def test_fail_on_sets_the_exit_status_the_list_is_the_same(site, fail_on, code) -> None:
    done = run(site.url("/"), "--check-links", "--fail-on", fail_on, *FAST)
    assert done.returncode == code, done.stderr
    _, found, after = parsed(done.stdout)
    assert found == truth(site.origin)
    said = "exit status 0 (--fail-on never)" if fail_on == "never" else \
        "exit status 1 (--fail-on never: 0)"
    assert any(line.endswith(said) for line in after), after


def test_nothing_broken_exits_0_and_says_so() -> None:
    with LocalSite({"/": Resource(b'<a href="/a">A</a><img src="/i.png">'),
                    "/a": Resource(b'<a href="/">Home</a>'),
                    "/i.png": Resource(b"PNG", 200, {"Content-Type": "image/png"})}) as clean:
        done = run(clean.url("/"), "--check-links", *FAST)
        assert done.returncode == 0, done.stderr
        rows = done.stdout.splitlines()
        assert rows[0] == "Broken links: none (3 links on 2 pages)"
        assert "Broken links: none (3 of 3 links checked)" in rows
        quiet = run(clean.url("/"), "--check-links", "--quiet", *FAST)
        assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
        # without --check-links the same crawl prints no list
        plain = run(clean.url("/"), *FAST)
        assert plain.returncode == 0 and "Broken links" not in plain.stdout


def test_without_check_links_broken_links_do_not_fail_the_crawl(site, tmp_path) -> None:
    """--links alone records them, as before: exit 0, no list."""
    done = run(site.url("/"), "--links", str(tmp_path / "l.jsonl"), *FAST)
    assert done.returncode == 0, done.stderr
    assert "Broken links" not in done.stdout


def test_a_seed_that_is_down_is_a_failed_check() -> None:
    """No page, no link: the seed itself is broken (its host gave no answer, not even to
    robots.txt), and the check fails."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    seed = f"http://127.0.0.1:{port}/"
    done = run(seed, "--check-links", *FAST)
    assert done.returncode == 1, done.stderr
    rows = done.stdout.splitlines()
    assert rows[0] == "Broken links: 1 URL (a seed) (of 0 links on 0 pages)"
    assert re.match(rf"ERR  {re.escape(seed)}  \(robots\.txt unreachable: ConnectionError",
                    rows[1]), rows[1]
    assert rows[2] == "     (a seed)"


def test_fail_on_without_check_links_is_refused() -> None:
    done = run("http://127.0.0.1:9/", "--fail-on", "never")
    assert done.returncode == 2
    assert "--fail-on would do nothing: it sets the exit status of --check-links" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_interrupted_check_lists_what_it_found_and_exits_130(tmp_path) -> None:
    """Ctrl-C (SIGTERM here): the crawl's own code wins over the broken links', and the list
    of what was found is still printed, said to be partial."""
    def slow(request):  # type: ignore[no-untyped-def]
        time.sleep(0.2)
        n = int(request.path.rsplit("/", 1)[1])
        return Resource(f'<a href="/missing">Missing</a><a href="/s/{n + 1}">next</a>'.encode())

    with LocalSite({"/": Resource(b'<a href="/s/0">start</a>')}) as server:
        for n in range(1000):
            server.pages[f"/s/{n}"] = slow
        missing = server.url("/missing")
        out = tmp_path / "out.jsonl"
        proc = subprocess.Popen([sys.executable, str(ROOT / "run.py"), server.url("/"),
                                 "--check-links", "--out", str(out), *FAST], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "/missing" not in (
                out.read_text() if out.exists() else ""):
            time.sleep(0.1)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    headline, found, _ = parsed(stdout)
    assert headline.endswith("; the crawl was interrupted: pages it did not reach may have more")
    [(key, links)] = found.items()
    assert key == ("404", missing, None, "Not Found")
    assert len(links) >= 1 and all(text == '"Missing"' for _, _, text, _ in links)


def test_the_readme_shows_the_list_as_it_is_printed() -> None:
    """The Quick start's example of --check-links is in the form the code prints: its
    headline and its summary lines are what the code makes of the example's own counts, each
    target and link line has the list's form, and the exit status is the one it gives."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```console\n\$ python run\.py --check-links (\S+)\n(.*?)\n"
                      r"\$ echo \$\?\n(\d+)\n```", quick, re.S)
    assert block is not None, "the Quick start shows no --check-links run"
    seed, shown, code = block.groups()
    head, found, after = parsed(shown)
    counts = Counts(links=int(re.search(r"of ([\d,]+) links", head)[1].replace(",", "")),
                    pages=int(re.search(r"on ([\d,]+) pages", head)[1].replace(",", "")),
                    unchecked=int(re.search(r"([\d,]+) not checked", head)[1]),
                    broken=sum(len(links) for links in found.values()),
                    broken_pages=len({page for links in found.values() for page, *_ in links}),
                    targets=len(found))
    assert head == headline(counts)
    assert all(url.startswith(seed.rstrip("/")) for _, url, _, _ in found)
    assert list(found) == sorted(found, key=lambda key: key[1])
    for links in found.values():
        assert links == sorted(links, key=lambda link: (link[0], int(link[1])))
    pages = int(re.search(r"Crawl finished: (\d+) pages", after[1])[1])
    stats = {"pages": pages, "problems": len(found), "elapsed_s": 8.2,
             "pages_per_s": round(pages / 8.2, 1),
             "status_4xx": sum(key[0].startswith("4") for key in found),
             "status_5xx": sum(key[0].startswith("5") for key in found)}
    assert after == short_summary(stats, [], [], broken=counts).splitlines()
    assert int(code) == 1


def test_the_library_reads_the_broken_links_after_run(site) -> None:
    """Crawler(seeds, check_links=True): after run(), broken_links has the list the command
    line prints (its counts, each broken URL with the links to it) until closed."""
    from minicrawl import Crawler

    crawler = Crawler([site.url("/")], check_links=True, delay=0, retries=0, threads=2)
    crawler.run()
    broken = crawler.broken_links
    assert broken is not None and broken.complete
    expected = truth(site.origin)
    assert (broken.counts.targets, broken.counts.broken, broken.counts.links) == (
        len(expected), sum(len(v) for v in expected.values()), LINKS)
    found = {target.url: [(r.page, str(r.line)) for r in referrers]
             for target, referrers in broken.groups()}
    assert found == {key[1]: [(page, line) for page, line, _, _ in links]
                     for key, links in expected.items()}
    broken.close()


def test_out_says_why_a_4xx_failed_as_it_says_a_5xx(site, tmp_path) -> None:
    """--out's ``error`` is what went wrong, the same way for every failure: ``HTTP 404`` for a
    404 (it was null, beside a 503's ``HTTP 503 (gave up…)``), the error of a redirect loop or a
    reset, null for a page that answered."""
    out = tmp_path / "o.jsonl"
    done = run(site.url("/"), "--out", str(out), "--delay", "0", "--retries", "1")
    assert done.returncode == 0, done.stderr
    got = {r["url"].removeprefix(site.origin): r
           for r in map(json.loads, out.read_text().splitlines())}
    assert got["/missing"]["status"] == 404 and got["/missing"]["error"] == "HTTP 404"
    assert got["/boom"]["error"] == "HTTP 500 (gave up after 2 attempts)"
    assert got["/old"]["final_url"] == site.url("/gone") and got["/old"]["error"] == "HTTP 404"
    assert "redirect loop" in got["/loop"]["error"]
    assert got["/reset"]["error"].startswith("ConnectionError")
    assert got["/"]["error"] is None and got["/about"]["error"] is None
