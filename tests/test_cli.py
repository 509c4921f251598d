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

from minicrawl.demo.site import LocalSite, Resource

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
    result = run(str(seeds), "--out", str(out), "--threads", "2", "--verbose")
    assert result.returncode == 0, result.stderr
    assert f"{seeds}:2:" in result.stderr
    assert [json.loads(x)["url"] for x in out.read_text().splitlines()] == [
        server.url("/"), server.url("/next")]
    assert re.search(r"pages\s+2\b", result.stdout)


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::1]", "site.localhost"])
def test_a_seed_without_its_scheme_is_told_the_url_to_write(tmp_path, host):
    """``localhost:8001/`` was refused as "not http(s)" (the parser reads ``localhost:`` as a
    scheme) while ``127.0.0.1:8001`` was told to write https://: every host:port without a
    scheme is told the same, http:// for a local server, and the URL it is told works."""
    server = LocalSite().start()  # on 127.0.0.1
    try:
        server.pages["/"] = Resource(b"end")
        seed = f"{host}:{server.port}/"
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(seed + "\n")
        for args, where in (([seed], "argument"), ([str(seeds)], f"{seeds}:1")):
            result = run(*args, "--quiet")
            assert result.returncode == 2, result.stderr
            assert (f"{where}: {seed!r} is not a valid http(s) URL (no scheme; write "
                    f"http://{seed}); skipped") in result.stderr, result.stderr
        if host in ("localhost", "127.0.0.1"):  # (the site listens on IPv4 loopback)
            told = run(f"http://{seed}", "--quiet", "--delay", "0")
            assert told.returncode == 0, told.stderr
    finally:
        server.stop()
    assert "write https://example.org)" in run("example.org").stderr  # a name: https
    assert "write" not in run("foo").stderr  # a bare word: no host to guess


PACE_NOTE = ("minicrawl: pace per host: a request every 0.25 s at most (--delay), 2 at once "
             "(--per-host): 4 requests a second to each host at most")


def test_the_default_pace_is_told_once_at_the_start(server):
    """The first crawl after the demo (which sets its own pace) ran at ~4 pages/s with nothing
    saying why: the start says the pace per host and the options that change it, once, on
    stderr; not when the pace was chosen, nor for the demo, nor with --quiet."""
    server.pages["/"] = Resource(b'<a href="/a">a</a><a href="/b">b</a>')
    server.pages["/a"] = server.pages["/b"] = Resource(b"end")
    told = run(server.url("/"))
    assert told.returncode == 0, told.stderr
    assert told.stderr.count(PACE_NOTE) == 1, told.stderr
    assert "--delay 0 --per-host 8" in told.stderr.splitlines()[0]  # first: at the start
    assert told.stdout.startswith("\nCrawl finished: 3 pages")  # (stdout: the summary alone)
    for chosen in (["--delay", "0.25"], ["--per-host", "2"], ["--delay=0.1"], ["--quiet"]):
        quiet = run(server.url("/"), *chosen)
        assert quiet.returncode == 0 and "pace per host" not in quiet.stderr, (chosen, quiet)
    demo = run("--demo", "--max-pages", "5")
    assert demo.returncode == 0 and "pace per host" not in demo.stdout + demo.stderr


def test_demo_crawls_the_whole_demo_site_offline():
    result = run("--demo", "--threads", "8", "--verbose")
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"missed 0, fetched twice 0, unreachable fetched 0", result.stdout)
    assert "pages_per_s" in result.stdout  # every statistic, with --verbose


def test_demo_crawls_its_loopback_site_even_with_a_proxy_in_the_environment(monkeypatch):
    """The demo site is the process's own, on loopback: a proxy the machine names (nothing
    listens at this one) is not asked for it, and NO_PROXY's own entries are kept."""
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "example.org")
    result = run("--demo", "--max-depth", "1")  # (--quiet: no server log)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "missed 0, fetched twice 0" in result.stdout


def test_demo_with_a_filter_too_small_names_the_missed_pages_and_why():
    result = run("--demo", "--visited", "bloom", "--expected-urls", "100", "--error-rate", "0.01")
    assert result.returncode == 1, result.stdout + result.stderr
    missed = int(re.search(r"missed (\d+),", result.stdout).group(1))
    assert missed > 10  # 352 URLs in a filter for 100: dozens are taken for seen
    assert re.search(rf"^Missed: (/\S+ ){{5}}and {missed - 5} more$", result.stdout, re.M)
    why = re.search(r'^Of the (\d+) missed: Visited answers "seen" for (\d+): false positives '
                    r"of its Bloom filter \(size it with --expected-urls and --error-rate\)"
                    r"(?:; (\d+) linked only from pages that were missed)?$", result.stdout, re.M)
    assert why, result.stdout
    assert int(why.group(1)) == missed
    assert int(why.group(2)) + int(why.group(3) or 0) == missed  # each missed URL explained
    assert "never offered" not in result.stdout


def test_demo_expects_only_what_the_depth_limit_lets_the_crawl_reach():
    result = run("--demo", "--max-depth", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    reachable = int(re.search(r"(\d+) URLs reachable from the seed in 2 hops", result.stdout)[1])
    assert 1 < reachable < 300
    assert f"{reachable} requests for {reachable} paths; reachable {reachable}, missed 0, " \
           "fetched twice 0, unreachable fetched 0" in result.stdout


def test_demo_under_a_page_cap_counts_no_page_as_missed():
    result = run("--demo", "--max-pages", "20")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "missed: not counted under a page cap, fetched twice 0, unreachable fetched 0" \
        in result.stdout
    assert "Server log: 20 requests for 20 paths" in result.stdout  # a hard cap


def test_demo_tells_a_lost_url_from_a_false_positive_and_a_link_not_followed():
    from minicrawl.demo import _why_missed

    missed = ["/a", "/b", "/c", "/d"]
    assert _why_missed(missed, ["/a"], ["/a", "/b"], exact=True) == (
        "Of the 4 missed: 1 lost after the exact Visited took them (/a); 1 linked from fetched "
        "pages but never offered to Visited (/b); 2 linked only from pages that were missed")
    assert _why_missed(missed, ["/a", "/b", "/c", "/d"], [], exact=False) == (
        'Of the 4 missed: Visited answers "seen" for 4: false positives of its Bloom filter '
        "(size it with --expected-urls and --error-rate)")


def test_help_is_grouped_with_defaults():
    result = run("--help")
    assert result.returncode == 0
    for group in ("Workers:", "Visited:", "Scope:", "Output:"):
        assert group in result.stdout
    help_text = " ".join(result.stdout.split())
    assert "(default: 8; 1 to 1,024)" in help_text  # --threads, with its bounds
    assert "(default: 0.25; 0 to 86,400)" in help_text  # --delay


def help_by_option(text: str) -> dict[str, str]:
    """``--help``'s text of each option (its flag → its help, joined on one line)."""
    helps: dict[str, str] = {}
    flag = None
    for line in text.splitlines():
        if match := re.match(r"^  (-\w, )?(--[\w-]+)( [^ ].*?)?(?:  +(.*))?$", line):
            flag = match[2]
            helps[flag] = match[4] or ""
        elif flag and line.startswith(" " * 10):
            helps[flag] += " " + line.strip()
        else:
            flag = None
    return helps


def test_help_says_each_option_s_default_once():
    """``--max-pages-per-host`` said "(default: no limit) (default: None; 1 to …)": its own
    text named the default, and the bounds added another. Each option states it once."""
    result = run("--help")
    helps = help_by_option(result.stdout)
    assert {"--threads", "--max-pages-per-host", "--error-rate", "--proxy", "--crawl"} <= set(
        helps)
    for flag, text in helps.items():
        if flag in ("--help", "--version"):
            continue
        said = re.findall(r"\bdefaults?\b", text.replace("(default: default)", "(default: X)"))
        assert len(said) == 1, (flag, text)
        assert "(default: None" not in text, (flag, text)
    assert "(default: no limit; 1 to 1,000,000,000,000)" in helps["--max-pages-per-host"]


def test_stats_to_standard_output_ends_with_a_newline(server, tmp_path):
    """``--stats -`` is JSON a program reads, and a text on a terminal: its last line ends
    with a newline (the shell's prompt came right after the brace); a --stats file too."""
    server.pages["/"] = Resource(b"end")
    result = run(server.url("/"), "--stats", "-", "--delay", "0")
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("}\n"), result.stdout[-20:]
    assert json.loads(result.stdout)["pages"] == 1
    stats = tmp_path / "stats.json"
    assert run(server.url("/"), "--stats", str(stats), "--quiet").returncode == 0
    assert stats.read_text().endswith("}\n")


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
    (pages that declare no encoding and are not ASCII), redis-py (shared crawls) and rich (the
    live view) cost ~47 MB of memory and ~0.25 s of start-up together, more than the rest of a
    small crawl; regex (--include, --exclude), warcio (--warc), tinycss2 and the mirror's modules
    (--mirror, --check-links), the sitemaps' (--sitemaps) and the report's another 0.1 s."""
    html = {"Content-Type": "text/html"}  # no charset: the page's <meta> is read
    server.pages["/"] = Resource(b'<meta charset="utf-8"><a href="/a">a</a><a href="/b">b</a>',
                                 headers=html)
    server.pages["/a"] = Resource(b'<meta charset="UTF-8"><a href="/">home</a>', headers=html)
    script = ("import sys\nfrom minicrawl.cli.main import main\n"
              f"code = main([{server.url('/')!r}, '--quiet', '--delay', '0'])\n"
              "print(code, sorted({'numpy', 'bs4', 'redis', 'rich', 'regex', 'warcio', "
              "'tinycss2', 'minicrawl.mirror.saver', 'minicrawl.mirror.rewrite', "
              "'minicrawl.sitemaps.reader', 'minicrawl.watch.report'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.stdout.split("\n")[-2] == "0 []", done.stdout + done.stderr
    assert server.fetch_counts().keys() >= {"/", "/a", "/b"}


def test_a_hundred_thousand_seeds_start_at_once(tmp_path, server):
    """100,000 seeds (some repeated) go through Visited once each: the seeds new to it were
    compared with a list of the others (quadratic: 63 s before the first request here); the
    bound below is an error bound, ~100× what the crawl takes now, not a measure of speed. The
    file is read as the crawl runs, so the page cap stops its reading too (tests/test_seeds.py
    has the million-line file)."""
    server.pages.update({f"/p{i}": Resource(b"end") for i in range(100)})
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"{server.url(f'/p{i}')}\n" for i in range(100_000))
                     + f"{server.url('/p1')}\n")
    stats = tmp_path / "stats.json"
    result = run(str(seeds), "--max-pages", "20", "--threads", "4", "--quiet",
                 "--ignore-robots", "--delay", "0", "--stats", str(stats), timeout=30)
    assert result.returncode == 0, result.stderr
    assert 20 <= json.loads(stats.read_text())["seeds"] < 100_000
    assert len(server.requests) == 20  # the page cap, as the server saw it
