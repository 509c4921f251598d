"""The Observer contract (interfaces.Observer), run over every implementation — the core's
Summary and PrintPages, run.py's --out file, the library's on_page callback and the Events hub
that the core's loop tells in run.py: thread-safe, never raising, and what each reports is
exact when 16 workers report at once."""

from __future__ import annotations

import io
import json
import tempfile
import threading
from pathlib import Path

import pytest

from minicrawl.core.__main__ import PrintPages
from minicrawl.core.crawler import Summary
from minicrawl.core.interfaces import Page
from minicrawl.events import Callback, Events
from minicrawl.page import error_of
from minicrawl.records.output import Output
from minicrawl.stats import Stats

LINKS = ["http://a.test/1", "http://a.test/2", "http://a.test/3"]
PAGES = [Page(f"http://a.test/{n}", 1, "http://a.test/", f"http://a.test/{n}", (200, 404)[n % 2],
              {"content-type": "text/html"}, b"x" * 10, LINKS, new=n % 3)
         for n in range(800)]
PAGES += [Page("http://dead.test/", 0, None, "http://dead.test/",
               error="ConnectionError: refused")] * 200


def summary_check(observer: Summary, _: object) -> None:
    assert observer.pages == 1000 and observer.errors == 200
    assert observer.statuses == {200: 400, 404: 400}
    assert observer.bytes == 8000


def print_check(observer: PrintPages, stream: io.StringIO) -> None:
    lines = stream.getvalue().splitlines()
    assert sorted(lines) == sorted(
        [f"{p.status} {p.url} 3 {p.new}" for p in PAGES[:800]]
        + ["--- http://dead.test/ 0 0 ConnectionError: refused"] * 200)


class OutFile:
    """run.py's ``--out`` (minicrawl.records.output.Output), and the file it writes, read back."""

    def __init__(self) -> None:
        self.dir = tempfile.TemporaryDirectory()
        self.path = Path(self.dir.name) / "out.jsonl"
        self.output = Output(self.path)

    def lines(self) -> list[dict]:
        self.output.close()
        lines = [json.loads(line) for line in self.path.read_text().splitlines()]
        self.dir.cleanup()
        return lines


def out_check(observer: Output, made: OutFile) -> None:
    lines = made.lines()
    assert sorted((r["url"], r["status"], r["links"], r["new"], r["error"]) for r in lines) == \
        sorted((p.url, p.status, len(p.links), p.new, error_of(p.status, p.error)) for p in PAGES)


def callback_check(observer: Events, told: list[Page]) -> None:
    assert sorted(id(p) for p in told) == sorted(id(p) for p in PAGES)  # each once


def failing_callback_check(observer: Events, stats: Stats) -> None:
    assert stats.snapshot()["callback_errors"] == 1000  # counted, never raised


def failing(page: Page) -> None:
    raise RuntimeError("a bug in the caller's on_page")


IMPLEMENTATIONS = {
    "summary": (lambda made: Summary(), summary_check, None),
    "print": (lambda stream: PrintPages(stream), print_check, io.StringIO),
    "run.py --out": (lambda made: made.output, out_check, OutFile),
    # run.py's Events, as the core's loop is given it, telling the library's on_page callback
    "run.py events": (lambda told: Events([Callback(told.append, Stats())]), callback_check,
                      list),
    "run.py events, failing callback": (lambda stats: Events([Callback(failing, stats)], stats),
                                        failing_callback_check, Stats),
}


@pytest.mark.parametrize("name", sorted(IMPLEMENTATIONS))
def test_sixteen_workers_reporting_at_once(name: str) -> None:
    make, check, context = IMPLEMENTATIONS[name]
    stream = context() if context is not None else None
    observer = make(stream)
    start = threading.Barrier(16)

    def report(share: list[Page]) -> None:
        start.wait()
        for page in share:
            observer.on_page(page)

    threads = [threading.Thread(target=report, args=(PAGES[n::16],)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(observer, stream)


def test_print_pages_shows_a_redirect() -> None:
    stream = io.StringIO()
    PrintPages(stream).on_page(Page("http://a.test/old", 1, None, "http://a.test/old", 301,
                                    links=["http://a.test/new"], new=1,
                                    redirect="http://a.test/new"))
    assert stream.getvalue() == "301 http://a.test/old 1 1 → http://a.test/new\n"
