"""Many hosts, every answer late (issue 49): minicrawl, wget2 and Scrapy on 8 sites × 400 pages.

    python bench/manyhosts.py                      # 3 reps, ×16 (2/host) and ×64 (8/host), ~8 min
    python bench/manyhosts.py --reps 1 --peers none --conc 64:8   # minicrawl alone, one crawl
    python bench/manyhosts.py --check-server       # the server alone at 0 ms: its own ceiling
    python bench/manyhosts.py --profile            # minicrawl once under py-spy, CPU by step
    python bench/manyhosts.py --serve-only         # serve the sites until Ctrl-C (for by hand)

The workload crawlers really have: many hosts, a round trip per request, pages of a real size.

* **Sites** (:func:`site`, deterministic for ``--seed``): 8 sites, one per loopback address
  127.0.0.2 … 127.0.0.9 on one port, 400 pages each (``/`` and ``/p1.html`` … ``/p399.html``),
  ~20 KB of text and 40 links a page: a link to the next page (so the site's pages are all
  reachable from its ``/`` without leaving it), 35 to random pages of the same site spelled
  relative, root-relative or absolute, and 4 absolute links to random pages of the other sites.
* **Server** (:func:`serve`): one asyncio process holding every page in memory as a ready
  response; each request is answered ``--latency`` ms (50) after its last header byte arrived,
  on a keep-alive connection, and logged (host, path, status) for the exactly-once check.
  ``--check-server`` measures what it can do at 0 ms, so the crawl's walls are the crawlers'.
* **Crawlers**, each configuration once a repetition, interleaved: minicrawl (``run.py`` with the
  8 seeds, ``--threads C --per-host H --delay 0 --ignore-robots --quiet``), wget2
  (``--recursive --max-threads C``, robots off, files deleted), Scrapy (``scrapy_crawl.py`` with
  ``CONCURRENT_REQUESTS`` C, ``_PER_DOMAIN`` H, no delay, robots off; its venv is run.py's).
  Measured as run.py measures: ``os.wait4`` for wall and CPU, /proc's VmHWM for peak RSS.

The limit is pages × latency ÷ connections: no crawler with C connections does better.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import servers

import run

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SITES = 8
PAGES = 400
LINKS = 40
CROSS = 4  # of the LINKS, to other sites
PAGE_BYTES = 20_000
WORDS = ("crawl frontier visited politeness latency request response header anchor href "
         "parser thread queue bloom filter canonical redirect robots sitemap host origin "
         "scheme path query fragment encoding charset document element attribute").split()


def hosts(n: int = SITES) -> list[str]:
    """The sites' addresses: 127.0.0.2 onwards (127.0.0.1 is left to other benches)."""
    return [f"127.0.0.{2 + i}" for i in range(n)]


def page_path(i: int) -> str:
    # Page 0 is the site's root, so that the seed and the links to it are one URL.
    return "/" if i == 0 else f"/p{i}.html"


def site(port: int, seed: int = 1, pages: int = PAGES, n_sites: int = SITES
         ) -> dict[tuple[str, str], bytes]:
    """Every page of every site: (host, path) → HTML. The same bytes for the same arguments."""
    rnd = random.Random(seed)
    addrs = hosts(n_sites)
    out: dict[tuple[str, str], bytes] = {}
    for s, host in enumerate(addrs):
        for i in range(pages):
            hrefs = [page_path((i + 1) % pages)]
            for _ in range(LINKS - 1 - CROSS):
                j = rnd.randrange(pages)
                style = rnd.random()
                if style < 0.5:  # relative, as most sites spell their own links
                    hrefs.append("./" if j == 0 else f"p{j}.html")
                elif style < 0.8:
                    hrefs.append(page_path(j))
                else:
                    hrefs.append(f"http://{host}:{port}{page_path(j)}")
            for _ in range(CROSS):
                other = addrs[(s + 1 + rnd.randrange(n_sites - 1)) % n_sites]
                hrefs.append(f"http://{other}:{port}{page_path(rnd.randrange(pages))}")
            rnd.shuffle(hrefs)
            parts = [f"<!DOCTYPE html>\n<html><head><meta charset=utf-8><title>{host} page {i}"
                     f"</title></head>\n<body><h1>Page {i} of {host}</h1>\n"]
            size = sum(map(len, parts))
            per_link = PAGE_BYTES // LINKS
            for k, href in enumerate(hrefs):
                words = " ".join(rnd.choice(WORDS) for _ in range(per_link // 8))
                chunk = f'<p>{words} <a href="{href}">link {k}</a></p>\n'
                parts.append(chunk)
                size += len(chunk)
            parts.append("</body></html>\n")
            out[(host, page_path(i))] = "".join(parts).encode()
    return out


def expected(seed: int = 1, pages: int = PAGES, n_sites: int = SITES) -> set[str]:
    """What an exactly-once crawl requests, as the server logs it: ``host/path``."""
    return {f"{h}{page_path(i)}" for h in hosts(n_sites) for i in range(pages)}


# -- the server -----------------------------------------------------------------------------

class Late(asyncio.Protocol):
    """One keep-alive connection: each request answered ``delay`` s after it arrived, in order."""

    def __init__(self, pages: dict[tuple[str, str], bytes], delay: float, log: list[str]) -> None:
        self.pages, self.delay, self.log = pages, delay, log
        self.buf = b""
        self.host = ""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.host = transport.get_extra_info("sockname")[0]  # the site is the address dialled

    def data_received(self, data: bytes) -> None:
        self.buf += data
        loop = asyncio.get_running_loop()
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head, self.buf = self.buf[:end], self.buf[end + 4:]
            target = head.split(b" ", 2)[1].decode("latin-1")
            path = target.split("?", 1)[0]
            if path.startswith("http://"):  # absolute form (a proxy's): keep the path
                path = "/" + path.split("/", 3)[3] if path.count("/") >= 3 else "/"
            body = self.pages.get((self.host, path))
            status = 200 if body is not None else 404
            self.log.append(f"{self.host}{target} {status}\n")
            if body is None:
                body = b"not found\n"
            reply = (b"HTTP/1.1 %d %s\r\nContent-Type: text/html; charset=utf-8\r\n"
                     b"Content-Length: %d\r\nConnection: keep-alive\r\n\r\n"
                     % (status, b"OK" if status == 200 else b"Not Found", len(body))) + body
            if self.delay:
                loop.call_later(self.delay, self._send, reply)
            else:
                self._send(reply)

    def _send(self, reply: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None


async def _serve(port: int, latency_ms: float, seed: int, log_path: Path) -> None:
    pages = site(port, seed)
    # Responses are prebuilt per request (the header is a few dozen bytes); the log is written
    # in one go every 50 ms, not once a request, so the loop spends its time on the sockets.
    log: list[str] = []
    loop = asyncio.get_running_loop()
    delay = latency_ms / 1000
    listeners = [await loop.create_server(lambda: Late(pages, delay, log), h, port,
                                          reuse_address=True, backlog=1024) for h in hosts()]
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"ready {port}", flush=True)
    with open(log_path, "a") as f:
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), 0.05)
            except TimeoutError:
                pass
            if log:
                f.write("".join(log))
                log.clear()
                f.flush()
    for server in listeners:
        server.close()


class LateServer:
    """The server as a child process, with the methods of ``servers.Nginx`` that
    ``run.measure`` calls (log_size, requests_since, cpu), so crawls are measured as run.py's."""

    def __init__(self, work: Path, latency_ms: float, seed: int) -> None:
        self.log_path = work / "access.log"
        self.log_path.touch()
        self.latency_ms, self.seed = latency_ms, seed
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0

    def start(self) -> LateServer:
        for _ in range(20):  # a port free on 127.0.0.2 may be taken on another address
            port = servers.free_port()
            self.proc = subprocess.Popen(
                [sys.executable, __file__, "--serve", str(port), "--latency", str(self.latency_ms),
                 "--seed", str(self.seed), "--log", str(self.log_path)],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            assert self.proc.stdout is not None
            if self.proc.stdout.readline().startswith("ready"):
                self.port = port
                return self
            self.proc.wait()
        raise RuntimeError("no port free on all 8 addresses")

    def urls(self) -> list[str]:
        return [f"http://{h}:{self.port}/" for h in hosts()]

    def cpu(self) -> float:
        return servers.proc_cpu(self.proc.pid) if self.proc else 0.0

    def log_size(self) -> int:
        time.sleep(0.12)  # the server writes its log every 50 ms
        return self.log_path.stat().st_size

    def requests_since(self, offset: int) -> list[tuple[str, int]]:
        time.sleep(0.12)
        with open(self.log_path, "rb") as f:
            f.seek(offset)
            lines = f.read().decode().splitlines()
        return [(u, int(s)) for u, s in (line.rsplit(" ", 1) for line in lines)]

    def stop(self) -> None:
        servers.stop_process(self.proc, signal.SIGTERM)

    def __enter__(self) -> LateServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- the crawlers -----------------------------------------------------------------------------

def command(tool: str, conc: int, per_host: int, urls: list[str], work: Path,
            scrapy_python: str | None) -> list[str]:
    """The command line of one crawl at ``conc`` connections, ``per_host`` a host."""
    if tool == "minicrawl":
        return [sys.executable, str(REPO / "run.py"), *urls, "--threads", str(conc),
                "--per-host", str(per_host), "--delay", "0", "--ignore-robots", "--quiet"]
    if tool == "wget2":
        # wget2 has no per-host limit: its C threads go wherever its queue says.
        return ["/usr/bin/wget2", "--recursive", "--level=inf", "--no-parent", "--robots=off",
                f"--max-threads={conc}", "--delete-after", "--no-directories", "--quiet",
                "--no-proxy", "--directory-prefix", str(work / "wget2"), *urls]
    if tool == "scrapy":
        assert scrapy_python is not None
        return [scrapy_python, str(HERE / "scrapy_crawl.py"), *urls, "--concurrency", str(conc),
                "--per-domain", str(per_host)]
    raise ValueError(tool)


def fmt_row(tool: str, runs: list[run.Run], limit: float, pages: int) -> str:
    walls = sorted(r.wall_s for r in runs)
    wall = run.med(walls)
    cpu_ms = run.med([r.cpu_s for r in runs]) / pages * 1000
    fetched = "/".join(str(r.distinct - r.extra) for r in runs)
    ok = sum(r.exact for r in runs)
    return (f"| {tool} | {wall:.2f} ({walls[0]:.2f}–{walls[-1]:.2f}) | {wall / limit:.2f} | "
            f"{cpu_ms:.2f} | {run.med([r.peak_rss_mb for r in runs]):.0f} | {fetched} | "
            f"{ok}/{len(runs)} | {run.med([r.server_cpu_s for r in runs]):.2f} |")


def race(opts: argparse.Namespace) -> int:
    confs = [tuple(int(x) for x in c.split(":")) for c in opts.conc.split(",")]
    tools = ["minicrawl"] + [t for t in opts.peers.split(",") if t and t != "none"]
    scrapy_python = (run.ensure_scrapy(Path(opts.cache)) if "scrapy" in tools else None)
    run.compile_sources(REPO)
    want = expected(opts.seed)
    pages = len(want)
    print(run.machine(), flush=True)
    print(f"{SITES} sites × {PAGES} pages, {opts.latency:g} ms a request; load "
          f"{os.getloadavg()[0]:.2f} at the start", flush=True)
    results: dict[tuple[str, int, int], list[run.Run]] = {}
    with tempfile.TemporaryDirectory(prefix="manyhosts-") as tmp:
        work = Path(tmp)
        with LateServer(work, opts.latency, opts.seed) as srv:
            for rep in range(opts.reps):
                for conc, per_host in confs:
                    for tool in tools:
                        cmd = command(tool, conc, per_host, srv.urls(), work, scrapy_python)
                        if rep == 0 and conc == confs[0][0]:
                            print("  " + " ".join(cmd[1:] if tool != "wget2" else cmd), flush=True)
                        r = run.measure(run.Config(tool, conc), cmd, srv, None, want,
                                        opts.latency, rep, work, opts.timeout)
                        results.setdefault((tool, conc, per_host), []).append(r)
                        print(f"rep {rep} {tool} ×{conc}/{per_host}: wall {r.wall_s:.2f} s, "
                              f"cpu {r.cpu_s:.2f} s, rss {r.peak_rss_mb:.0f} MB, {r.distinct} "
                              f"URLs, missed {r.missed}, dup {r.duplicated}, extra {r.extra}, "
                              f"exit {r.exit_code}, load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"\nload at the end {os.getloadavg()[0]:.2f}")
    for conc, per_host in confs:
        limit = pages * opts.latency / 1000 / conc
        print(f"\n{conc} connections, {per_host} per host, {opts.latency:g} ms "
              f"(limit {limit:.2f} s)\n")
        print("| tool | wall s (min–max) | × the limit | CPU ms a page | peak RSS MB | "
              "pages fetched | exactly once | server CPU s |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for tool in tools:
            print(fmt_row(tool, results[(tool, conc, per_host)], limit, pages))
    bad = [r for rs in results.values() for r in rs if r.crawler == "minicrawl" and not r.exact]
    return 1 if bad else 0


def check_server(opts: argparse.Namespace) -> int:
    """The server's ceiling: wget2 at 64 threads against it at 0 ms (and at --latency)."""
    want = expected(opts.seed)
    for latency in (0.0, opts.latency):
        with tempfile.TemporaryDirectory(prefix="manyhosts-") as tmp:
            work = Path(tmp)
            with LateServer(work, latency, opts.seed) as srv:
                cmd = command("wget2", 64, 8, srv.urls(), work, None)
                r = run.measure(run.Config("wget2", 64), cmd, srv, None, want, latency, 0, work,
                                opts.timeout)
                print(f"{latency:g} ms: wget2 ×64 {r.distinct} pages in {r.wall_s:.2f} s "
                      f"({r.distinct / r.wall_s:.0f} pages/s), server CPU {r.server_cpu_s:.2f} s "
                      f"({r.server_cpu_s / max(r.distinct, 1) * 1e6:.0f} µs a page), "
                      f"wget2 CPU {r.cpu_s:.2f} s", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--conc", default="16:2,64:8", help="connections:per-host, comma-separated")
    ap.add_argument("--peers", default="wget2,scrapy", help="wget2,scrapy or none")
    ap.add_argument("--latency", type=float, default=50.0, help="ms before each answer")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=300.0, help="s before a crawl is killed")
    ap.add_argument("--cache", default=str(Path.home() / ".cache" / "minicrawl-bench"))
    ap.add_argument("--check-server", action="store_true")
    ap.add_argument("--profile", action="store_true", help="minicrawl once under py-spy")
    ap.add_argument("--serve-only", action="store_true")
    ap.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    ap.add_argument("--log", help=argparse.SUPPRESS)
    opts = ap.parse_args(argv)
    if opts.serve is not None:
        try:
            asyncio.run(_serve(opts.serve, opts.latency, opts.seed, Path(opts.log)))
        except OSError:  # the port is taken on one of the addresses: the parent tries another
            print("busy", flush=True)
            return 1
        return 0
    if opts.check_server:
        return check_server(opts)
    if opts.profile:  # the same crawl under py-spy, CPU by step (profile_steps.py)
        import profile_steps
        conc, per_host = opts.conc.split(",")[0].split(":")
        return profile_steps.main(["manyhosts", "--threads", conc, "--per-host", per_host,
                                   "--latency", str(opts.latency)])
    if opts.serve_only:
        with tempfile.TemporaryDirectory(prefix="manyhosts-") as tmp:
            with LateServer(Path(tmp), opts.latency, opts.seed) as srv:
                print("\n".join(srv.urls()), flush=True)
                try:
                    signal.pause()
                except KeyboardInterrupt:
                    pass
        return 0
    return race(opts)


if __name__ == "__main__":
    sys.exit(main())

