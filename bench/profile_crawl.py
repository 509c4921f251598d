"""Profile minicrawl in-process on the benchmark site: where does the CPU per page go?

    python bench/profile_crawl.py                      # nginx, 1 thread, top 25 both ways
    python bench/profile_crawl.py --mode disk          # no HTTP at all: pages read from disk
    python bench/profile_crawl.py --threads 16 --save crawl.prof   # then: snakeviz crawl.prof

cProfile only sees the thread that enabled it, so every thread started during the crawl
(``threading.Thread.run``) gets its own profiler and the profiles are merged: the numbers are
the workers' (the main thread only waits). ``--mode disk`` swaps the crawler's Fetcher for one
that answers from the generated files the way nginx would (200, 301 for a slashless directory,
404), leaving exactly the per-page and per-link work: decode, parse, extract, canonicalize,
scope, Visited, ToDo. With several threads each is timed by its own CPU clock, so GIL waits
are not charged to whatever ran before them (see ``--timer``). Profiling slows Python code
~2× (more with the CPU clock, and most for functions called very often), so compare profiles
with each other, and take absolute speed from ``run.py`` or ``--no-profile``.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import io
import pstats
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import servers
import sitegen

from run import minicrawl_politeness_args

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # profile the working tree's minicrawl, not an installed one

import minicrawl.visit.hooks as hooks_module  # noqa: E402
from minicrawl import Crawler  # noqa: E402
from minicrawl.core.interfaces import Response  # noqa: E402
from minicrawl.http.fetch import Fetcher  # noqa: E402
from minicrawl.options import Options  # noqa: E402


def politeness_off(threads: int) -> dict[str, Any]:
    """The Options that switch politeness off: the flags ``run.py`` finds in the command line's
    ``--help`` today (delays 0, robots.txt not read, per-host limit at the thread count), turned
    into keyword settings, so the profile and the race crawl the same way."""
    fields = {f.name: f for f in dataclasses.fields(Options)}
    flags = minicrawl_politeness_args(sys.executable, threads)
    settings: dict[str, Any] = {}
    i = 0
    while i < len(flags):
        name = flags[i][2:].replace("-", "_")
        if name not in fields:  # a --no-x switch whose field is x
            i += 1
            continue
        if i + 1 < len(flags) and not flags[i + 1].startswith("--"):
            kind = str(fields[name].type)
            settings[name] = float(flags[i + 1]) if "float" in kind else int(flags[i + 1])
            i += 2
        else:
            settings[name] = True
            i += 1
    return settings


class DiskFetcher(Fetcher):
    """Answers from the site directory as nginx does, with no socket at all."""

    root: Path = Path()

    def fetch(self, url: str, headers: dict[str, str] | None = None) -> Response:
        started = time.monotonic()
        path = "/" + url.split("://", 1)[1].partition("/")[2].split("?", 1)[0]
        file = self.root / path.lstrip("/")
        result = Response(url, None)
        if path.endswith("/"):
            file = file / "index.html"
        if file.is_file():
            result.status = 200
            result.headers = {"content-type": "text/html", "content-length": ""}
            result.body = file.read_bytes()
            result.headers["content-length"] = str(len(result.body))
        elif file.is_dir():
            result.status = 301
            result.headers = {"location": path + "/"}
        else:
            result.status = 404
            result.headers = {"content-type": "text/html"}
            result.body = b"<html><body>404</body></html>"
        result.elapsed = time.monotonic() - started
        return result


def profile_threads(timer: Any) -> tuple[list[cProfile.Profile], Any]:
    """Make every thread started from now on run under its own profiler. Returns the list the
    profilers are collected in, and the original ``Thread.run`` (to restore).

    With ``timer=time.thread_time`` a function is charged the CPU its thread spent in it; with
    the default wall-clock timer it is also charged the time its thread sat waiting for the GIL,
    so with N threads the listing sums to N × wall and blames whatever held the GIL's turn."""
    profiles: list[cProfile.Profile] = []
    lock = threading.Lock()
    original = threading.Thread.run

    def run(self: threading.Thread) -> None:
        prof = cProfile.Profile(timer) if timer else cProfile.Profile()
        with lock:
            profiles.append(prof)
        prof.enable()
        try:
            original(self)
        finally:
            prof.disable()

    threading.Thread.run = run  # type: ignore[method-assign]
    return profiles, original


def main() -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n")[1])
    ap.add_argument("--threads", type=int, default=1,
                    help="worker threads (default 1: the per-page cost without GIL contention)")
    ap.add_argument("--mode", choices=("http", "disk"), default="http",
                    help="http: through nginx; disk: no HTTP, pages read from the files")
    ap.add_argument("--top", type=int, default=25, help="rows per listing")
    ap.add_argument("--seed", type=int, default=1, help="site generator seed")
    ap.add_argument("--timer", choices=("auto", "cpu", "wall"), default="auto",
                    help="cpu: each thread's CPU clock (a system call per event: slower, and "
                    "inflates functions called very often); wall: cProfile's own clock (cheap, "
                    "but charges GIL waits); auto (default): wall for 1 thread, else cpu")
    ap.add_argument("--save", type=Path, help="also write the merged profile (pstats) here")
    ap.add_argument("--no-profile", action="store_true",
                    help="just time the in-process crawl (CPU per page without cProfile)")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="minicrawl-profile-"))
    site_dir = work / "site"
    site_dir.mkdir()
    ng = None
    if args.mode == "http":
        port = servers.free_port()
        origin = f"http://127.0.0.1:{port}"
        ng = servers.Nginx(work, site_dir, port).start()
    else:
        origin = "http://127.0.0.1:9"  # never connected to
        DiskFetcher.root = site_dir
        hooks_module.Fetcher = DiskFetcher  # type: ignore[misc]
    site = sitegen.generate(site_dir, origin, args.seed)
    print(f"site: {site.describe()}")
    settings = politeness_off(args.threads)
    print(f"Crawler({origin}/, threads={args.threads}, {settings}) in {args.mode} mode")

    offset = ng.log_size() if ng else 0
    profiles: list[cProfile.Profile] = []
    original_run = threading.Thread.run
    if not args.no_profile:
        cpu_timer = args.timer == "cpu" or (args.timer == "auto" and args.threads > 1)
        profiles, original_run = profile_threads(time.thread_time if cpu_timer else None)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    try:
        stats = Crawler([origin + "/"], threads=args.threads, **settings).run()
    finally:
        threading.Thread.run = original_run  # type: ignore[method-assign]
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    pages = stats.get("pages", 0)
    links = stats.get("links_extracted", 0)
    print(f"\ncrawl: {pages} pages, {links} links extracted, {stats.get('links_new', '?')} new; "
          f"wall {wall:.2f} s, CPU {cpu:.2f} s (this process, all threads) = "
          f"{1000 * cpu / max(1, pages):.2f} ms/page, {1e6 * cpu / max(1, links):.1f} µs/link"
          f"{' (under cProfile)' if profiles else ''}")
    if ng:
        counts = servers.count_fetches(ng.requests_since(offset))
        missed = set(site.expected) - set(counts)
        dups = [p for p, c in counts.items() if c > 1]
        extra = set(counts) - set(site.expected)
        print(f"nginx log: {sum(counts.values())} requests; missed {len(missed)}, "
              f"fetched twice {len(dups)}, not reachable {len(extra)}")
        ng.stop()
    if profiles:
        merged = pstats.Stats(profiles[0], stream=io.StringIO())
        for prof in profiles[1:]:
            merged.add(prof)
        if args.save:
            merged.dump_stats(args.save)
            print(f"profile saved to {args.save}")
        for key in ("cumulative", "tottime"):
            out = io.StringIO()
            merged.stream = out  # type: ignore[attr-defined]
            merged.sort_stats(key).print_stats(args.top)
            text = out.getvalue()
            # Keep the listing, drop pstats' preamble of file names and totals.
            body = text[text.find("   ncalls"):] if "   ncalls" in text else text
            print(f"\n=== top {args.top} by {key} (merged over {len(profiles)} threads) ===")
            print(body.rstrip())
    shutil.rmtree(work, ignore_errors=True)
    return 0 if pages else 1


if __name__ == "__main__":
    sys.exit(main())
