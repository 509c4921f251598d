"""The real-site race: minicrawl vs wget on the Java 17 API docs (issue 15) or the CPython docs.

    python bench/javadoc.py                               # 0 ms, minicrawl ×1,4,16 and wget; 3 reps
    python bench/javadoc.py --reps 1 --threads 16 --peers none   # the loop while optimising
    python bench/javadoc.py --latency 20 --threads 16 --peers none
    python bench/javadoc.py --threads 16 --peers none --max-pages 1000,3000,0   # RSS by pages
    python bench/javadoc.py --crawler core --threads 1,16 --reps 1   # the core instead of run.py
    python bench/javadoc.py --crawler both --politeness both --threads 1,16   # issue 37's race
    python bench/javadoc.py --politeness true --threads 16 --max-pages 300 --peers none --reps 1
    python bench/javadoc.py --site cpython --politeness default --threads 1,16   # issue 49's

The site (``--site java``, the default) is Debian's ``openjdk-17-doc`` (installed with apt-get if
missing): ~10,000 HTML pages with ~660,000 links under
``/usr/share/doc/openjdk-17-jre-headless/api``, served as they are by nginx (``servers.Nginx``, one
worker, access log) on a free loopback port, optionally behind the latency proxy. Every crawler
starts at ``/api/index.html``: minicrawl with its politeness switched off (``--politeness off``,
the default: the flags ``run.py`` discovers, ``--delay 0 --ignore-robots --per-host N``;
"minicrawl" in the tables), at its defaults but for the delay (``default``: only ``--delay 0``, so
robots.txt read, 2 per host, retries, cookies; "minicrawl-def"), at its true defaults (``true``: no
flags at all, 0.25 s between requests; "minicrawl-true": the gaps between requests as nginx saw
them are printed beside the promise), and/or the core (``python -m minicrawl.core --threads N
--delay 0``; it reads no robots.txt and stays on the seed's host; its one line per page goes to a
file and is counted: "pages printed"), wget with ``-r -l inf -np`` (``run.command``'s: one
connection, robots.txt off, nothing kept).

``--site cpython``: Debian's ``python3-doc`` (the Python 3.11 docs: minicrawl requests 528 URLs,
526 pages, a ``.py`` download and a 404, ``whatsnew/changelog.html``; installed by
``servers.ensure_python_docs`` as for bench/linkcheck.py and bench/mirror.py), served as it is by
the same nginx, every crawler starting at ``/index.html``. There wget also gets
``--reject css,js,png,svg,xml``: the extensions of what the pages embed (stylesheets and what they
import, scripts, images, the OpenSearch description), which it would fetch (28 more requests) and
minicrawl does not; no page links to a file of those types, so wget then requests exactly
minicrawl's URLs (robots.txt aside) and is held to the exactly-once check below like minicrawl.

Each configuration runs once per repetition, interleaved, timed with ``os.wait4`` (wall, CPU)
and /proc (peak RSS) as ``run.py`` does; "server CPU s" is nginx's and the latency proxy's
during the crawl (on two cores they compete with the crawler).

Exactly once, from nginx's log: no URL requested twice by one crawl (``dup.``), and every crawl
of minicrawl (``run.py`` or the core) requests the same set of URLs — the union of all their
full crawls is the reference (``missed``/``extra`` against it; the generated site of ``run.py``
knows its truth in advance, a real site does not). On the Java docs wget also fetches what pages
embed (stylesheets, scripts, images), so its request count is larger; its figures are reported
as measured. On the CPython docs wget must request the reference exactly, once each (else the
race compares unlike crawls: exit status 1 too).

The targets printed at the end: issues 15 and 37's (the Java docs) and issue 49's: run.py at its
defaults (``--politeness default``) ×16 within 0.7 × wget's wall on the Java docs, faster than
×1 and within 100 MB; within 0.6 × wget's wall on the CPython docs (each thread count raced).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import servers

import run

DOCS_PACKAGE = "openjdk-17-doc"
DOCS_ROOT = Path("/usr/share/doc/openjdk-17-jre-headless")
# --crawler: the minicrawl crawlers raced ("minicrawl" is run.py's name in the tables).
RACERS = {"runpy": ["minicrawl"], "core": ["core"], "both": ["minicrawl", "core"]}
# --politeness: run.py's crawler name for each way of running it (the core has one way).
POLITENESS = {"off": "minicrawl", "default": "minicrawl-def", "true": "minicrawl-true"}
POLITENESS_SETS = {"both": ["default", "off"], **{k: [k] for k in POLITENESS}}


def ensure_docs() -> Path:
    """The folder served (it holds ``api/``), installed from Debian first if missing."""
    if not (DOCS_ROOT / "api" / "index.html").exists():
        servers.apt_install(DOCS_PACKAGE, f"{DOCS_ROOT} is missing")
    return DOCS_ROOT


@dataclass(frozen=True)
class Site:
    """A site to race on: its tables' name, the folder nginx serves (installed if missing), the
    seed's path, what wget is given beyond ``run.command``'s, and whether wget then requests
    minicrawl's URLs exactly (so it is checked as minicrawl is)."""

    title: str
    root: Callable[[], Path]
    start: str
    wget_args: tuple[str, ...] = ()
    wget_exact: bool = False


SITES = {
    "java": Site("Java 17 API docs", ensure_docs, "/api/index.html"),
    # What the pages embed and minicrawl does not fetch: stylesheets (and their @imports and
    # url()s), scripts, images, the <link rel=search> OpenSearch XML. No <a> names such a file.
    "cpython": Site("CPython docs", servers.ensure_python_docs, "/index.html",
                    ("--reject", "css,js,png,svg,xml"), wget_exact=True),
}


class LoggedNginx(servers.Nginx):
    """nginx that also keeps the paths of the last crawl's requests (for the cross-run check)."""

    last: list[tuple[str, int]] = []
    spans: list[tuple[float, float]] = []

    def requests_since(self, offset: int) -> list[tuple[str, int]]:
        self.last = super().requests_since(offset)
        self.spans = self.spans_since(offset)
        return self.last


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("--site", choices=sorted(SITES), default="java",
                    help="the Java 17 API docs (java, the default) or the CPython docs (cpython)")
    ap.add_argument("--threads", type=run.int_list, default=[1, 4, 16],
                    help="minicrawl thread counts (default: 1,4,16)")
    ap.add_argument("--crawler", choices=sorted(RACERS), default="runpy",
                    help="which minicrawl to race: run.py (runpy, the default), the core "
                    "(python -m minicrawl.core), or both, interleaved")
    ap.add_argument("--politeness", choices=sorted(POLITENESS_SETS), default="off",
                    help="how run.py runs: off (the flags that switch politeness off), default "
                    "(only --delay 0), true (no flags), both (default and off, interleaved)")
    ap.add_argument("--peers", default="wget", help="wget or none")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--latency", type=run.float_list, default=[0.0],
                    help="added latency per request in ms, comma-separated (default: 0)")
    ap.add_argument("--max-pages", type=run.int_list, default=[0],
                    help="minicrawl --max-pages values, comma-separated; 0 = the whole site")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--minicrawl-arg", action="append", default=[])
    ap.add_argument("--baseline", type=Path,
                    help="another minicrawl checkout (e.g. `git worktree add /tmp/base main`), "
                    "raced at the same thread counts in the same run, interleaved")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (logs)")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    site = SITES[opts.site]
    root = site.root()
    racers = [name for crawler in RACERS[opts.crawler] for name in (
        [POLITENESS[p] for p in POLITENESS_SETS[opts.politeness]] if crawler == "minicrawl"
        else [crawler])]
    configs: list[tuple[run.Config, int]] = [
        (run.Config(crawler, n), cap) for cap in opts.max_pages for n in opts.threads
        for crawler in racers]
    if opts.baseline:
        # run.py's crawler names with "baseline" for "minicrawl" (the same politeness); the core's
        configs += [(run.Config(name.replace("minicrawl", "baseline").replace(
            "core", "baseline-core"), n), cap)
                    for cap in opts.max_pages for n in opts.threads for name in racers
                    if name.startswith("minicrawl") or name == "core"]
    if "wget" in opts.peers:
        servers.ensure_tool("wget", "wget")
        configs.append((run.Config("wget", 1), 0))
    cores = len(os.sched_getaffinity(0))
    run.compile_sources(run.REPO, *([opts.baseline] if opts.baseline else []))
    work = Path(tempfile.mkdtemp(prefix="minicrawl-javadoc-"))
    print(f"machine: {run.machine()}")
    print(f"minicrawl: {run.REPO} "
          f"({run.version_of(['git', '-C', str(run.REPO), 'describe', '--always', '--dirty'])})")
    if "core" in RACERS[opts.crawler]:
        check_core_importable(opts.python, work)
    port = servers.free_port()
    ng = LoggedNginx(work, root, port).start()
    print(f"nginx on {ng.origin} serving {root}"
          + (f" ({servers.python_docs_version()})" if opts.site == "cpython" else "")
          + f"; temp dir {work}")
    started = time.perf_counter()
    failed = wget_differs = False
    tables = []
    targets: list[str] = []
    try:
        for latency in opts.latency:
            proxy = None
            origin = ng.origin
            if latency > 0:
                proxy = servers.LatencyProxy(servers.free_port(), port, latency).start()
                origin = proxy.origin
            url = origin + site.start
            runs: dict[tuple[str, int, int], list[run.Run]] = {}
            paths: dict[tuple[str, int, int], list[set[str]]] = {}
            pages: dict[tuple[str, int, int], list[int]] = {}  # lines the core printed
            try:
                for rep in range(opts.reps):
                    for cfg, cap in configs:
                        cmd = crawl_command(cfg, url, opts, work, site)
                        if cap:
                            cmd += ["--max-pages", str(cap)]
                        out = work / "core-stdout.txt" if cfg.crawler.endswith("core") else None
                        r = run.measure(cfg, cmd, ng, proxy, set(), latency, rep, work,
                                        opts.timeout, stdout=out)
                        key = (cfg.crawler, cfg.concurrency, cap)
                        runs.setdefault(key, []).append(r)
                        # robots.txt is read at run.py's defaults only: not a page.
                        paths.setdefault(key, []).append(
                            {p for p, _ in ng.last} - run.ALLOWED_EXTRA)
                        if out:
                            pages.setdefault(key, []).append(out.read_bytes().count(b"\n"))
                        print(f"  [{time.perf_counter() - started:6.0f} s] {latency:g} ms rep "
                              f"{rep + 1}/{opts.reps} {cfg.label:14} pages≤{cap or '∞':<6} "
                              f"wall {r.wall_s:7.2f} s cpu {r.cpu_s:6.2f} s rss "
                              f"{r.peak_rss_mb:6.0f} MB {r.requests:6d} req {r.distinct:6d} "
                              f"distinct, dup {r.duplicated} {r.dup_sample} exit {r.exit_code}"
                              + (f", {pages[key][-1]} pages printed" if out else ""),
                              flush=True)
                        if cfg.crawler != "wget" and (r.duplicated or r.exit_code):
                            failed = True
                        if cfg.crawler.endswith("-true"):
                            print("    " + pace(ng.spans, cfg.concurrency), flush=True)
            finally:
                if proxy:
                    proxy.stop()
            # The reference set: every URL any full minicrawl crawl of this run requested.
            full = [s for (c, _, cap), sets in paths.items() if c != "wget" and not cap
                    for s in sets]
            reference = set().union(*full) if full else set()
            lines = [f"#### {site.title}, latency {latency:g} ms — {len(reference)} URLs "
                     f"requested by minicrawl", "",
                     "| crawler | conc. | pages cap | wall s (min–max) | wall / wget | CPU s "
                     "| CPU ms/page | peak RSS MB | requests | pages printed | dup. "
                     "| missed / extra vs reference | exactly once | server CPU s |",
                     "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
                     "| ---: | --- | ---: |"]
            medians = {key: run.summarize(rs) for key, rs in runs.items()}
            wget = medians.get(("wget", 1, 0))
            for key, rs in runs.items():
                crawler, conc, cap = key
                s = medians[key]
                checked = crawler != "wget" or site.wget_exact
                worst_missed = worst_extra = 0
                exact = 0
                for r, got in zip(rs, paths[key], strict=True):
                    missed = len(reference - got) if checked and not cap else 0
                    extra = len(got - reference) if checked and reference else 0
                    worst_missed, worst_extra = max(worst_missed, missed), max(worst_extra, extra)
                    exact += not (r.duplicated or missed or extra)
                if crawler == "wget":
                    wget_differs |= checked and exact < len(rs)
                elif worst_missed or worst_extra:
                    failed = True
                check = f"{exact}/{len(rs)}" if checked else "–"
                printed = run.med(pages.get(key, []))
                lines.append(
                    f"| {crawler} | {conc} | {cap or 'all'} | {run.fmt(s['wall_s'])} "
                    f"({run.fmt(s['wall_min'])}–{run.fmt(s['wall_max'])}) "
                    f"| {run.fmt(s['wall_s'] / wget['wall_s']) if wget else '–'} "
                    f"| {run.fmt(s['cpu_s'])} | {run.fmt(s['cpu_ms_per_page'])} "
                    f"| {run.fmt(s['rss_mb'], 0)} | {s['requests']:.0f} | {run.fmt(printed, 0)} "
                    f"| {s['duplicated']:.0f} | {worst_missed} / {worst_extra} | {check} "
                    f"| {run.fmt(s['server_cpu_s'])} |")
            tables.append("\n".join(lines))
            print("\n" + tables[-1], flush=True)
            if opts.site == "java":
                targets += issue15_targets(medians, latency, cores)
                targets += issue37_targets(medians) if latency == 0 else []
            targets += issue49_targets(medians, opts.site) if latency == 0 else []
    finally:
        ng.stop()
        if not opts.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\n### Results ({opts.reps} repetitions, medians; machine: {run.machine()})\n")
    print("\n\n".join(tables))
    print("\nTargets (this run):")
    print("\n".join(targets) or "- none measured in this run")
    print(f"\nbench total {time.perf_counter() - started:.0f} s")
    if wget_differs:
        print("wget did NOT request minicrawl's URLs exactly once each: the race compares "
              "unlike crawls (see above)")
    if failed:
        print("minicrawl did NOT fetch every URL exactly once (see above)")
    return 1 if failed or wget_differs else 0


def crawl_command(cfg: run.Config, url: str, opts: argparse.Namespace, work: Path,
                  site: Site) -> list[str]:
    """``run.py``'s command for ``cfg``; the baseline's is the same, from the other checkout;
    the core's is ``python -m minicrawl.core`` (no robots.txt; no delay, said explicitly);
    run.py at its defaults but the delay (``minicrawl-def``) or at its true defaults; wget's
    is ``run.command``'s with the site's ``wget_args`` before the URL."""
    if cfg.crawler.endswith("core"):  # the baseline's core: its checkout first on the path
        where = ["env", f"PYTHONPATH={opts.baseline}"] if cfg.crawler != "core" else []
        return [*where, opts.python, "-m", "minicrawl.core", url, "--threads",
                str(cfg.concurrency), "--delay", "0"]
    name = cfg.crawler.replace("baseline", "minicrawl")  # the same, from the other checkout
    if name in (POLITENESS["default"], POLITENESS["true"]):
        delay = ["--delay", "0"] if name == POLITENESS["default"] else []
        cmd = [opts.python, str(run.REPO / "run.py"), url, "--threads", str(cfg.concurrency),
               "--quiet", *delay, *opts.minicrawl_arg]
    else:
        cmd = run.command(run.Config(name, cfg.concurrency), url, opts, None, work)
        if name == "wget":
            cmd[-1:-1] = site.wget_args
    if cfg.crawler.startswith("baseline"):
        cmd[1] = str(opts.baseline / "run.py")
    return cmd


def pace(spans: list[tuple[float, float]], threads: int) -> str:
    """The pace of one crawl as nginx saw it, against what run.py's defaults promise (requests
    ``--delay`` 0.25 s apart to one host, at most ``--per-host`` 2 in flight): the gaps between
    arrivals and the most requests open at once (all to the one host)."""
    if len(spans) < 2:
        return "pace: fewer than 2 requests"
    gaps = sorted(b[0] - a[0] for a, b in pairwise(spans))
    # nginx logs whole ms: a request answered within its ms of arrival is open for half of it
    # (so it counts itself), and an answer sorts before an arrival at the same instant.
    events = sorted([(s, 1) for s, _ in spans] + [(max(e, s + 0.0005), -1) for s, e in spans])
    open_now = most_open = 0
    for _, step in events:
        open_now += step
        most_open = max(most_open, open_now)
    rate = (len(spans) - 1) / (spans[-1][0] - spans[0][0])
    return (f"pace ({threads} threads, {len(spans)} requests): {rate:.2f} req/s; gap between "
            f"arrivals min {gaps[0] * 1000:.0f} ms, median {run.med(gaps) * 1000:.0f} ms, "
            f"{sum(g < 0.25 for g in gaps)} under 250 ms; at most {most_open} in flight "
            f"(promised: ≥ 250 ms apart, ≤ 2 in flight)")


def check_core_importable(python: str, work: Path) -> None:
    """``-m minicrawl.core`` runs in ``work`` (as every crawl does), where ``python`` imports an
    installed minicrawl: exit unless that is this checkout's (``pip install -e .``)."""
    where = subprocess.run([python, "-c", "import minicrawl.core as c; print(c.__file__)"],
                           capture_output=True, text=True, cwd=work, check=False).stdout.strip()
    if not where or not Path(where).is_relative_to(run.REPO):
        sys.exit(f"{python} imports minicrawl.core from {where}, not {run.REPO}: "
                 f"pip install -e {run.REPO}")
    print(f"core: {python} -m minicrawl.core ({where})")


def issue15_targets(medians: dict[tuple[str, int, int], dict[str, float]], latency: float,
                    cores: int) -> list[str]:
    """Issue 15's targets, checked against this run's medians where it measured them."""
    out = []
    m1, m16 = medians.get(("minicrawl", 1, 0)), medians.get(("minicrawl", 16, 0))
    wget = medians.get(("wget", 1, 0))
    verdict = {True: "PASS", False: "FAIL"}
    if latency == 0 and m16 and wget:
        out.append(f"- 0 ms, 16 threads: wall {run.fmt(m16['wall_s'])} s ≤ 0.5 × wget's "
                   f"{run.fmt(wget['wall_s'])} s (ratio {m16['wall_s'] / wget['wall_s']:.2f}): "
                   f"{verdict[m16['wall_s'] <= 0.5 * wget['wall_s']]}")
    if m16 and m1:
        out.append(f"- {latency:g} ms: 16 threads {run.fmt(m16['wall_s'])} s ≤ 1 thread's "
                   f"{run.fmt(m1['wall_s'])} s: {verdict[m16['wall_s'] <= m1['wall_s']]}; "
                   f"RSS 16/1 = {m16['rss_mb'] / m1['rss_mb']:.2f}")
    if m16:
        out.append(f"- {latency:g} ms: peak RSS at 16 threads {run.fmt(m16['rss_mb'], 0)} MB ≤ "
                   f"100 MB: {verdict[m16['rss_mb'] <= 100]}")
        if latency > 0:
            floor = max(m16["requests"] * latency / 1000 / 16, m16["cpu_s"] / cores)
            out.append(f"- {latency:g} ms, 16 threads: wall {run.fmt(m16['wall_s'])} s ≤ 1.3 × "
                       f"max(latency floor, CPU/{cores}) = 1.3 × {run.fmt(floor)} s "
                       f"({m16['wall_s'] / floor:.2f}×): "
                       f"{verdict[m16['wall_s'] <= 1.3 * floor]}")
    return out


def issue37_targets(medians: dict[tuple[str, int, int], dict[str, float]]) -> list[str]:
    """Issue 37's targets at 0 ms: run.py ×16 at its defaults (``minicrawl-def``) and the core
    ×16 each within 0.8 × wget's wall and 100 MB, and run.py ×16 never slower than ×1."""
    wget = medians.get(("wget", 1, 0))
    verdict = {True: "PASS", False: "FAIL"}
    out = []
    for name in (POLITENESS["default"], "core"):
        m16, m1 = medians.get((name, 16, 0)), medians.get((name, 1, 0))
        if m16 and wget:
            ratio = m16["wall_s"] / wget["wall_s"]
            out.append(f"- issue 37, {name} ×16: wall {run.fmt(m16['wall_s'])} s = {ratio:.2f} × "
                       f"wget's ≤ 0.8: {verdict[ratio <= 0.8]}")
        if m16:
            out.append(f"- issue 37, {name} ×16: peak RSS {run.fmt(m16['rss_mb'], 0)} MB ≤ 100: "
                       f"{verdict[m16['rss_mb'] <= 100]}")
        if m16 and m1 and name != "core":
            out.append(f"- issue 37, {name}: ×16 {run.fmt(m16['wall_s'])} s ≤ ×1's "
                       f"{run.fmt(m1['wall_s'])} s: {verdict[m16['wall_s'] <= m1['wall_s']]}")
    return out


def issue49_targets(medians: dict[tuple[str, int, int], dict[str, float]],
                    site: str) -> list[str]:
    """Issue 49's targets at 0 ms for run.py at its defaults (``minicrawl-def``): on the Java
    docs ×16 within 0.7 × wget's wall, faster than ×1 and within 100 MB; on the CPython docs
    within 0.6 × wget's wall (every thread count raced)."""
    wget = medians.get(("wget", 1, 0))
    name = POLITENESS["default"]
    verdict = {True: "PASS", False: "FAIL"}
    out = []
    if site == "cpython":
        for (crawler, conc, cap), m in medians.items():
            if crawler == name and not cap and wget:
                ratio = m["wall_s"] / wget["wall_s"]
                out.append(f"- issue 49, CPython docs, {name} ×{conc}: wall "
                           f"{run.fmt(m['wall_s'])} s = {ratio:.2f} × wget's "
                           f"{run.fmt(wget['wall_s'])} s ≤ 0.6: {verdict[ratio <= 0.6]}")
        return out
    m16, m1 = medians.get((name, 16, 0)), medians.get((name, 1, 0))
    if m16 and wget:
        ratio = m16["wall_s"] / wget["wall_s"]
        out.append(f"- issue 49, Java docs, {name} ×16: wall {run.fmt(m16['wall_s'])} s = "
                   f"{ratio:.2f} × wget's ≤ 0.7: {verdict[ratio <= 0.7]}")
    if m16 and m1:
        out.append(f"- issue 49, Java docs, {name}: ×16 {run.fmt(m16['wall_s'])} s faster than "
                   f"×1's {run.fmt(m1['wall_s'])} s: {verdict[m16['wall_s'] < m1['wall_s']]}")
    if m16:
        out.append(f"- issue 49, Java docs, {name} ×16: peak RSS {run.fmt(m16['rss_mb'], 0)} MB "
                   f"≤ 100: {verdict[m16['rss_mb'] <= 100]}")
    return out


if __name__ == "__main__":
    sys.exit(main())
