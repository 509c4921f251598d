"""The live view: what the panel says, and that it stays off when nobody is watching."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from terminal import on_a_terminal, screen

from minicrawl import Crawler
from minicrawl.demo.site import Resource
from minicrawl.watch.progress import Progress, ProgressReader, RecentRate, read_progress
from minicrawl.watch.view import LiveView, render_progress, wants_live_view

ROOT = Path(__file__).resolve().parent.parent
# Loopback servers need no politeness pacing (the politeness tests cover it).
FAST = {"delay": 0, "per_host": 64}


def text_of(renderable: object, width: int = 140) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


def progress(**changes: object) -> Progress:
    values: dict = dict(elapsed=12.5, pages=1234, todo=5678, in_flight=7, workers=16,
                        at_work=3, visited=9012,
                        fill_ratio=0.0312, fp_rate=9.1e-13, links_new=8000, links_dropped=4321,
                        links_out_of_scope=222, errors=33, max_pages=None, problems=40,
                        status_4xx=30, status_5xx=3, not_requested=12)
    values.update(changes)
    return Progress(**values)


def test_panel_shows_every_gauge():
    text = text_of(render_progress(progress(), pages_per_s=98.7))
    for expected in ("1,234", "5,678 waiting", "7 in flight", "3 of 16 at work", "9,012 URLs",
                     "fill 3.1200%", "9.10e-13", "4,321 dropped by Visited", "8,000 new",
                     "222 out of scope", "problems", "40 — 30 HTTP 4xx, 3 HTTP 5xx, 7 failed",
                     "12 not requested", "98.7 pages/s now", "98.7 average",
                     "12.5 s elapsed"):
        assert expected in text, (expected, text)
    assert "━" not in text  # no bar without --max-pages


def test_panel_counts_the_links_checked_apart_from_the_pages():
    assert "checked" not in text_of(render_progress(progress(), pages_per_s=1.0))
    text = text_of(render_progress(progress(pages=250, max_pages=1000, checked=4321),
                                   pages_per_s=1.0))
    assert "250 / 1,000" in text and "4,321 URLs the pages lead to" in text


def test_panel_has_a_bar_with_max_pages():
    text = text_of(render_progress(progress(pages=250, max_pages=1000), pages_per_s=1.0))
    assert "250 / 1,000" in text and "(25%)" in text
    assert "━" in text


def test_panel_for_an_exact_visited_says_so():
    text = text_of(render_progress(progress(fill_ratio=None, fp_rate=None), pages_per_s=1.0))
    assert "fill n/a" in text and "none (exact)" in text


def test_render_reads_a_real_crawl(server):
    server.pages["/"] = Resource(b'<a href="/a">a</a><a href="/b">b</a><a href="/">me</a>')
    server.pages["/a"] = Resource(b'<a href="/b">b</a>')
    server.pages["/b"] = Resource(b"end")
    crawler = Crawler([server.url("/")], threads=2, visited="exact", **FAST)
    crawler.run()
    p = read_progress(crawler.watched)
    assert (p.pages, p.todo, p.in_flight, p.visited) == (3, 0, 0, 3)
    assert p.links_new == 2 and p.links_dropped == 2  # "/" on "/" and "/b" on "/a"
    text = text_of(LiveView(crawler.watched, enabled=False).render())
    assert "3 URLs" in text and "2 dropped by Visited" in text


def test_recent_rate_uses_the_last_seconds_only():
    rate = RecentRate(window=2.0)
    assert rate.update(progress(pages=0), now=100.0) == 0.0
    assert rate.update(progress(pages=100), now=101.0) == 100.0
    assert rate.update(progress(pages=200), now=102.0) == 100.0
    # after a stall the old readings age out and the rate falls to what happens now
    assert rate.update(progress(pages=200), now=104.0) == 0.0


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_live_view_only_on_a_terminal_and_not_quiet():
    assert wants_live_view(quiet=False, stream=FakeTTY())
    assert not wants_live_view(quiet=True, stream=FakeTTY())
    assert not wants_live_view(quiet=False, stream=io.StringIO())
    assert not wants_live_view(quiet=False, stream=FakeTTY(), trace_to_stdout=True)


def test_live_view_draws_on_a_terminal_console(server):
    server.pages["/"] = Resource(b'<a href="/a">a</a>')
    server.pages["/a"] = Resource(b"end")
    crawler = Crawler([server.url("/")], threads=1, max_pages=2, **FAST)
    out = io.StringIO()
    with LiveView(crawler.watched, console=Console(file=out, force_terminal=True, width=120)):
        crawler.run()
    assert "pages done" in out.getvalue() and "2 / 2" in out.getvalue()


def test_no_panel_when_stdout_is_a_pipe(server):
    server.pages["/"] = Resource(b"end")
    result = subprocess.run([sys.executable, str(ROOT / "run.py"), server.url("/")],
                            capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "Crawl finished" in result.stdout  # the summary is printed …
    assert "pages done" not in result.stdout and "╭" not in result.stdout  # … the panel is not


def test_the_filter_is_counted_only_as_often_as_the_budget_allows(server):
    class SlowFilter:  # a Visited whose fill takes 5 ms to count, like a big Bloom filter
        counted = 0

        def add_many(self, urls):
            return [True for _ in urls]

        def __len__(self):
            return 1

        @property
        def fill_ratio(self):
            SlowFilter.counted += 1
            time.sleep(0.005)
            return 0.5

        current_fp_rate = 0.004

    server.pages["/"] = Resource(b"end")
    crawler = Crawler([server.url("/")], visited_filter=SlowFilter(), **FAST)
    reader = ProgressReader(crawler.watched, budget=0.01)  # 5 ms of counting per 0.5 s at most
    for _ in range(40):
        assert reader.read().fill_ratio == 0.5
    assert SlowFilter.counted == 1
    reader.read(exact=True)
    assert SlowFilter.counted == 2


# -- on a terminal, as a user sees it (tests/terminal.py: a pty, and the screen it is left with)

PANEL_TOP = "╭─ minicrawl"


def slow_chain(server, pages: int = 1000, seconds: float = 0.2) -> None:
    """Pages /, /1, /2 … each linking the next two, each answered after ``seconds``."""
    def slow(request):
        time.sleep(seconds)
        n = int(request.path.strip("/") or 0)
        return Resource(f'<a href="/{n + 1}">next</a><a href="/{n + 2}">next</a>'.encode())

    for n in range(pages):
        server.pages[f"/{n}" if n else "/"] = slow


def panel_row(lines: list[str], label: str) -> str:
    """The value of the last panel's row ``label`` ("" if there is none)."""
    rows = [line for line in lines if re.match(rf"^│\s+{re.escape(label)}  ", line)]
    return rows[-1].strip("│ ").removeprefix(label).strip() if rows else ""


def test_after_ctrl_c_the_final_panel_replaces_the_last_frame(server):
    """Ctrl-C typed on the terminal: the "interrupted" warning was written past the panel, so
    the next frame was drawn a line too low and the top of the last one stayed above it. The
    warning is printed above the panel, and one panel is left: the final one, then the
    summary."""
    slow_chain(server)
    code, out = on_a_terminal(
        [server.url("/"), "--threads", "4", "--delay", "0"],
        ctrl_c_when=lambda text: re.search(r"pages done\s+\S*\s*[3-9]\b", text) is not None)
    assert code == 130, out[-2000:]
    lines = screen(out)
    assert sum(PANEL_TOP in line for line in lines) == 1, "\n".join(lines)
    top = next(i for i, line in enumerate(lines) if PANEL_TOP in line)
    warned = [i for i, line in enumerate(lines) if "interrupted: finishing the pages" in line]
    assert warned and warned[0] < top, "\n".join(lines)  # told above the panel, and kept
    finished = next(i for i, line in enumerate(lines) if "Crawl finished (interrupted)" in line)
    assert finished > top
    pages = int(re.search(r"(\d+) pages", lines[finished])[1])
    assert panel_row(lines, "pages done") == str(pages)  # the final frame: the summary's count


def test_with_state_the_panel_says_the_page_cap_is_this_run_s(server, tmp_path):
    """With --state the cap is one run's (the next run goes on): "3 / 3 (100%)" read as the
    whole crawl's."""
    slow_chain(server, seconds=0.05)
    state = tmp_path / "state"
    for run in (1, 2):
        code, out = on_a_terminal([server.url("/"), "--state", str(state), "--max-pages", "3",
                                   "--delay", "0"])
        assert code == 0, out[-2000:]
        lines = screen(out)
        assert panel_row(lines, "pages done").startswith("3 of this run's 3  (100%)"), lines
        assert "Crawl finished: 3 pages this run" in out, (run, out[-2000:])
    code, out = on_a_terminal([server.url("/"), "--max-pages", "3", "--delay", "0"])
    assert panel_row(screen(out), "pages done").startswith("3 / 3  (100%)")  # without: a total


def test_the_demo_s_panel_and_summary_count_the_same_problems_and_pages(tmp_path):
    """The demo's panel said "errors 0" beside status_4xx 29, and its stats "pages 353" for 343
    requests (10 URLs robots.txt disallows, never requested, counted as pages). A problem is a
    4xx or 5xx answer or an error, counted once a page; a URL never requested is no page; the
    panel and the summary say the same."""
    stats = tmp_path / "stats.json"
    code, out = on_a_terminal(["--demo", "--stats", str(stats)])
    assert code == 0, out[-3000:]
    lines = screen(out)
    saved = json.loads(stats.read_text())
    assert saved["pages"] == saved["requests"] == 343, saved
    assert saved["robots_disallowed"] == 10 and saved["problems"] == saved["status_4xx"] == 29
    assert saved.get("errors", 0) == 0
    assert panel_row(lines, "pages done") == "343"
    assert panel_row(lines, "problems") == "29 — 29 HTTP 4xx; 10 not requested (robots.txt, " \
                                           "a cap)"
    summary = "\n".join(lines[next(i for i, line in enumerate(lines)
                                   if line.startswith("Crawl finished")):])
    assert "Crawl finished: 343 pages in " in summary
    assert "10 URLs not requested (10 by robots.txt)" in summary
    assert "Problems: 29 — 29 HTTP 4xx. The first" in summary
