"""``python -m minicrawl.core URL...``: crawl with the core alone, one line per page.

Stays on the seeds' hosts; ``--threads``, ``--delay`` (seconds between requests to a host) and
``--max-pages`` are the knobs. Each line is ``status url links new`` (``---`` and the reason when
no usable answer came); a summary goes to stderr. Exit status: 0 done, 2 no usable seed or a
wrong option, 130 interrupted (the pages in flight finish first).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import platform
import sys
import threading
from collections.abc import Callable
from typing import TextIO

from minicrawl.core.crawler import Crawler
from minicrawl.core.fetch import Fetcher
from minicrawl.core.interfaces import Page
from minicrawl.core.limits import SameHost


class PrintPages:
    """An observer that writes one line per page to a stream."""

    def __init__(self, stream: TextIO = sys.stdout) -> None:
        self.stream = stream
        self._lock = threading.Lock()

    def on_page(self, page: Page) -> None:
        answer = page.response
        why = f"→ {page.redirect}" if page.redirect else answer.error or ""
        line = f"{answer.status or '---'} {page.item.url} {page.links} {page.new} {why}".rstrip()
        with self._lock:  # one write per line: lines of two workers never mix
            self.stream.write(line + "\n")


def number(kind: type[int] | type[float], low: float) -> Callable[[str], float]:
    """An argparse type: a number of ``kind``, at least ``low``."""
    def parse(text: str) -> float:
        if (value := kind(text)) < low:
            raise argparse.ArgumentTypeError(f"must be ≥ {low:g}")
        return value
    return parse


def keep_heaps_small() -> None:
    """After a big block is freed, glibc raises its mmap threshold, so later bodies and trees
    of megabytes come from per-thread heaps that keep their high-water mark (~30 MB more at
    16 workers on the Java API docs). A fixed threshold maps and unmaps such blocks instead."""
    if platform.libc_ver()[0] == "glibc" and "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        ctypes.CDLL(None).mallopt(-3, 256 * 1024)  # M_MMAP_THRESHOLD, from <malloc.h>


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m minicrawl.core",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("seeds", nargs="+", metavar="URL")
    ap.add_argument("--threads", type=number(int, 1), default=8, help="worker threads (8)")
    ap.add_argument("--delay", type=number(float, 0), default=0.0,
                    help="seconds between the starts of requests to one host (0)")
    ap.add_argument("--max-pages", type=number(int, 1), help="fetch at most this many pages")
    ap.add_argument("--timeout", type=number(float, 0.001), default=10.0,
                    help="seconds to connect, and to wait for each read (10)")
    args = ap.parse_args(argv)

    crawler = Crawler(args.seeds, threads=args.threads, delay=args.delay,
                      max_pages=args.max_pages, admission=[SameHost(args.seeds)],
                      observers=[PrintPages()], fetcher=lambda: Fetcher(timeout=args.timeout))
    for seed in crawler.bad_seeds:
        print(f"skipped seed {seed!r}: not an http(s) URL", file=sys.stderr)
    if not crawler.seeds:
        print("no seed to crawl", file=sys.stderr)
        return 2
    keep_heaps_small()
    try:
        summary = crawler.run()
    except KeyboardInterrupt:
        print(f"interrupted after {crawler.summary.pages} pages", file=sys.stderr)
        return 130
    print(f"{summary.pages} pages, {summary.errors} errors, {summary.bytes:,} bytes "
          f"in {summary.seconds:.2f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
