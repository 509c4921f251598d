"""The decision trace: one line per decision, consistent with what the crawl really did."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from minicrawl import Crawler
from minicrawl.demo.site import Resource, chain, sequence
from minicrawl.watch.trace import Tracer

ROOT = Path(__file__).resolve().parent.parent
# Loopback servers need no politeness pacing (the politeness tests cover it).
FAST = {"delay": 0, "per_host": 64}


def traced_crawl(make_site, tmp_path, site_kwargs=None, **settings):
    server, site = make_site(**(site_kwargs or {}))
    path = tmp_path / "trace.txt"
    crawler = Crawler([server.url("/")], trace=str(path), **{**FAST, **settings})
    stats = crawler.run()
    return server, site, stats, path.read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("threads", [1, 8])
def test_trace_mirrors_the_crawl(make_site, tmp_path, threads):
    server, site, stats, lines = traced_crawl(make_site, tmp_path, {"pages": 80},
                                              threads=threads)
    def count(pattern: str, after: str = "") -> int:
        """Lines matching ``pattern`` (whose previous line starts with ``after``)."""
        return sum(1 for i, line in enumerate(lines)
                   if re.match(pattern, line) and lines[i - 1].startswith(after))

    assert lines[0] == f"SEED {server.url('/')} → TODO (depth 0)"
    assert lines[-1] == f"DONE after {stats['pages']} pages: ToDo is empty and no worker is busy"
    assert count(r"WORKER \d+ TAKES ") == stats["pages"]
    assert count(r"WORKER \d+ FETCHED ") == sum(server.fetch_counts().values())
    no, yes = r"    VISITED\? no → TODO \(depth \d+\)$", r"    VISITED\? yes → drop$"
    assert count(no, after="    EXTRACT ") == stats["links_new"]
    assert count(yes, after="    EXTRACT ") == stats["links_filtered"]
    assert count(yes, after="    REDIRECT ") == stats["redirects_to_visited"]
    assert count(r"    OUT OF SCOPE → drop$") == stats["links_out_of_scope"]
    assert count(r"    NOT A URL TO CRAWL \(not http\(s\)\) → drop$") == stats["links_not_http"]
    assert count(r"WORKER \d+ FETCHED 404 ") == stats["status_4xx"]
    assert count(r"    REDIRECT http://\S+ → http://\S+$") > 0


def test_every_decision_follows_its_extract_line_and_todo_precedes_takes(make_site, tmp_path):
    server, site, stats, lines = traced_crawl(make_site, tmp_path, {"pages": 120}, threads=8)
    queued: set[str] = set()
    for i, line in enumerate(lines):
        if line.startswith("    VISITED? no → TODO"):
            extract = lines[i - 1]
            assert extract.startswith("    EXTRACT "), (i, extract)
            queued.add(extract.split()[1])
        elif m := re.match(r"SEED (\S+) → TODO", line):
            queued.add(m.group(1))
        elif m := re.match(r"WORKER \d+ TAKES (\S+) \(depth \d+\)$", line):
            # a worker can only take what an earlier line put in ToDo
            assert m.group(1) in queued, (i, line)
        elif line.startswith("    ") and not line.startswith(("    EXTRACT ", "    REDIRECT ",
                                                                 "    (")):
            assert lines[i - 1].startswith(("    EXTRACT ", "    REDIRECT ")), (i, line)


def test_too_deep_links_are_traced(make_site, tmp_path):
    _, _, stats, lines = traced_crawl(make_site, tmp_path, {"pages": 40, "redirects": False},
                                      threads=1, max_depth=1)
    too_deep = [x for x in lines if x.startswith("    TOO DEEP (depth 2 > max depth 1) → drop")]
    assert len(too_deep) == stats["links_too_deep"] > 0


def test_trace_to_stdout_from_the_command_line(server):
    server.pages["/"] = Resource(b'<a href="/a">a</a><a href="mailto:x@example.org">m</a>')
    server.pages["/a"] = Resource(b'<a href="/">home</a>')
    result = subprocess.run([sys.executable, str(ROOT / "run.py"), server.url("/"), "--trace",
                             "--threads", "1", "--delay", "0"], capture_output=True, text=True,
                            timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    root, a = server.url("/"), server.url("/a")
    expected = [
        f"SEED {root} → TODO (depth 0)",
        f"WORKER 1 TAKES {root} (depth 0)",
        re.compile(rf"WORKER 1 FETCHED 200 \d+ bytes {re.escape(root)}$"),
        f"    EXTRACT {a} from {root}",
        "    VISITED? no → TODO (depth 1)",
        f"    EXTRACT mailto:x@example.org from {root}",
        "    NOT A URL TO CRAWL (not http(s)) → drop",
        f"WORKER 1 TAKES {a} (depth 1)",
        re.compile(rf"WORKER 1 FETCHED 200 \d+ bytes {re.escape(a)}$"),
        f"    EXTRACT {root} from {a}",
        "    VISITED? yes → drop",
        "DONE after 2 pages: ToDo is empty and no worker is busy",
    ]
    got = result.stdout.splitlines()[:len(expected)]
    for want, line in zip(expected, got, strict=True):
        assert want.match(line) if isinstance(want, re.Pattern) else want == line, (want, line)
    assert "Crawl finished" in result.stdout  # the summary still follows


def test_each_link_is_told_its_own_fate_in_page_order(server, tmp_path):
    """Links the door refuses (out of scope, a trap, excluded) between links it offers Visited:
    each keeps its place and its reason, each offered one is new or seen, and the counts agree
    with the lines (CrawlHooks._decided sorts them)."""
    server.pages["/"] = Resource(b'<a href="/a">a</a><a href="http://elsewhere.invalid/x">x</a>'
                                 b'<a href="/t/t/t/t/t">t</a><a href="/">self</a>'
                                 b'<a href="/no/b">n</a><a href="/b">b</a>')
    server.pages["/a"] = Resource(b"a")
    server.pages["/b"] = Resource(b"b")
    path = tmp_path / "trace.txt"
    stats = Crawler([server.url("/")], trace=str(path), threads=1, exclude=["/no/"],
                    **FAST).run()
    root = server.url("/")
    block = path.read_text(encoding="utf-8").splitlines()[3:15]
    assert block == [
        f"    EXTRACT {server.url('/a')} from {root}", "    VISITED? no → TODO (depth 1)",
        f"    EXTRACT http://elsewhere.invalid/x from {root}", "    OUT OF SCOPE → drop",
        f"    EXTRACT {server.url('/t/t/t/t/t')} from {root}", "    TRAP → drop",
        f"    EXTRACT {root} from {root}", "    VISITED? yes → drop",
        f"    EXTRACT {server.url('/no/b')} from {root}", "    OUT OF SCOPE → drop",
        f"    EXTRACT {server.url('/b')} from {root}", "    VISITED? no → TODO (depth 1)"]
    assert (stats["links_out_of_scope"], stats["links_trap"], stats["links_filtered"],
            stats["links_new"]) == (2, 1, 1, 2)


def test_trace_swallowing_the_seed_is_a_usage_error():
    result = subprocess.run([sys.executable, str(ROOT / "run.py"), "--trace",
                             "http://127.0.0.1:9/"], capture_output=True, text=True, timeout=60,
                            cwd=ROOT)
    assert result.returncode == 2
    assert "put --trace after the seeds" in result.stderr


def test_no_tracer_exists_when_tracing_is_off(server, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a Tracer was built although tracing is off")

    monkeypatch.setattr(Tracer, "__init__", refuse)
    server.pages["/"] = Resource(b'<a href="/a">a</a>')
    server.pages["/a"] = Resource(b"end")
    crawler = Crawler([server.url("/")], threads=2, **FAST)
    assert crawler.run()["pages"] == 2
    assert not any(isinstance(o, Tracer) for o in crawler.events.observers)


def test_blocks_from_many_threads_never_interleave():
    out = io.StringIO()
    tracer = Tracer(out)

    def write(n: int) -> None:
        for i in range(200):
            tracer.write([f"BLOCK {n} {i} start", *[f"    {n} {i} {j}" for j in range(5)]])

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = out.getvalue().splitlines()
    assert len(lines) == 8 * 200 * 6
    for k in range(0, len(lines), 6):
        n, i = lines[k].split()[1:3]
        assert lines[k + 1: k + 6] == [f"    {n} {i} {j}" for j in range(5)]


def test_robots_drop_line_for_the_politeness_layer():
    out = io.StringIO()
    tracer = Tracer(out)
    tracer.robots_drop("http://example.org/private/", worker=3)
    tracer.robots_drop("http://example.org/admin/")
    assert out.getvalue().splitlines() == ["WORKER 3 ROBOTS → drop http://example.org/private/",
                                           "ROBOTS → drop http://example.org/admin/"]


def test_a_reader_that_leaves_stops_the_crawl_quietly(server):
    """``minicrawl … --trace | head``: once head has its lines the crawl ends, no traceback."""
    server.pages.update(chain(2000))
    proc = subprocess.Popen([sys.executable, str(ROOT / "run.py"), server.url("/"), "--trace",
                             "--delay", "0.01"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    head = [proc.stdout.readline() for _ in range(3)]
    proc.stdout.close()  # what head does after its lines
    stderr = proc.stderr.read()
    assert proc.wait(timeout=30) == 0, stderr
    assert head[0].startswith("SEED ") and "Traceback" not in stderr
    assert len(server.requests) < 1000  # it stopped, it did not crawl on unseen


def test_a_retry_is_traced_as_going_back_to_todo(server, tmp_path):
    server.pages["/"] = sequence(Resource(b"busy", 503), Resource(b"<p>fine</p>"))
    path = tmp_path / "trace.txt"
    Crawler([server.url("/")], trace=str(path), retry_backoff=0.05, threads=1, **FAST).run()
    lines = path.read_text().splitlines()
    root = server.url("/")
    assert re.fullmatch(rf"WORKER 1 FETCHED 503 4 bytes {re.escape(root)}", lines[2])
    assert re.fullmatch(rf"WORKER 1 RETRY LATER {re.escape(root)} → TODO in \d+\.\d s "
                        r"\(attempt 2 of 3\)", lines[3])
    assert lines[4] == f"WORKER 1 TAKES {root} (depth 0)"


def test_a_resumed_crawl_traces_what_it_puts_back(server, tmp_path):
    def chain(request):
        n = int(request.path.strip("/") or 0)
        return Resource(f'<a href="/{n + 1}">next</a>'.encode())

    for n in range(30):
        server.pages[f"/{n}" if n else "/"] = chain
    state, path = tmp_path / "state", tmp_path / "trace.txt"
    Crawler([server.url("/")], state=str(state), max_pages=5, threads=1, **FAST).run()
    Crawler([server.url("/")], state=str(state), trace=str(path), threads=1, **FAST).run()
    lines = path.read_text().splitlines()
    resumed = [x for x in lines if x.startswith("RESUMED ")]
    assert resumed and resumed[0] == f"RESUMED {server.url('/5')} → TODO (depth 5)"
    first_take = next(x for x in lines if " TAKES " in x)
    assert lines.index(resumed[0]) < lines.index(first_take)
