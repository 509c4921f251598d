"""The crawler race: minicrawl vs Scrapy vs wget on a link-dense site served by nginx.

    python bench/run.py                          # the default run (~10 min): 0 ms, 3 repetitions
    python bench/run.py --latency 0,20           # also through the 20 ms latency proxy
    python bench/run.py --reps 1 --threads 16 --peers wget   # a quick look
    python bench/run.py --through-proxy --latency 0 --peers none   # the proxy's own overhead

Generates the site (``sitegen.py``), serves it with nginx on 127.0.0.1 (optionally behind
``latency_proxy.py``), and crawls it with each crawler in turn — all configurations once per
repetition, interleaved, so that noise from a shared machine spreads over all of them — timing
each crawler process with ``os.wait4`` (wall, user+sys CPU) and /proc (its peak RSS: PeakRSS) and
counting its fetches in nginx's access log. Prints one Markdown table per latency, the ratios
minicrawl/peer, the limits (C/L pages/s, CPU per page) and the issue-8 targets; ``--json``
keeps every run's numbers. The exit status is 1 if minicrawl ever missed a page, fetched one
twice or fetched one that is not reachable.

Never run by the test suite: it takes minutes, installs nginx and Scrapy, and needs both cores.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path

import servers
import sitegen

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "minicrawl-bench"
# Requests a crawler may make besides the reachable pages without failing the exactly-once
# check (once each): a polite crawler reads robots.txt.
ALLOWED_EXTRA = {"/robots.txt"}
# A limit on requests in flight to one host (--per-host N today): raised to the thread count.
PER_HOST_LIMIT = re.compile(r"--(max-)?(per-(host|site|domain)|(host|site|domain)-"
                            r"(concurrency|connections))(-(connections|concurrency|requests))?$")


@dataclass
class Config:
    """One crawler at one concurrency."""

    crawler: str  # minicrawl | scrapy | wget
    concurrency: int

    @property
    def label(self) -> str:
        return f"{self.crawler} ×{self.concurrency}"


@dataclass
class Run:
    """One crawl: what the process cost and what nginx saw."""

    crawler: str
    concurrency: int
    latency_ms: float
    rep: int
    wall_s: float
    cpu_s: float  # user + system of the crawler process (and any children it reaped)
    user_s: float
    sys_s: float
    peak_rss_mb: float
    requests: int  # lines in nginx's log during the crawl
    distinct: int
    missed: int  # reachable URLs never requested
    duplicated: int  # URLs requested more than once
    extra: int  # URLs requested that are not reachable (besides ALLOWED_EXTRA)
    exit_code: int
    server_cpu_s: float  # nginx (+ proxy) CPU during the crawl
    missed_sample: list[str] = field(default_factory=list)
    dup_sample: list[str] = field(default_factory=list)
    extra_sample: list[str] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        return not (self.missed or self.duplicated or self.extra)


# -- the crawlers ----------------------------------------------------------------------------

@functools.cache  # one `run.py --help` per bench run, not one per crawl
def _minicrawl_help(python: str) -> str:
    return subprocess.run([python, str(REPO / "run.py"), "--help"], capture_output=True,
                          text=True, cwd=REPO, check=False).stdout


def minicrawl_politeness_args(python: str, threads: int) -> list[str]:
    """Flags that switch politeness off, if ``run.py --help`` has them at the time of the run.

    The crawler is being given politeness (delays, robots.txt, per-host limits) while this bench
    is written, so the flags are discovered, not assumed: any option naming a delay is set to
    0, a ``--no-robots``/``--ignore-robots`` switch is given, and a per-host connection limit is
    raised to the thread count. Anything else can be passed with ``--minicrawl-arg``.
    """
    out = _minicrawl_help(python)
    args: list[str] = []
    for m in re.finditer(r"^\s+(--[a-z0-9][a-z0-9-]*)(?:[ =]([A-Z_{][^\s,]*))?", out, re.M):
        name, metavar = m.group(1), m.group(2)
        if metavar is None:
            if "robots" in name and (name.startswith("--no-") or name.startswith("--ignore")):
                args.append(name)
        elif "delay" in name and not name.startswith("--max"):
            args += [name, "0"]  # --max-crawl-delay is a cap on robots.txt's, left alone
        elif "robots" in name and metavar.startswith("{") and "off" in metavar:
            args += [name, "off"]
        elif PER_HOST_LIMIT.match(name):  # not --max-pages-per-host: that one is a page cap
            args += [name, str(threads)]
    return args


def command(cfg: Config, url: str, opts: argparse.Namespace, scrapy_python: str | None,
            work: Path) -> list[str]:
    if cfg.crawler == "minicrawl":
        return ([opts.python, str(REPO / "run.py"), url, "--threads", str(cfg.concurrency),
                 "--quiet"] + minicrawl_politeness_args(opts.python, cfg.concurrency)
                + list(opts.minicrawl_arg))
    if cfg.crawler == "scrapy":
        assert scrapy_python is not None
        return [scrapy_python, str(HERE / "scrapy_crawl.py"), url, "--concurrency",
                str(cfg.concurrency)]
    if cfg.crawler == "wget":
        # One connection; -nd --delete-after: nothing kept, but every page is still parsed.
        # robots=off: the others do not read robots.txt either.
        return ["wget", "--recursive", "--level=inf", "--no-directories", "--no-parent",
                "--delete-after", "--execute", "robots=off", "--no-proxy", "--quiet",
                "--directory-prefix", str(work / "wget"), url]
    raise ValueError(cfg.crawler)


def ensure_scrapy(cache: Path) -> str:
    """The Python of a venv with Scrapy in it, created with pip on first use."""
    venv = cache / "scrapy-venv"
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import scrapy; print(scrapy.__version__)"]
    if python.exists() and subprocess.run(probe, capture_output=True, check=False).returncode == 0:
        return str(python)
    print(f"creating {venv} and installing Scrapy with pip ...", flush=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "scrapy"], check=True)
    return str(python)


def compile_sources(*checkouts: Path) -> None:
    """Write the bytecode of each checkout's package before anything is timed, as a user's first
    run does for the next ones: with PYTHONDONTWRITEBYTECODE set (as on some CI machines) every
    timed run would compile the package again, ~0.1 s of CPU that no second run pays."""
    import compileall

    for checkout in checkouts:
        compileall.compile_dir(checkout / "minicrawl", quiet=1)


def version_of(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr) else "?"


# -- one measured crawl ----------------------------------------------------------------------

class PeakRSS:
    """The peak RSS of process ``pid`` itself (kB), read from /proc (VmHWM) every 20 ms while it
    runs. Not wait4's ru_maxrss: Linux carries the parent's high-water mark over the exec of a
    child made by vfork (as subprocess makes them), so a bench that has read a million-line
    nginx log reported its own ~400 MB as the crawler's. VmHWM starts anew at exec, and only
    grows: the last reading before the process ends is its peak (to 20 ms of growth)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.kib = pid, 0
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        while True:
            try:
                with open(f"/proc/{self.pid}/status") as f:
                    hwm = next((int(line.split()[1]) for line in f
                                if line.startswith("VmHWM")), None)
            except (OSError, ValueError):
                return
            if hwm is None:  # a zombie: its memory is gone, its peak read already
                return
            self.kib = max(self.kib, hwm)
            time.sleep(0.02)


def measure(cfg: Config, cmd: list[str], ng: servers.Nginx, proxy: servers.LatencyProxy | None,
            expected: set[str], latency: float, rep: int, work: Path, timeout: float,
            stdout: Path | None = None) -> Run:
    """Run ``cmd`` once; time it with wait4 and check its fetches against ``expected``.

    Its output goes to a log in ``work``; its standard output to ``stdout`` instead if given
    (for a crawler that prints one line per page, to count them).
    """
    offset = ng.log_size()
    server_cpu = ng.cpu() + (proxy.cpu() if proxy else 0.0)
    log_path = work / f"{cfg.crawler}-{cfg.concurrency}-{latency:g}ms-{rep}.log"
    with open(log_path, "wb") as log, (open(stdout, "wb") if stdout else nullcontext(log)) as out:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=log, cwd=work,
                                start_new_session=True)
        # A hung crawler must not hang the bench: kill its process group after ``timeout``.
        killer = threading.Timer(timeout, os.killpg, (proc.pid, signal.SIGKILL))
        killer.start()
        peak = PeakRSS(proc.pid)
        try:
            # wait4, not wait: it returns this child's own rusage (CPU; its peak RSS is
            # PeakRSS's), which RUSAGE_CHILDREN would mix with nginx's and the proxy's.
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:
            # Ctrl-C: the crawler is in its own session (so the terminal's SIGINT never
            # reaches it mid-measurement); stop it here rather than leave it running.
            os.killpg(proc.pid, signal.SIGKILL)
            os.waitpid(proc.pid, 0)
            proc.returncode = -signal.SIGKILL
            raise
        finally:
            killer.cancel()
        wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)  # tell Popen it has been reaped
    requests = ng.requests_since(offset)
    server_cpu = ng.cpu() + (proxy.cpu() if proxy else 0.0) - server_cpu
    counts = servers.count_fetches(requests)
    missed = sorted(expected - set(counts))
    dups = sorted(p for p, c in counts.items() if c > 1)
    extra = sorted(p for p in counts if p not in expected and p not in ALLOWED_EXTRA)
    return Run(cfg.crawler, cfg.concurrency, latency, rep, round(wall, 3),
               round(usage.ru_utime + usage.ru_stime, 3), round(usage.ru_utime, 3),
               round(usage.ru_stime, 3), round(peak.kib / 1024, 1), len(requests),
               len(counts), len(missed), len(dups), len(extra), proc.returncode,
               round(server_cpu, 2), missed[:5], dups[:5], extra[:5])


# -- reporting -------------------------------------------------------------------------------

def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def summarize(runs: list[Run]) -> dict[str, float]:
    """Medians of one configuration's repetitions (counts: the worst repetition)."""
    wall = med([r.wall_s for r in runs])
    cpu = med([r.cpu_s for r in runs])
    reqs = med([r.requests for r in runs])
    return {
        "wall_s": wall, "cpu_s": cpu, "user_s": med([r.user_s for r in runs]),
        "sys_s": med([r.sys_s for r in runs]), "rss_mb": med([r.peak_rss_mb for r in runs]),
        "requests": reqs, "pages_per_s": med([r.requests / r.wall_s for r in runs]),
        "cpu_ms_per_page": med([1000 * r.cpu_s / max(1, r.requests) for r in runs]),
        "missed": max(r.missed for r in runs), "duplicated": max(r.duplicated for r in runs),
        "extra": max(r.extra for r in runs), "exact_runs": sum(r.exact for r in runs),
        "runs": len(runs), "server_cpu_s": med([r.server_cpu_s for r in runs]),
        "wall_min": min(r.wall_s for r in runs), "wall_max": max(r.wall_s for r in runs),
    }


def fmt(x: float, digits: int = 2) -> str:
    if x != x:  # NaN
        return "–"
    if x == float("inf"):
        return "∞"
    return f"{x:.{digits}f}" if abs(x) < 1000 else f"{x:,.0f}"


def table(latency: float, results: dict[tuple[str, int], dict[str, float]], pages: int,
          cores: int) -> str:
    """The Markdown results table of one latency."""
    lines = [
        f"#### latency {latency:g} ms — {pages} reachable URLs",
        "",
        "| crawler | conc. | wall s (min–max) | CPU s | CPU ms/page | peak RSS MB | pages/s "
        "| limit C/L pages/s | requests | missed | dup. | extra | exactly once | server CPU s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| --- | ---: |",
    ]
    for (crawler, conc), s in results.items():
        limit = conc / (latency / 1000) if latency > 0 else float("inf")
        exact = f"{int(s['exact_runs'])}/{int(s['runs'])}"
        lines.append(
            f"| {crawler} | {conc} | {fmt(s['wall_s'])} ({fmt(s['wall_min'])}–"
            f"{fmt(s['wall_max'])}) | {fmt(s['cpu_s'])} | {fmt(s['cpu_ms_per_page'])} "
            f"| {fmt(s['rss_mb'], 0)} | {fmt(s['pages_per_s'], 0)} | {fmt(limit, 0)} "
            f"| {s['requests']:.0f} | {s['missed']:.0f} | {s['duplicated']:.0f} "
            f"| {s['extra']:.0f} | {exact} | {fmt(s['server_cpu_s'])} |")
    lines += ["", "Ratios minicrawl / peer (same run; < 1 means minicrawl is better):", "",
              "| threads | wall / Scrapy wall (same conc.) | wall / wget wall | CPU / Scrapy CPU "
              "| RSS / Scrapy RSS | wall / floor |",
              "| ---: | ---: | ---: | ---: | ---: | ---: |"]
    wget = results.get(("wget", 1))
    for (crawler, conc), s in results.items():
        if crawler != "minicrawl":
            continue
        sc = results.get(("scrapy", conc))
        # The floor: the wall time no crawler with C connections can beat at latency L
        # (pages × L / C), or the crawler's own CPU spread over every core, whichever is larger.
        floor = max(s["requests"] * latency / 1000 / conc, s["cpu_s"] / cores)
        lines.append(
            f"| {conc} | {fmt(s['wall_s'] / sc['wall_s'], 3) if sc else '–'} "
            f"| {fmt(s['wall_s'] / wget['wall_s'], 3) if wget else '–'} "
            f"| {fmt(s['cpu_s'] / sc['cpu_s'], 3) if sc else '–'} "
            f"| {fmt(s['rss_mb'] / sc['rss_mb'], 3) if sc else '–'} "
            f"| {fmt(s['wall_s'] / floor, 2)} (floor {fmt(floor)} s) |")
    return "\n".join(lines)


def targets(all_results: dict[float, dict[tuple[str, int], dict[str, float]]],
            cores: int) -> list[str]:
    """Issue 8's targets, checked against this run's medians where it measured them."""
    out = []
    zero = all_results.get(0.0, {})
    m16, s16, w = zero.get(("minicrawl", 16)), zero.get(("scrapy", 16)), zero.get(("wget", 1))
    if m16 and s16:
        ok = m16["wall_s"] <= s16["wall_s"] / 8
        out.append(f"- 0 ms, 16 threads: minicrawl wall {fmt(m16['wall_s'])} s ≤ Scrapy's / 8 "
                   f"= {fmt(s16['wall_s'] / 8)} s: {'PASS' if ok else 'FAIL'}")
        ok = m16["rss_mb"] <= s16["rss_mb"] / 2
        out.append(f"- peak RSS {fmt(m16['rss_mb'], 0)} MB ≤ half of Scrapy's "
                   f"{fmt(s16['rss_mb'], 0)} MB: {'PASS' if ok else 'FAIL'}")
    if m16 and w:
        ok = m16["wall_s"] <= w["wall_s"]
        out.append(f"- 0 ms, 16 threads: minicrawl wall {fmt(m16['wall_s'])} s ≤ wget's "
                   f"{fmt(w['wall_s'])} s: {'PASS' if ok else 'FAIL'}")
    for latency, results in all_results.items():
        m = results.get(("minicrawl", 16))
        if latency > 0 and m:
            floor = max(m["requests"] * latency / 1000 / 16, m["cpu_s"] / cores)
            ok = m["wall_s"] <= 2 * floor
            out.append(f"- {latency:g} ms, 16 threads: wall {fmt(m['wall_s'])} s ≤ 2 × "
                       f"max(latency floor {fmt(m['requests'] * latency / 1000 / 16)} s, "
                       f"CPU/{cores} cores {fmt(m['cpu_s'] / cores)} s): "
                       f"{'PASS' if ok else 'FAIL'}")
    return out


def machine() -> str:
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    load = os.getloadavg()
    return (f"{os.cpu_count()} CPUs ({len(os.sched_getaffinity(0))} usable), {model}, "
            f"{mem_kb / 1024 / 1024:.1f} GiB RAM, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}; load average {load[0]:.2f} {load[1]:.2f} "
            f"{load[2]:.2f}")


# -- main ------------------------------------------------------------------------------------

def int_list(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def float_list(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:3]),
        allow_abbrev=False)
    ap.add_argument("--threads", type=int_list, default=[1, 4, 16, 32],
                    help="minicrawl thread counts, comma-separated (default: 1,4,16,32)")
    ap.add_argument("--scrapy-concurrency", type=int_list, default=None,
                    help="Scrapy CONCURRENT_REQUESTS values (default: 16 if in --threads, "
                    "else the last of --threads)")
    ap.add_argument("--peers", default="scrapy,wget",
                    help="peers to race, comma-separated: scrapy, wget, or none")
    ap.add_argument("--reps", type=int, default=3, help="repetitions of every configuration")
    ap.add_argument("--latency", type=float_list, default=[0.0],
                    help="added latency per request in ms, comma-separated (default: 0)")
    ap.add_argument("--through-proxy", action="store_true",
                    help="use the latency proxy even at 0 ms (measures its overhead)")
    ap.add_argument("--seed", type=int, default=1, help="site generator seed")
    ap.add_argument("--nginx-workers", type=int, default=1,
                    help="nginx worker processes (1 leaves the second core to the crawler)")
    ap.add_argument("--python", default=sys.executable,
                    help="Python that runs minicrawl (it must have minicrawl's dependencies)")
    ap.add_argument("--minicrawl-arg", action="append", default=[],
                    help="extra argument for minicrawl's run.py (repeatable)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds before a crawl is killed")
    ap.add_argument("--cache-dir", type=Path, default=CACHE, help="where the Scrapy venv lives")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (site, logs)")
    ap.add_argument("--json", type=Path, help="write every run's numbers to this file")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    peers = [p for p in opts.peers.split(",") if p and p != "none"]
    scrapy_conc = opts.scrapy_concurrency
    if scrapy_conc is None:
        # Scrapy runs at ~the same pages/s whatever the concurrency (issue 8) and is the slowest
        # crawler here (~80 s a crawl); racing it at the concurrency the targets name keeps the
        # run under ten minutes. --scrapy-concurrency 1,4,16,32 races it everywhere.
        scrapy_conc = [c for c in opts.threads if c == 16] or opts.threads[-1:]
    configs = [Config("minicrawl", n) for n in opts.threads]
    scrapy_python = None
    if "scrapy" in peers:
        scrapy_python = ensure_scrapy(opts.cache_dir)
        configs += [Config("scrapy", n) for n in scrapy_conc]
    if "wget" in peers:
        servers.ensure_tool("wget", "wget")
        configs.append(Config("wget", 1))
    cores = len(os.sched_getaffinity(0))

    compile_sources(REPO)
    work = Path(tempfile.mkdtemp(prefix="minicrawl-bench-"))
    print(f"machine: {machine()}")
    commit = version_of(["git", "-C", str(REPO), "describe", "--always", "--dirty"])
    print(f"minicrawl: {REPO} ({commit}); "
          f"{version_of([opts.python, str(REPO / 'run.py'), '--version'])}")
    if scrapy_python:
        print(f"scrapy: {version_of([scrapy_python, '-m', 'scrapy', 'version'])}")
    if "wget" in peers:
        print(f"wget: {version_of(['wget', '--version'])}")
    nginx_port = servers.free_port()
    site_dir = work / "site"
    site_dir.mkdir()
    ng = servers.Nginx(work, site_dir, nginx_port, opts.nginx_workers).start()
    print(f"nginx: {version_of([ng.binary, '-v'])} on {ng.origin}, "
          f"{opts.nginx_workers} worker(s); temp dir {work}")
    all_runs: list[Run] = []
    all_results: dict[float, dict[tuple[str, int], dict[str, float]]] = {}
    tables: list[str] = []
    failed = False
    started = time.perf_counter()
    try:
        for latency in opts.latency:
            proxy = None
            origin = ng.origin
            if latency > 0 or opts.through_proxy:
                proxy = servers.LatencyProxy(servers.free_port(), nginx_port, latency).start()
                origin = proxy.origin
            # Regenerated per origin: the site's absolute links name the port being crawled.
            t0 = time.perf_counter()
            site = sitegen.generate(site_dir, origin, opts.seed)
            sitegen.write_expected(site, work / "expected.json")
            expected = set(site.expected)
            print(f"\nsite for {origin}: {site.describe()} (generated in "
                  f"{time.perf_counter() - t0:.1f} s)")
            url = origin + "/"
            if minicrawl_args := minicrawl_politeness_args(opts.python, 16):
                print(f"minicrawl politeness switched off with: {' '.join(minicrawl_args)}")
            for cfg in configs:  # what was run, to re-run one by hand (e.g. under py-spy)
                if cfg.concurrency in (1, 16) or cfg.crawler != "minicrawl":
                    cmd = command(cfg, url, opts, scrapy_python, work)
                    print(f"  {cfg.label}: {' '.join(cmd)}")
            runs: dict[tuple[str, int], list[Run]] = {(c.crawler, c.concurrency): []
                                                      for c in configs}
            try:
                for rep in range(opts.reps):
                    for cfg in configs:
                        cmd = command(cfg, url, opts, scrapy_python, work)
                        run = measure(cfg, cmd, ng, proxy, expected, latency, rep, work,
                                      opts.timeout)
                        runs[(cfg.crawler, cfg.concurrency)].append(run)
                        all_runs.append(run)
                        flag = "exact" if run.exact else (
                            f"MISSED {run.missed} {run.missed_sample} DUP {run.duplicated} "
                            f"{run.dup_sample} EXTRA {run.extra} {run.extra_sample}")
                        print(f"  [{time.perf_counter() - started:6.0f} s] {latency:g} ms rep "
                              f"{rep + 1}/{opts.reps} {cfg.label:14} wall {run.wall_s:7.2f} s "
                              f"cpu {run.cpu_s:6.2f} s rss {run.peak_rss_mb:6.0f} MB "
                              f"{run.requests:5d} req exit {run.exit_code} {flag}", flush=True)
                        if cfg.crawler == "minicrawl" and (not run.exact or run.exit_code):
                            failed = True
            finally:
                if proxy:
                    proxy.stop()
            results = {key: summarize(rs) for key, rs in runs.items() if rs}
            all_results[latency] = results
            tables.append(table(latency, results, len(expected), cores))
            print("\n" + tables[-1], flush=True)
    finally:
        ng.stop()
        if not opts.keep:
            shutil.rmtree(work, ignore_errors=True)
    self_usage = resource.getrusage(resource.RUSAGE_SELF)
    print(f"\n### Results ({opts.reps} repetitions, medians; machine: {machine()})\n")
    print("\n\n".join(tables))
    print("\nIssue 8 targets (this run):")
    print("\n".join(targets(all_results, cores)) or "- none measured in this run")
    print(f"\nbench total {time.perf_counter() - started:.0f} s; bench process itself "
          f"{self_usage.ru_utime + self_usage.ru_stime:.1f} CPU s")
    if opts.json:
        opts.json.write_text(json.dumps({
            "machine": machine(), "argv": sys.argv, "runs": [asdict(r) for r in all_runs],
            "medians": {f"{lat:g}ms": {f"{c}x{n}": s for (c, n), s in res.items()}
                        for lat, res in all_results.items()}}, indent=1))
    if failed:
        print("minicrawl did NOT fetch every reachable page exactly once (see above)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
