"""A shared crawl keeps the single crawl's promises across processes: the per-host gap and
``--per-host`` as the servers see them, and ``--max-pages`` / ``--max-pages-per-host`` counted once
for the whole crawl — real ``run.py`` processes, a real redis-server, real loopback servers.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from minicrawl.demo.site import Resource, Slow

ROOT = Path(__file__).resolve().parent.parent
# Three gaps in four within this much of the delay: wake-ups, Redis round trips of 3 processes
# (not the mean: on this shared 2-core machine one starved thread can stall a host a second).
SLACK = 0.08


def html(*hrefs: str) -> Resource:
    return Resource("".join(f'<a href="{h}">{h}</a>' for h in hrefs).encode())


def run_crawlers(redis_url: str, seeds: list[str], n: int, *flags: str,
                 out: Path | None = None) -> None:
    name = "t" + uuid.uuid4().hex[:8]
    procs = []
    for k in range(n):
        args = [sys.executable, "run.py", *seeds, "--redis", redis_url, "--crawl", name,
                "--threads", "4", "--quiet", "--reclaim-after", "3", "--timeout", "5", *flags]
        if out is not None:
            args += ["--out", str(out / f"out{k}.jsonl")]
        procs.append(subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True,
                                      stdin=subprocess.DEVNULL))
    for p in procs:
        try:
            _, err = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise
        assert p.returncode == 0 and "Traceback" not in err, err


@pytest.mark.timeout(120)
def test_three_processes_keep_the_gap_on_two_hosts(redis_server, loopback_hosts):
    sites = loopback_hosts(2, 12)
    run_crawlers(redis_server.url, [s.url("/") for s in sites], 3,
                 "--delay", "0.2", "--per-host", "1")
    for site in sites:
        paths = [r.path for r in site.requests]
        # robots.txt at most once per process (by each that crawls the host), pages once
        assert 1 <= paths.count("/robots.txt") <= 3, paths
        assert sorted(site.fetch_counts().values()) == [1] * 13, paths
        times = [r.time for r in site.requests]
        gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
        assert min(gaps) >= 0.2, sorted(gaps)[:3]
        assert statistics.quantiles(gaps, n=4)[2] <= 0.2 + SLACK, sorted(gaps)


@pytest.mark.timeout(120)
def test_per_host_counts_requests_in_flight_across_processes(redis_server, loopback_hosts):
    [site] = loopback_hosts(1, 12)
    slow = Slow(html(), 0.3)
    site.pages.update({f"/{k}": slow for k in range(1, 13)})
    run_crawlers(redis_server.url, [site.url("/")], 3, "--delay", "0", "--per-host", "2")
    assert len(site.fetch_counts()) == 13
    assert slow.peak == 2  # not 2 per process


@pytest.mark.timeout(120)
def test_page_caps_hold_for_the_whole_shared_crawl(redis_server, loopback_hosts, tmp_path):
    sites = loopback_hosts(2, 40)
    run_crawlers(redis_server.url, [s.url("/") for s in sites], 3, "--delay", "0",
                 "--per-host", "4", "--max-pages", "30", out=tmp_path)
    fetched = sum(sum(s.fetch_counts().values()) for s in sites)
    lines = [json.loads(line) for f in tmp_path.glob("out*.jsonl")
             for line in f.read_text().splitlines()]
    assert fetched == 30  # not 30 per process
    assert len(lines) == 30 and len({r["url"] for r in lines}) == 30
    assert all(r["status"] == 200 for r in lines)


@pytest.mark.timeout(120)
def test_max_pages_per_host_holds_for_the_whole_shared_crawl(redis_server, loopback_hosts,
                                                             tmp_path):
    sites = loopback_hosts(2, 30)
    run_crawlers(redis_server.url, [s.url("/") for s in sites], 3, "--delay", "0",
                 "--per-host", "4", "--max-pages-per-host", "7", out=tmp_path)
    assert [sum(s.fetch_counts().values()) for s in sites] == [7, 7]
    fetched = [json.loads(line) for f in tmp_path.glob("out*.jsonl")
               for line in f.read_text().splitlines()]
    assert len([r for r in fetched if r["status"] == 200]) == 14


@pytest.mark.timeout(120)
def test_a_killed_process_does_not_keep_its_host_slot(redis_server, loopback_hosts):
    """kill -9 while its request is in flight: its lease lapses (--reclaim-after 3), and the
    process started after it crawls the host, one request at a time, to the end."""
    import os
    import signal

    [site] = loopback_hosts(1, 6)
    slow = Slow(html(*[f"/{k}" for k in range(1, 7)]), 0.5)
    site.pages["/"] = slow
    name = "t" + uuid.uuid4().hex[:8]
    args = [sys.executable, "run.py", site.url("/"), "--redis", redis_server.url, "--crawl",
            name, "--threads", "4", "--quiet", "--reclaim-after", "3", "--timeout", "5",
            "--delay", "0", "--per-host", "1", "--ignore-robots"]
    victim = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while slow.busy == 0:  # its request for / is in flight: it holds the host's slot
        assert time.monotonic() < deadline and victim.poll() is None
        time.sleep(0.005)
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert sorted(site.fetch_counts()) == ["/", *[f"/{k}" for k in range(1, 7)]]
    assert slow.peak == 1  # (a lease that never lapsed would stall it forever)
