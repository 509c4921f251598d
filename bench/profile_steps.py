"""minicrawl's CPU by step (issue 49): one crawl under py-spy, its samples sorted into the steps.

    python bench/profile_steps.py manyhosts        # the 8 × 400 pages of manyhosts.py, ×16/2, 50 ms
    python bench/profile_steps.py tree             # the endless tree's tiny pages, 20,000 of them
    python bench/profile_steps.py manyhosts --latency 0 --threads 64 --per-host 8
    python bench/profile_steps.py --raw FILE       # sort an existing ``py-spy -f raw`` file again

``py-spy record -r 200 -f raw`` samples every thread of the real process 200 times a second
(no cProfile inside it) and leaves out threads not on a CPU (asleep on a socket, or waiting for
the GIL), so a sample is CPU spent. Each sample's stack is read from the innermost frame out; the
first frame that names a step decides (:data:`RULES`): fetch (requests, urllib3, http.client,
sockets, minicrawl/http), parse (a line of the walk that hands bytes to lxml), walk (the rest of
the walk over the tree), resolve/canonicalize, Visited, ToDo/politeness, records, live view,
and the worker/crawler loop. Library frames not in a rule (urllib.parse, threading, queue) go to
whoever called them: urllib.parse under the resolver is resolving, under requests fetching.
The table gives each step's samples, its share and its CPU a page (the step's share of the
process's user+sys CPU from wait4, over the pages fetched); then the 25 innermost frames by
samples, for where inside a step the time goes.
"""

from __future__ import annotations

import argparse
import linecache
import os
import re
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

import manyhosts
import servers

import run

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*):(?P<line>\d+)\)$")
# The source line of a walk frame that is lxml's parse (the C parser at work) rather than the
# Python walk over what it built.
LXML_CALL = re.compile(r"\.(feed|close|fromstring|parse|HTMLParser|HTMLPullParser|read_events)\b"
                       r"|etree\.|html\.fromstring|document_fromstring")

# (step, what a frame's file path contains), tried in order on each frame, innermost first.
RULES: list[tuple[str, tuple[str, ...]]] = [
    ("fetch", ("/requests/", "/urllib3/", "/http/client.py", "/socket.py", "/ssl.py",
               "/email/", "/http/cookiejar.py", "/charset_normalizer/", "/idna/",
               "minicrawl/http/", "minicrawl/core/fetch.py", "minicrawl/visit/redirects.py",
               "minicrawl/visit/retry.py")),
    ("walk", ("minicrawl/html/", "minicrawl/core/links.py", "/lxml/", "/html5lib/")),
    ("resolve/canonicalize", ("minicrawl/resolve.py", "minicrawl/core/urls.py",
                              "minicrawl/scope.py", "minicrawl/origins.py")),
    ("Visited", ("minicrawl/visited/", "minicrawl/core/visited.py", "/bitarray/", "/numpy/")),
    ("ToDo/politeness", ("minicrawl/frontier/", "minicrawl/core/todo.py", "minicrawl/heaps.py",
                         "minicrawl/admission.py", "minicrawl/visit/robots",
                         "minicrawl/core/limits.py", "minicrawl/refused.py")),
    ("records", ("minicrawl/records/", "/csv.py", "/json/")),
    ("live view/stats", ("minicrawl/watch/", "minicrawl/stats.py", "minicrawl/events.py")),
    ("worker/crawler loop", ("minicrawl/", "/run.py")),
]


# A sample whose innermost frame is one of these is a thread waiting, not working: py-spy
# counts a thread blocked in a lock's acquire, a condition or a socket read as active (measured:
# a third of the samples were workers queueing at the core's one-parser lock, a sixth reading
# sockets the server had not answered yet), so they are set aside, not charged to a step.
WAIT_FUNCS = ("Condition.wait", "Event.wait", "Thread.join", "sleep", "SocketIO.readinto",
              "do_poll", "select", "_wait_for_tstate_lock", "Queue.get", "Semaphore.acquire")
# ... and a line that takes a lock, or a token from a queue (TokenGate.enter: SimpleQueue.get).
WAIT_LINE = re.compile(r"^\s*(with\s+[\w.]*(lock|parsing|_lock\w*)\b.*:|.*\.acquire\(|"
                       r".*\.get\(\)\s*(#.*)?$)", re.I)
WAITING = "(waiting: locks, sockets, conditions)"
NO_FRAME = "(no Python frame)"


def waiting(leaf: str) -> bool:
    """Whether the innermost frame ``leaf`` is a blocking wait (see WAIT_FUNCS)."""
    m = FRAME.match(leaf)
    if not m:
        return False
    if m.group("func").endswith(WAIT_FUNCS):
        return True
    return bool(WAIT_LINE.match(linecache.getline(m.group("file"), int(m.group("line")))))


def step_of(frames: list[str]) -> tuple[str, str]:
    """(the step, the innermost frame) of one stack given root first, as py-spy writes it."""
    if not frames:  # a sample of the process with no Python frame in it (py-spy's "?")
        return NO_FRAME, "?"
    leaf = frames[-1]
    if waiting(leaf):
        return WAITING, leaf
    for frame in reversed(frames):
        m = FRAME.match(frame)
        path = m.group("file") if m else frame
        for step, parts in RULES:
            if any(p in path for p in parts):
                if step == "walk" and m and "minicrawl/" in path:
                    text = linecache.getline(path, int(m.group("line")))
                    if LXML_CALL.search(text):
                        return "parse (lxml)", leaf
                elif step == "walk":  # lxml's own Python (rare: most of it is C)
                    return "parse (lxml)", leaf
                return step, leaf
    return "other (start-up, imports, interpreter)", leaf


def aggregate(raw: Path) -> tuple[Counter[str], Counter[str]]:
    """Samples by step and by innermost frame, from a ``py-spy record -f raw`` file."""
    steps: Counter[str] = Counter()
    leaves: Counter[str] = Counter()
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [f for f in stack.split(";") if not f.startswith(("process ", "thread "))]
        step, leaf = step_of(frames)
        steps[step] += int(count)
        leaves[leaf] += int(count)
    return steps, leaves


def report(steps: Counter[str], leaves: Counter[str], cpu_s: float | None, pages: int | None
           ) -> str:
    waits = steps.pop(WAITING, 0)
    blank = steps.pop(NO_FRAME, 0)
    total = sum(steps.values()) or 1
    per_page = cpu_s is not None and pages
    out = [f"| step | samples | share |{' CPU ms a page |' if per_page else ''}",
           f"|---|---:|---:|{'---:|' if per_page else ''}"]
    for step, n in steps.most_common():
        cell = f" {cpu_s * n / total / pages * 1000:.3f} |" if per_page else ""  # type: ignore[operator]
        out.append(f"| {step} | {n:,} | {n / total:.1%} |{cell}")
    if per_page:
        out.append(f"| **all** | {total:,} | 100% | {cpu_s / pages * 1000:.3f} |")  # type: ignore[operator]
    out.append(f"\nLeft out: {waits:,} samples of threads waiting (lock, socket, condition), "
               f"{blank:,} with no Python frame.")
    out.append("\ninnermost frames of the working samples, by samples:\n")
    working = [(lf, n) for lf, n in leaves.most_common() if lf != "?" and not waiting(lf)]
    for leaf, n in working[:25]:
        out.append(f"  {n / total:6.1%}  {leaf.replace(str(REPO) + '/', '')}")
    return "\n".join(out)


def profiled(cmd: list[str], raw: Path, rate: int) -> list[str]:
    pyspy = shutil.which("py-spy") or "py-spy"
    # Not --nonblocking: without stopping the process half the stacks came back empty or torn.
    # Stopping it slows the crawl (~1.5-3x the wall) but every thread alike, so shares hold.
    return [pyspy, "record", "-r", str(rate), "-f", "raw", "-o", str(raw), "--subprocesses",
            "--", *cmd]


def crawl(cmd: list[str], srv: object, expected: set[str], work: Path, opts: argparse.Namespace,
          label: str) -> int:
    """Run ``cmd`` once as it is and once under py-spy, measured as run.py measures; print the
    step table: the shares are py-spy's, the CPU a page the unprofiled run's (wait4's CPU of the
    profiled run is py-spy's too)."""
    raw = Path(opts.out) if opts.out else work / "profile.raw"
    cfg = run.Config("minicrawl", opts.threads)
    plain = run.measure(cfg, cmd, srv, None, expected, opts.latency, 0,  # type: ignore[arg-type]
                        work, opts.timeout)
    spied = run.measure(cfg, profiled(cmd, raw, opts.rate), srv,  # type: ignore[arg-type]
                        None, expected, opts.latency, 1, work, opts.timeout)
    pages = plain.distinct
    print(f"{label}: {pages:,} pages, wall {plain.wall_s:.2f} s, CPU {plain.cpu_s:.2f} s "
          f"(user {plain.user_s:.2f}, sys {plain.sys_s:.2f}), peak RSS {plain.peak_rss_mb:.0f} MB;"
          f" under py-spy: wall {spied.wall_s:.2f} s, {spied.distinct:,} pages; load "
          f"{os.getloadavg()[0]:.1f}\n")
    steps, leaves = aggregate(raw)
    print(report(steps, leaves, plain.cpu_s, pages))
    return 0


def minicrawl(urls: list[str], opts: argparse.Namespace, *extra: str) -> list[str]:
    return ["prlimit", "--as=8000000000", sys.executable, str(REPO / "run.py"), *urls,
            "--threads", str(opts.threads), "--per-host", str(opts.per_host), "--delay", "0",
            "--ignore-robots", "--quiet", *extra]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("site", nargs="?", choices=["manyhosts", "tree"], default="manyhosts")
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--per-host", type=int, default=2)
    ap.add_argument("--latency", type=float, default=50.0, help="manyhosts: ms before answers")
    ap.add_argument("--pages", type=int, default=20_000, help="tree: --max-pages")
    ap.add_argument("--rate", type=int, default=200, help="py-spy samples a second")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--out", help="keep py-spy's raw file here")
    ap.add_argument("--raw", help="only aggregate this raw file")
    ap.add_argument("--cpu", type=float, help="with --raw: the crawl's CPU seconds unprofiled")
    ap.add_argument("--fetched", type=int, help="with --raw: the pages it fetched")
    opts = ap.parse_args(argv)
    if opts.raw:
        print(report(*aggregate(Path(opts.raw)), opts.cpu, opts.fetched))
        return 0
    run.compile_sources(REPO)
    with tempfile.TemporaryDirectory(prefix="profile-steps-") as tmp:
        work = Path(tmp)
        if opts.site == "manyhosts":
            with manyhosts.LateServer(work, opts.latency, 1) as srv:
                return crawl(minicrawl(srv.urls(), opts), srv, manyhosts.expected(1), work,
                             opts, f"manyhosts ×{opts.threads}/{opts.per_host}")
        import tree
        opts.latency = 0.0
        port = servers.free_port()
        with tree.TreeNginx(work, port) as ng:
            cmd = minicrawl([f"http://127.0.0.1:{port}/"], opts, "--max-pages", str(opts.pages),
                            "--max-repeated-segments", "0")
            # Any path is a tree page: no expected set to check against (the count is printed).
            return crawl(cmd, ng, set(), work, opts, f"tree ×{opts.threads}")


if __name__ == "__main__":
    sys.exit(main())
