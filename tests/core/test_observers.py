"""The Observer contract (interfaces.Observer), run over every implementation: thread-safe,
never raising, and what each reports is exact when 16 workers report at once."""

from __future__ import annotations

import io
import threading

import pytest

from minicrawl.core.__main__ import PrintPages
from minicrawl.core.crawler import Summary
from minicrawl.core.interfaces import Page

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


IMPLEMENTATIONS = {
    "summary": (lambda stream: Summary(), summary_check),
    "print": (lambda stream: PrintPages(stream), print_check),
}


@pytest.mark.parametrize("name", sorted(IMPLEMENTATIONS))
def test_sixteen_workers_reporting_at_once(name: str) -> None:
    make, check = IMPLEMENTATIONS[name]
    stream = io.StringIO()
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
