"""The endless tree (issue 38): minicrawl, wget and wget2 on a 10-ary tree of tiny pages served by
nginx from memory — crawls larger than memory, measured.

    python bench/tree.py                                  # 4 and 5 levels, caps of 10k and 100k
    python bench/tree.py --levels 6 --caps 1000000        # the million (long: ~30 min)
    python bench/tree.py --seeds 1000000 --seed-pages 2000   # a million-line seed file

Every path is a page: ``/a/b/`` links to ``/a/b/0/`` … ``/a/b/9/`` (nginx's ``return 200`` with
``$uri``, no file behind it), so the tree has no end. Two kinds of crawl:

* ``--levels L``: the tree down to L links from the root, (10^(L+1) − 1)/9 pages (4: 11,111; 5:
  111,111; 6: 1,111,111, issue 38's "depth 7" — seven levels), by every crawler: minicrawl
  ``--max-depth L``, wget and wget2 ``-r -l L``. The page set is known, so each crawl is checked
  against nginx's log: every page once.
* ``--caps N``: minicrawl ``--max-pages N`` with no depth limit (wget has no page cap): the
  frontier grows ~9 URLs a page (100,000 pages leave ~900,000 waiting), which is what issue 38's
  disk ToDo is for.
* ``--seeds N``: a file of N distinct tree URLs (in a temp dir) as minicrawl's seeds, with
  ``--max-pages`` ``--seed-pages``: when the first request and the ``--seed-pages``-th reached
  nginx after the start, wall and peak RSS (issue 38, point 2).

Each configuration runs once per repetition, interleaved; each crawler process is timed with
``os.wait4`` (wall, user+system CPU) and /proc (its own peak RSS, VmHWM: wait4's counted this
bench's, once it had read a million-line log), under ``prlimit --as`` (8 GB) and a timeout.
minicrawl runs with politeness off (``--delay 0``, robots.txt ignored, per-host at the thread
count: bench/run.py's discovery), no trap rule (``--max-repeated-segments 0``: /1/1/1/1/ is a
page of this tree) and 16 threads; wget2 with 16 threads. The table gives the
commit of the code measured. Never run by the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import servers

import run

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MEMORY_CAP = 8_000_000_000  # bytes of address space for each crawler (prlimit --as)
STATS = "minicrawl-stats.json"  # minicrawl's --stats, in the work dir: its disk and Visited

PAGE = ("<html><body>" + " ".join(f'<a href="${{uri}}{i}/">{i}</a>' for i in range(10))
        + "</body></html>")


class TreeNginx(servers.Nginx):
    """nginx whose every path answers the tree's page (no files), logging as servers.Nginx."""

    def __init__(self, tmp: Path, port: int, workers: int = 1) -> None:
        super().__init__(tmp, tmp, port, workers)
        conf = self.conf.read_text()
        served = f"        root {tmp};\n        index index.html;\n        autoindex off;\n"
        assert served in conf, "servers.NGINX_CONF changed: update TreeNginx"
        self.conf.write_text(conf.replace(served, (
            "        location / {\n            default_type text/html;\n"
            f"            return 200 '{PAGE}';\n        }}\n")))


def tree_pages(levels: int) -> int:
    """Pages of the tree down to ``levels`` links from the root."""
    return (10 ** (levels + 1) - 1) // 9


def tree_paths(levels: int) -> set[str]:
    """Every path of the tree down to ``levels`` links from the root."""
    paths, level = {"/"}, ["/"]
    for _ in range(levels):
        level = [f"{p}{i}/" for p in level for i in range(10)]
        paths.update(level)
    return paths


def bounded(cmd: list[str]) -> list[str]:
    """``cmd`` under prlimit's address-space cap (a runaway crawl cannot take the machine)."""
    return ["prlimit", f"--as={MEMORY_CAP}", *cmd]


def minicrawl_cmd(opts: argparse.Namespace, url: str, *extra: str) -> list[str]:
    # --max-repeated-segments 0: /1/1/1/1/ is a page here, not a trap (wget has no such rule)
    return bounded([opts.python, str(REPO / "run.py"), url, "--threads", str(opts.threads),
                    "--quiet", *run.minicrawl_politeness_args(opts.python, opts.threads),
                    "--max-repeated-segments", "0", *extra, *opts.minicrawl_arg])


def crawl_stats(work: Path) -> str:
    """What minicrawl's ``--stats`` said of its disk and its Visited (the row's last cells),
    read and removed; "– | –" for a crawler that wrote none."""
    path = work / STATS
    if not path.exists():
        return "– | –"
    stats = json.loads(path.read_text())
    path.unlink()
    disk = stats.get("todo_disk_peak_bytes") or 0
    return (f"{disk / 2**20:,.0f} | {stats.get('visited_expected_withheld', float('nan')):.3g}"
            f" of {stats.get('visited_count', 0):,}")


def wget_cmd(tool: str, url: str, levels: int, work: Path, threads: int) -> list[str]:
    # -nd --delete-after: nothing kept, every page still parsed; robots=off as the others
    cmd = [tool, "--recursive", f"--level={levels}", "--no-directories", "--no-parent",
           "--delete-after", "--execute", "robots=off", "--no-proxy", "--quiet",
           "--directory-prefix", str(work / tool), url]
    if tool == "wget2":
        cmd[1:1] = [f"--max-threads={threads}"]
    return bounded(cmd)


def commit() -> str:
    out = subprocess.run(["git", "-C", str(REPO), "log", "-1", "--format=%h %cs %s"],
                         capture_output=True, text=True, check=False).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain",
                            "--untracked-files=no"],
                           capture_output=True, text=True, check=False).stdout.strip()
    return (out[:90] or "?") + (" (+ uncommitted changes)" if dirty else "")


def row(label: str, r: run.Run, expected: int | None, work: Path) -> str:
    check = "–"
    if expected is not None:
        check = "exact" if r.missed == 0 and r.duplicated == 0 else \
            f"missed {r.missed}, twice {r.duplicated}"
    elif r.duplicated:
        check = f"twice {r.duplicated}"
    return (f"| {label} | {r.crawler} | {r.requests:,} | {run.fmt(r.wall_s, 1)} | "
            f"{run.fmt(r.cpu_s, 1)} | {run.fmt(1000 * r.cpu_s / max(1, r.requests), 3)} | "
            f"{run.fmt(r.peak_rss_mb, 0)} | {check} | {crawl_stats(work)} | {r.exit_code} |")


def seeds_run(opts: argparse.Namespace, ng: TreeNginx, work: Path) -> list[str]:
    """A file of ``opts.seeds`` distinct tree URLs; minicrawl from it, capped at seed-pages."""
    path = work / "seeds.txt"
    with open(path, "w") as f:
        for n in range(opts.seeds):  # n's decimal digits, one level each: distinct pages
            f.write(f"{ng.origin}/{'/'.join(str(n))}/\n")
    lines = []
    for rep in range(opts.reps):
        offset = ng.log_size()
        cmd = minicrawl_cmd(opts, str(path), "--max-pages", str(opts.seed_pages))
        started = time.time()
        r = run.measure(run.Config("minicrawl", opts.threads), cmd, ng, None, set(), 0, rep,
                        work, opts.timeout)
        arrivals = [a for a, _ in ng.spans_since(offset)]
        first = arrivals[0] - started if arrivals else float("nan")
        nth = arrivals[opts.seed_pages - 1] - started if len(arrivals) >= opts.seed_pages \
            else float("nan")
        lines.append(f"| {opts.seeds:,} seeds, --max-pages {opts.seed_pages:,} | {rep + 1} | "
                     f"{run.fmt(first, 2)} | {run.fmt(nth, 1)} | {run.fmt(r.wall_s, 1)} | "
                     f"{run.fmt(r.cpu_s, 1)} | {run.fmt(r.peak_rss_mb, 0)} | {r.exit_code} |")
        print(lines[-1], flush=True)
    return ["| seed file | rep | first request s | last of the cap s | wall s | CPU s | "
            "peak RSS MB | exit |", "|---|---|---|---|---|---|---|---|", *lines]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("--levels", type=run.int_list, default=[4, 5],
                    help="tree depths crawled by every crawler (default 4,5)")
    ap.add_argument("--caps", type=run.int_list, default=[10_000, 100_000],
                    help="minicrawl --max-pages on the endless tree (default 10000,100000)")
    ap.add_argument("--seeds", type=int, default=0, help="also a seed file of this many URLs")
    ap.add_argument("--seed-pages", type=int, default=2000)
    ap.add_argument("--crawlers", default="minicrawl,wget,wget2")
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per crawl")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--minicrawl-arg", action="append", default=[])
    ap.add_argument("--json", type=Path, help="also write every run's numbers here")
    opts = ap.parse_args(argv)
    crawlers = opts.crawlers.split(",")
    for tool in {"wget", "wget2"} & set(crawlers):
        servers.ensure_tool(tool, tool)
    header = [f"Code: {commit()}; {run.machine()}", "",
              "| crawl | crawler | requests | wall s | CPU s | CPU ms/page | peak RSS MB | "
              "check | ToDo's disk peak MB | Visited: withheld (expected) of URLs | exit |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(header), flush=True)
    rows, runs = [], []
    with tempfile.TemporaryDirectory(prefix="minicrawl-tree-") as tmp:
        work = Path(tmp)
        with TreeNginx(work, servers.free_port()) as ng:
            url = ng.origin + "/"
            for rep in range(opts.reps):
                for levels in opts.levels:
                    expected = tree_paths(levels)
                    for crawler in crawlers:
                        cmd = (minicrawl_cmd(opts, url, "--max-depth", str(levels),
                                             "--stats", str(work / STATS))
                               if crawler == "minicrawl" else
                               wget_cmd(crawler, url, levels, work, opts.threads))
                        conc = opts.threads if crawler != "wget" else 1
                        r = run.measure(run.Config(crawler, conc), cmd, ng, None, expected, 0,
                                        rep, work, opts.timeout)
                        runs.append(r)
                        rows.append(row(f"-l {levels} ({tree_pages(levels):,} pages)", r,
                                        len(expected), work))
                        print(rows[-1], flush=True)
                    del expected
                for cap in opts.caps if "minicrawl" in crawlers else []:
                    cmd = minicrawl_cmd(opts, url, "--max-pages", str(cap),
                                        "--stats", str(work / STATS))
                    r = run.measure(run.Config("minicrawl", opts.threads), cmd, ng, None,
                                    set(), 0, rep, work, opts.timeout)
                    runs.append(r)
                    rows.append(row(f"--max-pages {cap:,}", r, None, work))
                    print(rows[-1], flush=True)
            seed_rows = seeds_run(opts, ng, work) if opts.seeds else []
    print("\n" + "\n".join(header + rows + ([""] + seed_rows if seed_rows else [])))
    if opts.json:
        opts.json.write_text(json.dumps([vars(r) for r in runs], indent=1))
    return 0


if __name__ == "__main__":
    os.chdir(HERE)
    sys.exit(main())
