"""The summary a crawl ends with: short, what went wrong first; every statistic on demand.

Run as a user runs it (``python run.py …`` against a local site), reading what it prints.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path

from minicrawl.demo.site import Resource

ROOT = Path(__file__).resolve().parent.parent
FAST = ["--delay", "0", "--per-host", "8"]
INTERNALS = ("visited_bits", "todo_disk_peak_bytes", "visited_hashes", "links_filtered")


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


def dead_port() -> int:
    """A loopback port nobody listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def broken_site(server) -> dict[str, str]:
    """/ links to /list, which links to 10 missing pages, a page answering 500, one on a dead
    port and a page robots.txt disallows; /list also links to /ok. Returns each broken URL →
    the page linking to it."""
    dead = f"http://127.0.0.1:{dead_port()}/nothing"
    missing = [f"/missing/{n}" for n in range(10)]
    hrefs = [*missing, "/boom", dead, "/ok", "/private/p"]
    server.pages["/"] = Resource(b'<a href="/list">the list</a>')
    server.pages["/list"] = Resource("".join(f'<a href="{h}">x</a>' for h in hrefs).encode())
    server.pages["/ok"] = Resource(b"fine")
    server.pages["/boom"] = Resource(b"down", 500)
    server.pages["/robots.txt"] = Resource(b"User-agent: *\nDisallow: /private/\n",
                                           headers={"Content-Type": "text/plain"})
    listing = server.url("/list")
    return {**{server.url(m): listing for m in missing}, server.url("/boom"): listing,
            dead: listing}


def test_the_summary_is_short_and_says_what_went_wrong_first(server, tmp_path):
    """~40 lines of internals (visited_bits, todo_disk_peak_bytes…) and not one failing URL:
    now at most 12 lines — pages, time, rate; the problems by kind; the first ones, each with
    the page linking to it; what was not requested; where the outputs went."""
    broken = broken_site(server)
    out, stats = tmp_path / "pages.jsonl", tmp_path / "stats.json"
    done = run(server.url("/"), "--allow-domain", "127.0.0.1", "--retries", "0",
               "--out", str(out), "--stats", str(stats), "--trace", str(tmp_path / "t.txt"),
               *FAST)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) <= 12, done.stdout
    assert not any(name in done.stdout for name in INTERNALS), done.stdout
    saved = json.loads(stats.read_text())
    # pages: /, /list, /ok, /boom and the 10 missing ones; the dead host's URL was never asked
    # for (its robots.txt could not be), nor the disallowed one
    assert saved["pages"] == 14 and saved["problems"] == 12
    head = re.search(r"^Crawl finished: 14 pages in [\d.]+ s \([\d,.]+ pages/s\); 1 URL not "
                     r"requested \(1 by robots\.txt\)$", done.stdout, re.M)
    assert head, done.stdout
    assert re.search(r"^Problems: 12 — 10 HTTP 4xx, 1 HTTP 5xx, 1 failed \(robots\.txt "
                     r"unreachable 1\)\. The first \(URL ← the page linking to it\):$",
                     done.stdout, re.M), done.stdout
    listed = re.findall(r"^  (\S+(?: \S+)*?)\s+(http://\S+)  ← (\S+)$", done.stdout, re.M)
    assert len(listed) == 5, done.stdout
    for what, url, referrer in listed:
        assert broken[url] == referrer, (url, referrer)
        assert what in ("404", "500", "robots.txt unreachable"), what
    assert f"  … and 7 more: {out} (--out) has every page, with its referrer" in lines
    assert lines[-1] == (f"Written: {out} (--out), {stats} (--stats), {tmp_path / 't.txt'} "
                         "(--trace); every statistic: --verbose")
    records = {r["url"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert all(records[url]["referrer"] == broken[url] for url in broken)  # as it says


def test_a_clean_crawl_s_summary_says_so_in_three_lines(server):
    server.pages["/"] = Resource(b'<a href="/a">a</a>')
    server.pages["/a"] = Resource(b"end")
    done = run(server.url("/"), *FAST)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "" and lines[1].startswith("Crawl finished: 2 pages in ")
    assert lines[2:] == ["Problems: none", "Every statistic: --verbose, or --stats FILE"]


def test_verbose_prints_every_statistic_as_before(server, tmp_path):
    """The long form stays a flag away: -v/--verbose (wget's and LinkChecker's name for "tell
    me more"; --quiet is the other end), the statistics --stats writes, one a line."""
    broken_site(server)
    stats = tmp_path / "stats.json"
    for flag in ("--verbose", "-v"):
        done = run(server.url("/"), "--retries", "0", "--stats", str(stats), flag, *FAST)
        assert done.returncode == 0, done.stderr
        assert "Crawl finished\n" in done.stdout
        saved = json.loads(stats.read_text())
        shown = dict(re.findall(r"^  (\S+(?: \S+)*)\s{2,}(\S+)$", done.stdout, re.M))
        assert set(shown) == set(saved) and shown["pages"] == str(saved["pages"])
        assert all(name in shown for name in INTERNALS)
    refused = run(server.url("/"), "--verbose", "--quiet")
    assert refused.returncode == 2 and "--verbose" in refused.stderr and not refused.stdout


def test_the_summary_goes_to_stderr_when_stdout_holds_the_records(server):
    server.pages["/"] = Resource(b'<a href="/gone">a</a>')
    done = run(server.url("/"), "--out", "-", *FAST)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["status"] for line in done.stdout.splitlines()] == [200, 404]
    assert "Problems: 1 — 1 HTTP 4xx. The first" in done.stderr
    assert f"  404  {server.url('/gone')}  ← {server.url('/')}" in done.stderr


def test_a_chain_max_pages_stops_at_its_target_is_not_requested_everywhere(server, tmp_path):
    """A redirect chain stopped by --max-pages at its target was counted an error (errors 1,
    "Problems: 1 — 1 failed" in the summary, "failed" in the report) while the links said a
    link to it was not checked. One answer now: its start was requested (a 3xx came back), its
    target was not, by a rule — as robots.txt's refusal: no error, no problem, no broken link,
    exit status 0; the summary says the URL was not requested, and by what."""
    server.pages["/"] = Resource(b'<a href="/r">moved</a>')
    server.pages["/r"] = Resource(status=302, headers={"Location": "/t"})
    server.pages["/t"] = Resource(b"the target")
    links, stats = tmp_path / "links.jsonl", tmp_path / "stats.json"
    report = tmp_path / "report.html"
    # --check-links: past --max-pages the chains in ToDo are still taken (and refused); without
    # it ToDo stops and the chain is left in it
    done = run(server.url("/"), "--check-links", "--max-pages", "2", "--links", str(links),
               "--stats", str(stats), "--report", str(report), *FAST)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "/t" not in [r.path for r in server.requests]
    assert re.search(r"^Crawl finished: 2 pages in [\d.]+ s \([\d,.]+ pages/s\); 1 URL not "
                     r"requested \(1 by --max-pages\)$", done.stdout, re.M), done.stdout
    assert "Problems: none" in done.stdout.splitlines(), done.stdout
    assert re.search(r"^Broken links: none \(0 of 1 links checked\)$", done.stdout, re.M)
    saved = json.loads(stats.read_text())
    assert saved["pages"] == 2 and saved["redirects_max_pages"] == 1, saved
    assert saved.get("errors", 0) == saved.get("problems", 0) == 0, saved
    assert not any(key.startswith("error_") for key in saved), saved
    [row] = [json.loads(line) for line in links.read_text().splitlines()]
    assert (row["url"], row["final_url"], row["status"], row["broken"], row["error"]) == (
        server.url("/r"), server.url("/t"), None, None, "max_pages reached before redirect target")
    html = report.read_text()
    assert "2 pages in " in html and "; 0 problems.</p>" in html
    # the section's row: pages, problems, 2xx, 3xx, 4xx, 5xx, failed, not requested
    cells = re.search(r"<tr><td>/</td>((?:<td class=\"number[^\"]*\">[\d,]+</td>){8})</tr>", html)
    assert cells and re.findall(r">([\d,]+)<", cells[1]) == ["2", "0", "1", "0", "0", "0", "0",
                                                               "1"], html
    assert '<td class="status">not requested</td>' in html
