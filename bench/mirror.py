"""A mirror beside wget2's (issue 47): minicrawl ``--mirror`` vs ``wget2 --mirror -k -p`` on the
CPython docs, served by nginx on loopback.

    python bench/mirror.py              # 3 reps each, interleaved (~1 min)
    python bench/mirror.py --reps 1 --keep

The site is Debian's ``python3-doc`` (the Python 3.11 docs, as bench/linkcheck.py serves them,
nothing deleted), copied to a temp dir and served by nginx (``servers.Nginx``: one worker, the
MIME types of stylesheets, scripts and images). Both start at ``/index.html``:

* ``wget2 --mirror -k -p`` (recursive, infinite depth, timestamps; links converted; page
  requisites) at its defaults otherwise (5 threads, robots.txt obeyed, no delay);
* minicrawl ``run.py URL --mirror DIR --quiet`` with politeness off as the other benches run it
  (``--delay 0 --per-host 8``, 8 threads; robots.txt obeyed: nginx answers 404).

Each is timed with ``os.wait4`` and /proc as bench/run.py times a crawl (wall, CPU, peak RSS;
requests and URLs asked twice from nginx's log). Then the two mirrors are compared file by file
(relative to their host folders, both ``127.0.0.1:PORT``): a file only one has is explained if
it is the same URL named another way — minicrawl gives an HTML page without ``.html`` and a
stylesheet without ``.css`` that extension (``wget -E``; wget2 without ``-E`` does not) — else
it is listed. Then each mirror's links: in every saved page and stylesheet, a relative link
that leads to no file is counted (fragment cut, percent-decoded).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import unquote

import lxml.html
import servers

import run

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from minicrawl.html.css import css_links  # noqa: E402

START = "/index.html"
MINICRAWL_THREADS = 8


def command(tool: str, url: str, into: Path, python: str) -> list[str]:
    """The command line of ``tool`` mirroring ``url`` into ``into``."""
    if tool == "wget2":
        return [servers.ensure_tool("wget2", "wget2"), "--mirror", "-k", "-p", "--quiet",
                "-P", str(into), url]
    return [python, str(run.REPO / "run.py"), url, "--mirror", str(into), "--quiet",
            "--delay", "0", "--per-host", "8", "--threads", str(MINICRAWL_THREADS)]


def files_of(mirror: Path) -> set[str]:
    """Every file of the one host folder of ``mirror``, relative to it (its table left out)."""
    hosts = [p for p in mirror.iterdir() if p.is_dir() and not p.name.startswith(".")]  # (no
    # host's folder starts with a dot: minicrawl's spool, .minicrawl-part, is none)
    if len(hosts) != 1:
        sys.exit(f"{mirror}: expected one host folder, found {hosts}")
    return {p.relative_to(hosts[0]).as_posix() for p in hosts[0].rglob("*") if p.is_file()}


def host_folder(mirror: Path) -> Path:
    return next(p for p in mirror.iterdir() if p.is_dir() and not p.name.startswith("."))


def dangling(mirror: Path) -> tuple[int, int, list[str]]:
    """(relative links checked, those leading to no file, a sample) in ``mirror``'s saved pages
    and stylesheets."""
    root = host_folder(mirror).parent
    checked, missing, sample = 0, 0, []
    for path in root.rglob("*"):
        if not path.is_file() or not (path.suffix in (".html", ".css") or
                                      re.search(r"\.(html|css)\?", path.name)):
            continue
        body = path.read_bytes()
        if path.suffix == ".css" or ".css?" in path.name:
            hrefs = [link.href for link in css_links(body)]
        else:
            try:
                doc = lxml.html.document_fromstring(body)
            except (ValueError, lxml.etree.ParserError):
                continue
            hrefs = [v for e in doc.iter() if isinstance(e.tag, str)
                     for a in ("href", "src") if (v := e.get(a)) is not None]
        for href in hrefs:
            href = href.strip()
            if not href or href.startswith("#") or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", href):
                continue
            checked += 1
            target = Path(os.path.normpath(path.parent / unquote(href.partition("#")[0])))
            if not target.exists():
                missing += 1
                if len(sample) < 5:
                    sample.append(f"{path.relative_to(root)}: {href}")
    return checked, missing, sample


def compare(ours: set[str], theirs: set[str]) -> tuple[list[str], list[str], int]:
    """Files only minicrawl has, only wget2 has (each after pairing the names ``-E`` changes),
    and how many were paired so."""
    only_ours, only_theirs = ours - theirs, set(theirs - ours)
    paired = 0
    left = []
    for name in sorted(only_ours):
        plain = re.sub(r"\.(html|css)$", "", name)
        if plain != name and plain in only_theirs:
            only_theirs.discard(plain)
            paired += 1
        else:
            left.append(name)
    return left, sorted(only_theirs), paired


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (site, mirrors)")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    run.compile_sources(run.REPO)
    work = Path(tempfile.mkdtemp(prefix="minicrawl-mirror-"))
    print(f"machine: {run.machine()}")
    print(f"minicrawl: {run.REPO} "
          f"({run.version_of(['git', '-C', str(run.REPO), 'describe', '--always', '--dirty'])})")
    wget2 = servers.ensure_tool("wget2", "wget2")
    print(f"wget2: {run.version_of([wget2, '--version'])}")
    site = work / "site"
    shutil.copytree(servers.ensure_python_docs(), site, symlinks=False)
    print(f"site: {servers.PYTHON_DOCS_ROOT} ({servers.python_docs_version()}), copied to {site}")
    ng = servers.Nginx(work, site, servers.free_port(), types=servers.WEB_TYPES).start()
    url = ng.origin + START
    tools = ("wget2", "minicrawl")
    for tool in tools:
        print(f"  {tool}: {' '.join(command(tool, url, work / tool, opts.python))}")
    runs: dict[str, list[run.Run]] = {t: [] for t in tools}
    mirrors: dict[str, Path] = {}
    started = time.perf_counter()
    try:
        for rep in range(opts.reps):
            for tool in tools:
                into = work / f"{tool}-{rep}"
                r = run.measure(run.Config(tool, MINICRAWL_THREADS if tool == "minicrawl" else 5),
                                command(tool, url, into, opts.python), ng, None, set(), 0, rep,
                                work, opts.timeout)
                runs[tool].append(r)
                mirrors[tool] = into
                print(f"  [{time.perf_counter() - started:5.0f} s] rep {rep + 1}/{opts.reps} "
                      f"{tool:9} wall {r.wall_s:6.2f} s cpu {r.cpu_s:6.2f} s rss "
                      f"{r.peak_rss_mb:5.0f} MB {r.requests:5d} req ({r.distinct} URLs, "
                      f"{r.duplicated} twice) exit {r.exit_code}, "
                      f"{len(files_of(into))} files", flush=True)
    finally:
        ng.stop()
    medians = {t: run.summarize(rs) for t, rs in runs.items()}
    files = {t: files_of(m) for t, m in mirrors.items()}
    lines = [f"#### CPython docs ({servers.python_docs_version()}), {opts.reps} reps, medians",
             "",
             "| tool | wall s (min–max) | CPU s | peak RSS MB | requests | URLs asked twice | "
             "files | relative links / leading nowhere |", "| --- | ---: | ---: | ---: | ---: "
             "| ---: | ---: | ---: |"]
    for tool, s in medians.items():
        checked, missing, sample = dangling(mirrors[tool])
        lines.append(f"| {tool} | {run.fmt(s['wall_s'])} ({run.fmt(s['wall_min'])}–"
                     f"{run.fmt(s['wall_max'])}) | {run.fmt(s['cpu_s'])} | "
                     f"{run.fmt(s['rss_mb'], 0)} | {s['requests']:.0f} | "
                     f"{max(r.duplicated for r in runs[tool])} | {len(files[tool])} | "
                     f"{checked} / {missing} |")
        for line in sample:
            lines.append(f"|   {tool}: {line} |")
    only_ours, only_theirs, paired = compare(files["minicrawl"], files["wget2"])
    lines += ["", f"Files: {len(files['minicrawl'] & files['wget2'])} named alike, {paired} "
              "the same URL named with -E's extension by minicrawl only, "
              f"{len(only_ours)} only minicrawl's, {len(only_theirs)} only wget2's."]
    lines += [f"- only minicrawl: {name}" for name in only_ours[:30]]
    lines += [f"- only wget2: {name}" for name in only_theirs[:30]]
    print("\n".join(lines))
    if opts.keep:
        print(f"kept: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
