"""The command line, run as a user runs it: ``python run.py ...`` in a subprocess."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from minicrawl.local.site import Resource

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


def test_no_valid_seed_exits_2_naming_each_line(tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("# a comment\n\nftp://example.org/\nnot a url\n   # indented comment\n")
    result = run(str(seeds))
    assert result.returncode == 2
    assert f"{seeds}:3: 'ftp://example.org/' is not a valid http(s) URL" in result.stderr
    assert f"{seeds}:4: 'not a url'" in result.stderr
    assert "no valid seed URL" in result.stderr


def test_bad_seed_lines_are_skipped_and_the_good_ones_crawled(tmp_path, server):
    server.pages["/"] = Resource(b'<a href="/next">n</a>')
    server.pages["/next"] = Resource(b"end")
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"{server.url('/')}   # the site\nhttp://[::1/\n")
    out = tmp_path / "out.jsonl"
    result = run(str(seeds), "--out", str(out), "--threads", "2")
    assert result.returncode == 0, result.stderr
    assert f"{seeds}:2:" in result.stderr
    assert [json.loads(x)["url"] for x in out.read_text().splitlines()] == [
        server.url("/"), server.url("/next")]
    assert re.search(r"pages\s+2\b", result.stdout)


def test_demo_crawls_the_whole_demo_site_offline():
    result = run("--demo", "--threads", "8")
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"missed 0, fetched twice 0, unreachable fetched 0", result.stdout)
    assert "pages_per_s" in result.stdout


def test_help_is_grouped_with_defaults():
    result = run("--help")
    assert result.returncode == 0
    for group in ("Workers:", "Visited:", "Scope:", "Output:"):
        assert group in result.stdout
    assert "(default: 8)" in result.stdout  # --threads


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_stop_cleanly_with_complete_output(tmp_path, server, sig):
    def slow(request):
        time.sleep(0.3)
        n = int(request.path.strip("/") or 0)
        return Resource(f'<a href="/{n + 1}">next</a><a href="/{n + 2}">next</a>'.encode())

    for n in range(1000):
        server.pages[f"/{n}" if n else "/"] = slow
    out, stats = tmp_path / "out.jsonl", tmp_path / "stats.json"
    # A job started in the background by a non-interactive shell (some CI runners) inherits
    # SIGINT ignored, and Python then rightly leaves Ctrl-C ignored: give the crawl the
    # terminal's default, which is what this test is about.
    proc = subprocess.Popen([sys.executable, str(ROOT / "run.py"), server.url("/"), "--out",
                             str(out), "--stats", str(stats), "--threads", "4"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # Interrupt a crawl under way, not an interpreter still importing (slow on a busy machine).
    deadline = time.monotonic() + 60
    while not (out.exists() and out.stat().st_size) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]  # all lines complete
    saved = json.loads(stats.read_text())
    assert 0 < len(records) == saved["pages"] and saved["interrupted"] == 1
    assert saved["todo_left"] > 0
    assert "Crawl finished (interrupted)" in stdout


def test_a_quiet_local_crawl_does_not_load_numpy_beautifulsoup_redis_or_rich(server):
    """What a crawl does not use, it does not import: NumPy (large Bloom batches), BeautifulSoup
    (pages declaring a non-UTF-8 charset), redis-py (shared crawls) and rich (the live view) cost
    ~47 MB of memory and ~0.25 s of start-up together, more than the rest of a small crawl."""
    html = {"Content-Type": "text/html"}  # no charset: the page's <meta> is read
    server.pages["/"] = Resource(b'<meta charset="utf-8"><a href="/a">a</a><a href="/b">b</a>',
                                 headers=html)
    server.pages["/a"] = Resource(b'<meta charset="UTF-8"><a href="/">home</a>', headers=html)
    script = ("import sys\nfrom minicrawl.cli import main\n"
              f"code = main([{server.url('/')!r}, '--quiet', '--delay', '0'])\n"
              "print(code, sorted({'numpy', 'bs4', 'redis', 'rich'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.stdout.split("\n")[-2] == "0 []", done.stdout + done.stderr
    assert server.fetch_counts().keys() >= {"/", "/a", "/b"}
