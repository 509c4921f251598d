"""Link checking beside LinkChecker (issue 46): minicrawl ``--check-links`` vs LinkChecker 10.6 on
a copy of the CPython docs with pages deleted.

    python bench/linkcheck.py                  # LinkChecker, minicrawl at its defaults and
                                               # politeness off: 3 reps interleaved (~21 min)
    python bench/linkcheck.py --reps 1 --checkers minicrawl-off   # minicrawl alone, ~30 s
    python bench/linkcheck.py --keep           # keep the temp dir: the site, the CSV, the --links

The site is Debian's ``python3-doc`` (the Python 3.11 docs: 530 pages, and a link to one it
does not ship, ``whatsnew/changelog.html``, on 17 of them; installed with apt-get if missing),
copied to a temp dir with ``DELETED`` removed — five pages many others link to, an image, a
script and an image only a stylesheet loads — and served by nginx (``servers.Nginx``, one
worker, access log, the MIME types of stylesheets, scripts and images) on a free loopback port.
Every checker starts at ``/index.html``:

* LinkChecker 10.6 at its defaults (10 threads; 0.1–0.6 s between requests to a host; robots.txt
  obeyed; external URLs not checked; no anchor check; pages over 1 MiB not parsed) in a venv of
  its own (``~/.cache/minicrawl-bench/linkchecker-venv``, made with pip on first use), its
  results as CSV on standard output (``-o csv``: each error with its parent URL, line and link
  name);
* minicrawl ``run.py URL --check-links --links FILE --quiet`` at its defaults (0.25 s between
  requests to a host, 2 at a time, robots.txt obeyed: "minicrawl-def") and with politeness off
  (the flags ``bench/run.py`` discovers: ``--ignore-robots --delay 0 --per-host 8``:
  "minicrawl-off"), and so with nothing off the site checked, like for like with LinkChecker
  (``--exclude`` of every URL not on the site's origin: "minicrawl-off-site"). By name only:
  "minicrawl-off-r0", politeness off and ``--retries 0`` (what retrying a refused off-site
  check costs; on the site nothing is retried, a 404 never is).

Each once per repetition, interleaved, timed with ``os.wait4`` and /proc as ``run.py`` does
(wall, CPU, peak RSS; requests from nginx's log). No request leaves loopback: the checkers'
environment names a proxy on a loopback port that refuses every connection (``http_proxy``,
``https_proxy``; ``no_proxy=127.0.0.1``), so a link off the site fails at once without a DNS
lookup (LinkChecker does not check them anyway).

Correctness: the (broken target, referrer) pairs LinkChecker reports (its rows with ``valid``
False; LinkChecker names each broken URL once, with the first page it found it on) against
minicrawl's (the ``broken: true`` records of ``--links``), both normalised alike (``normal``:
fragment cut, percent-escapes decoded, host lower-cased, trailing slash cut), and the line
LinkChecker names against minicrawl's lines of that pair. Then, since LinkChecker names one
referrer a URL, minicrawl's pairs on the site against every referrer the site's own files hold
(``every_referrer``: each page served, read with lxml, the elements and attributes LinkChecker
reads URLs from; each stylesheet's url()s). Every difference is put down to a reason
(``REASONS``, ``line_reason``, ``NOT_RECORDED``); one no reason explains is printed as
UNEXPLAINED. Exit status 1 if a pair LinkChecker reports is missing from minicrawl's or a
difference is unexplained.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

import lxml.html
import servers
from javadoc import LoggedNginx
from lxml import etree

import run

DOCS_ROOT = servers.PYTHON_DOCS_ROOT
START = "/index.html"
LINKCHECKER = "linkchecker==10.6.0"
LINKCHECKER_WHEEL = Path("/tmp/lc/LinkChecker-10.6.0-py3-none-any.whl")  # used if it is there
LINKCHECKER_THREADS = 10  # its default (-t)
MAX_PARSED = 1 << 20  # LinkChecker's maxfilesizeparse: a page over 1 MiB is checked, not parsed
# What is deleted from the copy, and why each (pages: of the 525 left, 521 of them with the head,
# nav and footer every page shares)
DELETED = {
    "search.html": "linked from 521 pages, but from one only by an <a>: the 520 others by the "
                   "head's <link rel=search> and the quick-search <form action> (GET)",
    "copyright.html": "521 pages: the footer's <a> and the head's <link rel=copyright>",
    "glossary.html": "the glossary: 221 pages link to its terms, each with a #term-… fragment",
    "library/exceptions.html": "the library reference's most linked page (274 pages, "
                               "#fragments)",
    "library/functions.html": "the built-in functions, cross-referenced from 205 pages",
    "_images/pathlib-inheritance.png": "a broken image: an <img> of one page "
                                       "(library/pathlib.html)",
    "_static/copybutton.js": "a broken script: a <script src> of 521 pages",
    "_static/file.png": "loaded by no page, only by a stylesheet: basic.css's url(file.png), "
                        "reached by pydoctheme.css's chain of @imports: reported against the "
                        "stylesheet",
}
CHECKERS = ("linkchecker", "minicrawl-def", "minicrawl-off", "minicrawl-off-site")
MORE_CHECKERS = ("minicrawl-off-r0",)  # by name only
MINICRAWL_THREADS = 8  # run.py's default --threads


@dataclass(frozen=True, order=True)
class Pair:
    """A broken link: its target and the page (or stylesheet) it is on, both normalised."""

    target: str
    referrer: str


@dataclass
class Found:
    """What one checker reported: its broken pairs, the source lines of each (LinkChecker: the
    one it names), and a sample of how it said so."""

    pairs: set[Pair]
    lines: dict[Pair, set[int]]
    said: dict[Pair, str]

    def add(self, pair: Pair, line: int | None, said: str) -> None:
        self.pairs.add(pair)
        self.lines.setdefault(pair, set()).update([line] if line is not None else [])
        self.said.setdefault(pair, said)


def merged(founds: Iterable[Found]) -> Found:
    """What several runs reported, together (LinkChecker names the first referrer it meets,
    which its threads' order changes from run to run)."""
    out = Found(set(), {}, {})
    for found in founds:
        for pair in found.pairs:
            for line in found.lines[pair] or {None}:
                out.add(pair, line, found.said[pair])
    return out


def normal(url: str) -> str:
    """``url`` as both sides are compared: no fragment, percent-escapes decoded, scheme and host
    lower-cased, no trailing slash (an empty path is ``/``)."""
    parts = urlsplit(url.strip())
    path = unquote(parts.path).rstrip("/") or "/"
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, unquote(parts.query),
                       ""))


def read_linkchecker(path: Path) -> Found:
    """LinkChecker's ``-o csv`` output: ``#`` comment lines, then ``;``-separated rows under a
    header; an error is a row whose ``valid`` is False (warnings are rows too)."""
    found = Found(set(), {}, {})
    with open(path, encoding="utf-8", newline="") as f:
        for row in csv.DictReader((line for line in f if not line.startswith("#")),
                                  delimiter=";"):
            if row.get("valid") == "False":
                found.add(Pair(normal(row["url"] or row["urlname"]),
                               normal(row["parentname"] or "")),
                          int(row["line"]) if row["line"].isdigit() else None,
                          f"line {row['line']} {row['name']!r}: {row['urlname']} → "
                          f"{row['result']}")
    return found


def read_minicrawl(path: Path) -> Found:
    """minicrawl's ``--links`` file: its ``broken: true`` records."""
    found = Found(set(), {}, {})
    with open(path, encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            if record["broken"] is True:
                found.add(Pair(normal(record["url"]), normal(record["page"])), record["line"],
                          f"line {record['line']} <{record['tag']} {record['attr']}> "
                          f"{record['text']!r}: {record['href']} → "
                          f"{record['status'] or record['error']}")
    return found


# -- every referrer, from the site's files -------------------------------------------------

# The elements and attributes LinkChecker reads URLs from (its htmlutil.linkparse.LinkTags, but
# for applet, isindex, layer, the universal style and itemtype, none of them on this site); a
# form's action only for a GET form, a <meta>'s content only for a refresh.
LINK_ATTRS = {
    "a": ("href",), "area": ("href",), "audio": ("src",), "blockquote": ("cite",),
    "body": ("background",), "button": ("formaction",), "del": ("cite",), "embed": ("src",),
    "form": ("action",), "frame": ("src", "longdesc"), "iframe": ("src", "longdesc"),
    "img": ("src", "lowsrc", "longdesc", "usemap", "srcset"), "input": ("src", "formaction"),
    "ins": ("cite",), "link": ("href",), "meta": ("content",), "object": ("data",),
    "q": ("cite",), "script": ("src",), "source": ("src", "srcset"), "table": ("background",),
    "td": ("background",), "th": ("background",), "tr": ("background",), "track": ("src",),
    "video": ("src", "poster"),
}
CSS_URL = re.compile(r"""url\(\s*(?:"([^"]*)"|'([^']*)'|([^)\s]*))\s*\)"""
                     r"""|@import\s+(?:"([^"]*)"|'([^']*)')""")


Labels = dict[Pair, set[tuple[int | None, str]]]  # a pair's (line, element_label)s in the files


def element_label(element: etree._Element, attr: str) -> str:
    """How a referring element is named in the tables: ``a href``, ``link rel=search href``."""
    rel = element.get("rel") if element.tag == "link" else None
    return f"{element.tag}{f' rel={rel.strip().lower()}' if rel else ''} {attr}"


def srcset(value: str) -> list[str]:
    """The URLs of a srcset (simply: none on this site has a comma in a URL)."""
    return [c.split()[0] for c in value.split(",") if c.strip()]


def every_referrer(site: Path, origin: str, pages: set[str]
                   ) -> tuple[Found, Labels]:
    """Every (missing target, referrer) pair the site's own files hold: each of ``pages`` (the
    paths the checkers were served), read with lxml, its URLs in LINK_ATTRS resolved against it
    (or its <base>); each stylesheet's url()s and @imports; a target on the site is missing if
    no file answers it (a directory: its index.html). What a link checker listing every
    referrer of every broken link should list. Also the elements each pair is on
    (``element_label``)."""
    found = Found(set(), {}, {})
    labels: Labels = defaultdict(set)

    def missing(url: str) -> bool:
        parts = urlsplit(url)
        if f"{parts.scheme}://{parts.netloc}" != origin:
            return False
        path = site / unquote(parts.path).lstrip("/")
        return not (path / "index.html" if path.is_dir() else path).is_file()

    for path in sorted(pages):
        file = site / path.lstrip("/")
        if not file.is_file():
            continue
        page = origin + path
        if file.suffix == ".css":
            text = file.read_text(encoding="utf-8", errors="replace")
            text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group().count("\n"), text,
                          flags=re.S)
            for m in CSS_URL.finditer(text):
                href = next(g for g in m.groups() if g is not None)
                if href and missing(url := urljoin(page, href)):
                    pair, line = Pair(normal(url), normal(page)), text.count("\n", 0, m.start()) + 1
                    found.add(pair, line, f"line {line} <css url()> {href}")
                    labels[pair].add((line, "css url()"))
            continue
        if file.suffix != ".html":
            continue
        tree = lxml.html.parse(str(file))
        base = next((b.get("href") for b in tree.iter("base") if b.get("href")), None)
        base = urljoin(page, base) if base else page
        for element in tree.iter(*LINK_ATTRS):
            for attr in LINK_ATTRS[element.tag]:
                value = element.get(attr)
                if value is None or (attr == "action" and
                                     (element.get("method") or "").lower() == "post"):
                    continue
                if element.tag == "meta":
                    refresh = re.match(r"\s*\d+\s*[;,]\s*url\s*=\s*(.+)", value, re.I)
                    if not refresh or (element.get("http-equiv") or "").lower() != "refresh":
                        continue
                    value = refresh.group(1).strip("'\" ")
                for href in (srcset(value) if attr == "srcset" else [value.strip()]):
                    if href and missing(url := urljoin(base, href)):
                        pair, label = Pair(normal(url), normal(page)), element_label(element, attr)
                        found.add(pair, element.sourceline, f"line {element.sourceline} "
                                  f"<{label}> {href}")
                        labels[pair].add((element.sourceline, label))
    return found, labels


# -- why a pair is on one side only ---------------------------------------------------------

@dataclass
class Context:
    origin: str
    big_pages: set[str]  # the site's pages LinkChecker does not parse (normalised URLs)
    reported: set[str]  # the targets LinkChecker reports


@dataclass(frozen=True)
class Reason:
    """A difference explained: ``side`` (who alone reports the pairs: "linkchecker",
    "minicrawl", "files"), ``applies`` to a pair, and why. ``miss``: a broken link minicrawl
    does not report."""

    side: str
    name: str
    applies: Callable[[Pair, Found, Context], bool]
    why: str
    miss: bool = False


def _off_site(pair: Pair, ctx: Context) -> bool:
    return not pair.target.startswith(ctx.origin + "/")


REASONS = [
    Reason("minicrawl", "off the site", lambda pair, found, ctx: _off_site(pair, ctx),
           "LinkChecker checks no external URL by default (--check-extern is off: 'outside of "
           "the domain filter, checked only syntax'); minicrawl --check-links checks links out "
           "of scope (HEAD), and here they reach only the refusing loopback proxy (each tried "
           "again --retries times)"),
    Reason("minicrawl", "another referrer", lambda pair, found, ctx: pair.target in ctx.reported,
           "LinkChecker 10.6 reports each broken URL once, with the first page it found it on "
           "(which changes from run to run with its threads; no option lists every referrer: "
           "linkchecker PR #663, --allrefs, is not merged); minicrawl reports every page "
           "linking to it"),
    Reason("minicrawl", "on a page over 1 MiB",
           lambda pair, found, ctx: pair.referrer in ctx.big_pages,
           "LinkChecker does not parse a page larger than maxfilesizeparse (1 MiB: contents.html "
           "2.5 MB, genindex-all.html 1.7 MB), so a target linked only from those is never "
           "checked; minicrawl reads pages up to --max-bytes (10 MiB)"),
]


def explain(only: Iterable[Pair], side: str, found: Found, ctx: Context
            ) -> dict[str, list[Pair]]:
    """The pairs only ``side`` reports, by the first reason that applies ("UNEXPLAINED")."""
    by: dict[str, list[Pair]] = defaultdict(list)
    for pair in sorted(only, key=lambda p: (p.target, p.referrer)):
        reason = next((r.name for r in REASONS if r.side == side
                       and r.applies(pair, found, ctx)), "UNEXPLAINED")
        by[reason].append(pair)
    return by


def describe(groups: dict[str, list[Pair]], said: dict[Pair, str], ctx: Context) -> list[str]:
    """Each group of pairs: its reason, counts and the most frequent targets with a sample."""
    lines = []
    for reason, pairs in groups.items():
        why = next((r.why for r in REASONS if r.name == reason), "not understood")
        targets = Counter(p.target.removeprefix(ctx.origin) for p in pairs)
        lines.append(f"  - {reason} ({len(pairs)} pairs, {len(targets)} targets): {why}")
        for target, n in targets.most_common(6):
            sample = next(p for p in pairs if p.target.removeprefix(ctx.origin) == target)
            lines.append(f"    - {target} ×{n}, e.g. on "
                         f"{sample.referrer.removeprefix(ctx.origin)}: {said[sample]}")
    return lines


def line_reason(pair: Pair, line: int | None, labels: Labels) -> str:
    """Why LinkChecker names another line than minicrawl's for ``pair`` (or UNEXPLAINED)."""
    at = {label for where, label in labels.get(pair, ()) if where == line}
    if at and all(label in NOT_RECORDED for label in at):
        return (f"LinkChecker's line holds a <{' + '.join(sorted(at))}>, which minicrawl does "
                f"not record (see below); minicrawl's lines are the page's other links to it")
    if pair.referrer.endswith(".css") and {label for _, label in labels.get(pair, ())} == {
            "css url()"}:
        return ("LinkChecker numbers a stylesheet's lines after cutting its /* comments */ "
                "(linkcheck.parser.parse_css): its line is short by the comments' lines; "
                "minicrawl's is the file's")
    return "UNEXPLAINED"


def compare(lc: Found, mc: Found, name: str, ctx: Context, labels: Labels
            ) -> tuple[list[str], bool]:
    """One minicrawl configuration against LinkChecker, as lines; and whether it holds: every
    pair LinkChecker reports is minicrawl's, every difference explained."""
    both = lc.pairs & mc.pairs
    other_line = sorted(p for p in both if not lc.lines[p] <= mc.lines[p])
    lines = [f"#### {name} vs LinkChecker", "",
             f"- broken (target, referrer) pairs: LinkChecker {len(lc.pairs)} "
             f"({len({p.target for p in lc.pairs})} targets; all its runs'), {name} "
             f"{len(mc.pairs)} ({len({p.target for p in mc.pairs})} targets); in both "
             f"{len(both)}, of them "
             f"{len(both) - len(other_line)} at the line LinkChecker names"]
    explained = True
    for pair in other_line:
        why = line_reason(pair, min(lc.lines[pair]), labels)
        explained &= why != "UNEXPLAINED"
        lines.append(f"  - another line: {pair.target.removeprefix(ctx.origin)} on "
                     f"{pair.referrer.removeprefix(ctx.origin)}: LinkChecker "
                     f"{lc.said[pair]}; {name} lines {sorted(mc.lines[pair])}: {why}")
    only_lc, only_mc = lc.pairs - mc.pairs, mc.pairs - lc.pairs
    lines.append(f"- only in LinkChecker: {len(only_lc)} pairs")
    lines += describe(explain(only_lc, "linkchecker", lc, ctx), lc.said, ctx)
    lines.append(f"- only in {name}: {len(only_mc)} pairs")
    groups = explain(only_mc, "minicrawl", mc, ctx)
    lines += describe(groups, mc.said, ctx)
    return lines, explained and not only_lc and "UNEXPLAINED" not in groups


# The elements on which minicrawl records no link, as element_label names them, and why
NOT_RECORDED = {
    **{f"link rel={rel} href": "minicrawl records a <link> only with rel next, prev, alternate "
       "or canonical (links it follows) or a requisite's rel (stylesheet, icon, preload…): a "
       f"<link rel={rel}> is no edge, neither checked nor in --links"
       for rel in ("search", "author", "index", "copyright", "help", "license")},
    "form action": "minicrawl takes no form for a link (LinkChecker checks a GET form's action)",
}


def compare_files(files: Found, labels: Labels, mc: Found, name: str, ctx: Context
                  ) -> tuple[list[str], int, bool]:
    """minicrawl's broken pairs on the site against every referrer in the site's files, as
    lines; the pairs it misses; and whether every difference is explained (NOT_RECORDED)."""
    on_site = {p for p in mc.pairs if not _off_site(p, ctx)}
    only_files, only_mc = files.pairs - on_site, on_site - files.pairs
    lines = [f"#### {name} vs every referrer in the site's files", "",
             f"- broken pairs on the site: in the files {len(files.pairs)} "
             f"({len({p.target for p in files.pairs})} targets), {name} {len(on_site)}; in both "
             f"{len(files.pairs & on_site)}",
             f"- only in the files (minicrawl misses them): {len(only_files)} pairs"]
    explained = True
    groups: dict[str, list[Pair]] = defaultdict(list)
    for pair in only_files:
        groups[" + ".join(sorted({label for _, label in labels[pair]}))].append(pair)
    for key, pairs in sorted(groups.items()):
        known = [NOT_RECORDED.get(label) for label in key.split(" + ")]
        explained &= all(known)
        targets = Counter(p.target.removeprefix(ctx.origin) for p in pairs)
        lines.append(f"  - only on <{key}> ({len(pairs)} pairs, {len(targets)} targets): "
                     + ("; ".join(dict.fromkeys(w for w in known if w)) if all(known)
                        else "UNEXPLAINED"))
        for target, n in targets.most_common(4):
            sample = min(p for p in pairs if p.target.removeprefix(ctx.origin) == target)
            lines.append(f"    - {target} ×{n}, e.g. on "
                         f"{sample.referrer.removeprefix(ctx.origin)}: {files.said[sample]}")
    lines.append(f"- only in {name}: {len(only_mc)} pairs" + (" (UNEXPLAINED)" if only_mc else ""))
    for pair in sorted(only_mc, key=lambda p: (p.target, p.referrer))[:10]:
        lines.append(f"    - {pair.target.removeprefix(ctx.origin)} on "
                     f"{pair.referrer.removeprefix(ctx.origin)}: {mc.said[pair]}")
    return lines, len(only_files), explained and not only_mc


# -- the site, the peers --------------------------------------------------------------------

def make_site(work: Path) -> Path:
    """A copy of the docs (symlinks copied as files: jquery.js, underscore.js) less DELETED."""
    site = work / "site"
    shutil.copytree(servers.ensure_python_docs(), site, symlinks=False)
    for path in DELETED:
        target = site / path
        if not target.is_file():
            sys.exit(f"{path} is not in {DOCS_ROOT}: update DELETED")
        target.unlink()
    return site


def big_pages(site: Path, origin: str) -> set[str]:
    """The normalised URLs of the site's HTML pages LinkChecker does not parse."""
    return {normal(f"{origin}/{p.relative_to(site).as_posix()}")
            for p in site.rglob("*.html") if p.stat().st_size > MAX_PARSED}


def ensure_linkchecker(cache: Path) -> str:
    """The ``linkchecker`` of a venv with LinkChecker 10.6 in it, made with pip on first use
    (from the wheel at LINKCHECKER_WHEEL if it is there)."""
    venv = cache / "linkchecker-venv"
    binary = venv / "bin" / "linkchecker"
    probe = [str(binary), "--version"]
    if binary.exists() and "10.6" in run.version_of(probe):
        return str(binary)
    print(f"creating {venv} and installing {LINKCHECKER} with pip ...", flush=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    what = str(LINKCHECKER_WHEEL) if LINKCHECKER_WHEEL.exists() else LINKCHECKER
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", what],
                   check=True)
    return str(binary)


def refusing_port() -> socket.socket:
    """A loopback socket bound but not listening: every connection to its port is refused
    (held for the whole bench, so no other process can take the port)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock


def no_internet(proxy_port: int) -> dict[str, str]:
    """The checkers' environment: every URL but loopback's through a proxy that refuses."""
    proxy = f"http://127.0.0.1:{proxy_port}"
    return {"http_proxy": proxy, "https_proxy": proxy, "HTTP_PROXY": proxy,
            "HTTPS_PROXY": proxy, "all_proxy": proxy, "ALL_PROXY": proxy,
            "no_proxy": "127.0.0.1,localhost", "NO_PROXY": "127.0.0.1,localhost"}


def command(checker: str, url: str, opts: argparse.Namespace, linkchecker: str | None,
            links: Path) -> list[str]:
    if checker == "linkchecker":
        assert linkchecker is not None
        # -o csv on standard output (as root, LinkChecker runs as nobody: it could not write a
        # file in our temp dir); status lines to stderr, off
        return [linkchecker, "--no-status", "-o", "csv/utf-8", url]
    cmd = [opts.python, str(run.REPO / "run.py"), url, "--check-links", "--links", str(links),
           "--quiet"]
    if checker.startswith("minicrawl-off"):
        cmd += run.minicrawl_politeness_args(opts.python, MINICRAWL_THREADS)
    if checker == "minicrawl-off-r0":  # a refused off-site check is not tried again
        cmd += ["--retries", "0"]
    if checker == "minicrawl-off-site":  # like for like: nothing off the site is checked, as
        origin = url[: url.index("/", len("http://"))]  # LinkChecker checks no external URL
        cmd += ["--exclude", f"^[a-z]+://(?!{re.escape(origin.split('://')[1])}/)"]
    return cmd + list(opts.minicrawl_arg)


# -- main -----------------------------------------------------------------------------------

def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkers", default=",".join(CHECKERS),
                    help=f"comma-separated, of {', '.join(CHECKERS)} (default: all)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--minicrawl-arg", action="append", default=[])
    ap.add_argument("--cache-dir", type=Path, default=run.CACHE,
                    help="where LinkChecker's venv lives")
    ap.add_argument("--timeout", type=float, default=1200, help="seconds before a run is killed")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (site, outputs)")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    checkers = [c for c in opts.checkers.split(",") if c]
    if unknown := set(checkers) - set(CHECKERS) - set(MORE_CHECKERS):
        sys.exit(f"unknown checkers: {', '.join(sorted(unknown))}")
    linkchecker = ensure_linkchecker(opts.cache_dir) if "linkchecker" in checkers else None
    run.compile_sources(run.REPO)
    work = Path(tempfile.mkdtemp(prefix="minicrawl-linkcheck-"))
    print(f"machine: {run.machine()}")
    print(f"minicrawl: {run.REPO} "
          f"({run.version_of(['git', '-C', str(run.REPO), 'describe', '--always', '--dirty'])})")
    if linkchecker:
        print(f"linkchecker: {run.version_of([linkchecker, '--version'])} ({linkchecker})")
    site = make_site(work)
    print(f"site: {DOCS_ROOT} ({servers.python_docs_version()}), copied to {site}; deleted:")
    for path, why in DELETED.items():
        print(f"  /{path}: {why}")
    refusing = refusing_port()
    os.environ.update(no_internet(refusing.getsockname()[1]))
    ng = LoggedNginx(work, site, servers.free_port(), types=servers.WEB_TYPES).start()
    print(f"nginx: {run.version_of([ng.binary, '-v'])} on {ng.origin}; "
          f"off-site requests through the refusing proxy {os.environ['http_proxy']}")
    url = ng.origin + START
    for checker in checkers:
        print(f"  {checker}: {' '.join(command(checker, url, opts, linkchecker, work / 'L'))}")
    started = time.perf_counter()
    runs: dict[str, list[run.Run]] = {c: [] for c in checkers}
    found: dict[str, list[Found]] = {c: [] for c in checkers}
    served: set[str] = set()  # paths answered 200 to any checker: the pages of every_referrer
    try:
        for rep in range(opts.reps):
            for checker in checkers:
                out = work / f"{checker}-{rep}.{'csv' if checker == 'linkchecker' else 'jsonl'}"
                cmd = command(checker, url, opts, linkchecker, out)
                threads = LINKCHECKER_THREADS if checker == "linkchecker" else MINICRAWL_THREADS
                r = run.measure(run.Config(checker, threads), cmd, ng, None, set(), 0, rep,
                                work, opts.timeout,
                                stdout=out if checker == "linkchecker" else None)
                runs[checker].append(r)
                served |= {path for path, status in ng.last if status == 200}
                got = (read_linkchecker if checker == "linkchecker" else read_minicrawl)(out)
                found[checker].append(got)
                print(f"  [{time.perf_counter() - started:6.0f} s] rep {rep + 1}/{opts.reps} "
                      f"{checker:14} wall {r.wall_s:7.2f} s cpu {r.cpu_s:6.2f} s rss "
                      f"{r.peak_rss_mb:5.0f} MB {r.requests:5d} req ({r.distinct} URLs, "
                      f"{r.duplicated} twice) exit {r.exit_code}, {len(got.pairs)} broken pairs",
                      flush=True)
    finally:
        ng.stop()
        refusing.close()
    lc_found = merged(found.get("linkchecker", []))  # every referrer it named, in any rep
    ctx = Context(ng.origin, big_pages(site, ng.origin), {p.target for p in lc_found.pairs})
    files, labels = every_referrer(site, ng.origin, served)
    medians = {c: run.summarize(rs) for c, rs in runs.items()}
    lc = medians.get("linkchecker")
    lines = [f"#### CPython docs ({servers.python_docs_version()}) less {len(DELETED)} files, "
             f"{opts.reps} reps, medians", "",
             "| checker | wall s (min–max) | wall / LinkChecker | CPU s | CPU / LinkChecker "
             "| peak RSS MB | requests | broken pairs (on site / off) | same pairs every rep |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for checker, s in medians.items():
        pairs = found[checker][0].pairs
        on = sum(not _off_site(p, ctx) for p in pairs)
        stable = all(f.pairs == pairs for f in found[checker])
        lines.append(
            f"| {checker} | {run.fmt(s['wall_s'])} ({run.fmt(s['wall_min'])}–"
            f"{run.fmt(s['wall_max'])}) | {run.fmt(s['wall_s'] / lc['wall_s'], 3) if lc else '–'} "
            f"| {run.fmt(s['cpu_s'])} | {run.fmt(s['cpu_s'] / lc['cpu_s'], 3) if lc else '–'} "
            f"| {run.fmt(s['rss_mb'], 0)} | {s['requests']:.0f} | {len(pairs)} "
            f"({on} / {len(pairs) - on}) | {'yes' if stable else 'NO'} |")
    report = ["\n".join(lines)]
    targets = []
    ok = True
    for checker in checkers:
        if checker == "linkchecker":
            continue
        mc = found[checker][0]
        if lc:
            compared, holds = compare(lc_found, mc, checker, ctx, labels)
            report.append("\n".join(compared))
            ok &= holds
            ratio = medians[checker]["wall_s"] / lc["wall_s"]
            targets.append(f"- {checker}: every broken link LinkChecker reports, with the same "
                           f"referrer: {'PASS' if holds else 'FAIL'}; wall "
                           f"{run.fmt(medians[checker]['wall_s'])} s = {ratio:.3f} × "
                           f"LinkChecker's {run.fmt(lc['wall_s'])} s ≤ 0.1: "
                           f"{'PASS' if ratio <= 0.1 else 'FAIL'}")
        compared, missed, explained = compare_files(files, labels, mc, checker, ctx)
        report.append("\n".join(compared))
        ok &= explained
        targets.append(f"- {checker}: every referrer in the files of every missing file on the "
                       f"site: {len(files.pairs) - missed}/{len(files.pairs)} pairs reported, "
                       f"the {missed} missed each explained: {'yes' if explained else 'NO'}")
    print(f"\n### Results (machine: {run.machine()})\n")
    print("\n\n".join(report))
    print("\nIssue 46 targets (this run):")
    print("\n".join(targets) or "- none measured in this run")
    print(f"\nbench total {time.perf_counter() - started:.0f} s; temp dir "
          f"{work if opts.keep else '(removed)'}")
    if not opts.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
