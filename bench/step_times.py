"""minicrawl's CPU by step, timed directly (issue 49): what each step of a page's trip costs.

    python bench/step_times.py --site cpython               # run.py ×1 at its defaults (--delay 0)
    python bench/step_times.py --site java --max-pages 4000 --threads 16
    python bench/step_times.py --site java --crawler core   # the core's crawler, the same pages

The site is served by nginx from Debian's docs (``servers.Nginx``, as ``javadoc.py`` serves
them) and crawled in this process: the trip's steps are wrapped, and each step's own CPU is
``time.thread_time`` across it less that of the steps inside it (the walk inside the link
extraction, the hooks' resolve inside the trip), so each CPU second is counted once, by the
thread that spent it. Beside it, each step's wall time: where a worker waited (the parsing
slot, the GIL, the server). ``bench/profile_steps.py`` samples with py-spy instead, which
catches every frame but puts short C calls (a UTF-8 check, a hash) where they are not; these
figures are what the code costs where it stands.

The steps: ``fetch`` (the request and its answer, through requests), ``sniff`` (the page's
encoding), ``walk`` (libxml2's parse, the walk over its tree, the page's facts), ``extract``
(the rest of the link extraction), ``resolve`` (the hooks' resolving and judging of the links),
``door`` (the rules, Visited, ToDo; the hooks' ``keep`` apart), the hooks' ``before`` and
``after`` (politeness, robots.txt, the page's record, its digest), ``trip`` (the rest of the
trip: waiting for the parsing slot is its wall time) and each observer's ``on_page``.
"""

from __future__ import annotations

import argparse
import collections
import functools
import importlib
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import javadoc
import servers

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the checkout this script is in, not an installed copy

SITES = {"cpython": (servers.ensure_python_docs, "/index.html"),
         "java": (javadoc.ensure_docs, "/api/index.html")}
OBSERVERS = [("minicrawl.records.output", "Output"), ("minicrawl.watch.summary", "FirstProblems"),
             ("minicrawl.watch.report", "Recorder"), ("minicrawl.records.linksin", "LinksIn"),
             ("minicrawl.visited.make", "CapacityWatch")]


class Steps:
    """Each wrapped step's own thread CPU and wall time (nanoseconds) and calls."""

    def __init__(self) -> None:
        self.cpu: collections.Counter[str] = collections.Counter()
        self.wall: collections.Counter[str] = collections.Counter()
        self.calls: collections.Counter[str] = collections.Counter()
        self.local = threading.local()  # this thread's open steps: [cpu, wall] of their inner

    def wrap(self, owner: object, name: str, step: str) -> None:
        """Time ``owner.name`` as ``step`` from now on."""
        func = getattr(owner, name)

        @functools.wraps(func)
        def timed(*args: object, **kwargs: object) -> object:
            stack = self.local.__dict__.setdefault("stack", [])
            cpu0, wall0 = time.thread_time_ns(), time.perf_counter_ns()
            stack.append([0, 0])
            try:
                return func(*args, **kwargs)
            finally:
                cpu, wall = time.thread_time_ns() - cpu0, time.perf_counter_ns() - wall0
                inner = stack.pop()
                self.cpu[step] += cpu - inner[0]
                self.wall[step] += wall - inner[1]
                self.calls[step] += 1
                if stack:
                    stack[-1][0] += cpu
                    stack[-1][1] += wall

        setattr(owner, name, timed)

    def table(self, pages: int, cpu: float, wall: float) -> str:
        """The steps, costliest first, in ms a page."""
        timed = sum(self.cpu.values()) / 1e9
        lines = [f"{pages} pages, wall {wall:.2f} s, process CPU {cpu:.2f} s "
                 f"({cpu / pages * 1000:.3f} ms a page; in the steps {timed:.2f} s)",
                 "", "| step | CPU ms a page | wall ms a page | calls |", "|---|---:|---:|---:|"]
        for step, ns in self.cpu.most_common():
            lines.append(f"| {step} | {ns / 1e6 / pages:.3f} | {self.wall[step] / 1e6 / pages:.3f} "
                         f"| {self.calls[step]:,} |")
        return "\n".join(lines)


def wrap_all(steps: Steps, crawler: str) -> None:
    """Wrap the trip's steps (and run.py's hooks and observers, for its crawler)."""
    import minicrawl.core.door as door
    import minicrawl.core.links as links
    import minicrawl.core.trip as trip

    steps.wrap(trip.Trip, "visit", "trip")
    steps.wrap(trip.Trip, "fetch", "fetch")
    steps.wrap(trip, "extract_links", "extract")
    steps.wrap(links, "walk", "walk")
    steps.wrap(links, "sniff", "sniff")
    steps.wrap(door.Door, "enter", "door")
    hooks: type = trip.CoreHooks
    if crawler == "runpy":
        from minicrawl.visit.hooks import CrawlHooks

        hooks = CrawlHooks
        for module, name in OBSERVERS:
            observer = getattr(importlib.import_module(module), name)
            if "on_page" in observer.__dict__:
                steps.wrap(observer, "on_page", f"on_page {name}")
    for name in ("before", "after", "follows", "resolve", "keep"):
        steps.wrap(hooks, name, name)


def crawl(crawler: str, url: str, threads: int, max_pages: int | None) -> int:
    """Crawl from ``url`` in this process; the pages fetched."""
    if crawler == "core":
        from minicrawl.core.crawler import Crawler

        return Crawler([url], threads=threads, max_pages=max_pages).run().pages
    from minicrawl import Crawler as RunPyCrawler

    stats = RunPyCrawler([url], threads=threads, delay=0, max_pages=max_pages).run()
    return int(stats["pages"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--site", choices=sorted(SITES), default="cpython")
    ap.add_argument("--crawler", choices=["runpy", "core"], default="runpy")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-pages", type=int)
    opts = ap.parse_args(argv)
    ensure, start = SITES[opts.site]
    root: Callable[[], Path] = ensure
    with tempfile.TemporaryDirectory() as tmp:
        nginx = servers.Nginx(Path(tmp), root(), servers.free_port()).start()
        try:
            steps = Steps()
            wrap_all(steps, opts.crawler)
            cpu0, wall0 = time.process_time(), time.perf_counter()
            pages = crawl(opts.crawler, nginx.origin + start, opts.threads, opts.max_pages)
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        finally:
            nginx.stop()
    print(f"{opts.site}, {opts.crawler} ×{opts.threads}: "
          + steps.table(max(pages, 1), cpu, wall))
    return 0


if __name__ == "__main__":
    sys.exit(main())
