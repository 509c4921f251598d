"""``python -m minicrawl.core URL...``: crawl with the core alone, one line per page.

Stays on the seeds' hosts; reads no robots.txt (run.py does). Each line is ``status url links
new`` and why, if any (``---`` and the error: no answer; ``→ target``: a redirect; a body cut
short); a summary goes to stderr. Exit status: 0 done (also after ``| head``), 1 stdout could
not be written, 2 no usable seed or a wrong option, 130 Ctrl-C or SIGTERM (in-flight pages end).
"""

import argparse
import os
import signal
import sys
from collections.abc import Callable
from typing import TextIO

from minicrawl.checks import check_core_options
from minicrawl.core.crawler import Crawler
from minicrawl.core.fetch import USER_AGENT, Fetcher
from minicrawl.core.interfaces import Page
from minicrawl.core.limits import SameHost
from minicrawl.core.todo import ToDo
from minicrawl.lines import Lines
from minicrawl.redact import redact


class PrintPages:
    """An observer that writes one line per page to a stream, as :class:`~minicrawl.lines.Lines`
    (whole lines; a write that fails calls ``on_closed``)."""

    def __init__(self, stream: TextIO = sys.stdout,
                 on_closed: Callable[[], None] = lambda: None) -> None:
        self.out = Lines(stream, on_closed)

    def on_page(self, page: Page) -> None:
        why = f"→ {page.redirect}" if page.redirect else page.error or ""
        line = f"{page.status or '---'} {page.url} {len(page.links)} {page.new} {why}".rstrip()
        self.out.write(redact(line) + "\n")  # no password shown


def main(argv: list[str] | None = None) -> int:
    """Crawl as ``argv`` says: the exit status (see the module), or ``ap.error``'s SystemExit(2)."""
    ap = argparse.ArgumentParser(prog="python -m minicrawl.core", allow_abbrev=False,
                                 description=__doc__.split("\n")[0])
    ap.add_argument("seeds", nargs="+", metavar="URL")
    ap.add_argument("--threads", type=int, default=8, help="worker threads (8)")
    ap.add_argument("--delay", type=float, default=0.0,
                    help="seconds between the starts of requests to one host (0)")
    ap.add_argument("--max-pages", type=int, help="fetch at most this many pages")
    ap.add_argument("--timeout", type=float, default=10.0,
                    help="seconds to connect, and to wait for each read (10)")
    ap.add_argument("--max-bytes", type=int, default=10 * 2**20,
                    help="largest body read, after decompression; a longer one is cut (10 MiB)")
    ap.add_argument("--ignore-nofollow", action="store_true", help="follow the links a page "
                    "says not to follow (rel=nofollow, robots <meta>, X-Robots-Tag)")
    ap.print_usage = lambda file=None: None  # type: ignore[method-assign] # one line: the error
    # The pages' printer writes --help too: argparse would pass over a failed write
    printer = PrintPages(on_closed=(todo := ToDo()).stop)
    ap.print_help = lambda file=None: printer.out.write(ap.format_help())
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:  # --help, or a wrong option (told by argparse)
        return 1 if printer.out.flush() else int(e.code or 0)
    try:  # run.py's bounds, the environment's proxies and CA bundle: one line, exit status 2
        check_core_options(args, USER_AGENT, os.environ)
    except ValueError as e:
        ap.error(str(e))
    crawler = Crawler(args.seeds, threads=args.threads, delay=args.delay, todo=todo,
                      max_pages=args.max_pages, admission=[SameHost(args.seeds)],
                      observers=[printer], ignore_nofollow=args.ignore_nofollow,
                      fetcher=lambda: Fetcher(timeout=args.timeout, max_bytes=args.max_bytes))
    for seed in crawler.bad_seeds:
        print(f"skipped seed {redact(seed, typed=True)!r}: not a crawlable http(s) URL",
              file=sys.stderr)
    if not crawler.seeds:
        print("no seed to crawl", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # as Ctrl-C, as run.py does
    try:
        summary = crawler.run()
    except KeyboardInterrupt:
        print(f"interrupted after {crawler.summary.pages} pages", file=sys.stderr)
        return 130
    if printer.out.flush():  # the last lines now, not at exit
        return 1
    print(f"{summary.pages} pages, {summary.errors} errors, {summary.bytes:,} bytes "
          f"in {summary.seconds:.2f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
