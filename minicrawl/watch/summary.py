"""The summary at the end of a crawl: what went wrong first, in a few lines.

What counts (the stats' counters, :mod:`minicrawl.stats`):

- a **page** is a URL the crawl asked for and recorded: answered, or failed (a redirect chain is
  one page). A URL never requested — robots.txt disallows it, or its host had its
  ``--max-pages-per-host`` — is recorded in ``--out`` but is no page: it is *not requested*
  (``robots_disallowed``, ``host_full``). A redirect chain whose target ``--max-pages`` kept
  from being requested is a page (its start was answered, a 3xx) whose target is not requested
  (``redirects_max_pages``). A rule's refusal is none of the crawl's errors or problems.
- an **error** (``errors``, ``error_<kind>``) is a fetch that gave no usable answer: a
  connection or DNS failure, a timeout, a TLS failure, a body over ``--max-bytes`` or not
  decoded, a redirect loop or too many hops, robots.txt unreachable, a 408, 429 or 5xx still
  failing after the retries.
- a **problem** (``problems``) is what a person checking a site wants to hear of: a page
  answered 4xx or 5xx, or an error; each page once. The live panel and this summary say the
  same: problems, then how many were HTTP 4xx, HTTP 5xx, and *failed* (the rest: the errors
  without a 4xx or 5xx answer).

:func:`short_summary` is what a crawl prints by default (at most 12 lines): pages, time and
rate, the problems by kind, the first few of them with the page linking to each
(:class:`FirstProblems` keeps them as the crawl goes), and where the outputs went.
:func:`format_summary` is every statistic, one per line (``--verbose``, as ``--stats`` writes
them).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from minicrawl.events import CrawlObserver
from minicrawl.http.fetch import error_kind
from minicrawl.visit.robots import CAPPED_CHAIN_KIND, NOT_REQUESTED

if TYPE_CHECKING:
    from minicrawl.page import Page
    from minicrawl.records.broken import Counts
    from minicrawl.stats import StatsSnapshot, StatValue

SHOWN = 5  # problems listed by name in the summary
# Error kinds of the network's (the same request may work later), said together as such.
NETWORK = frozenset({"ConnectionError", "ConnectTimeout", "ReadTimeout", "ProtocolError",
                     "ProxyError", "SSLError"})
# Why a URL was not requested (a rule, not a failure): its counter, and how it is said.
REFUSALS = (("robots_disallowed", "robots.txt"), ("host_full", "--max-pages-per-host"),
            (CAPPED_CHAIN_KIND, "--max-pages"))


def problems_text(problems: int, status_4xx: int, status_5xx: int, kinds: str = "") -> str:
    """"none", or "31 — 29 HTTP 4xx, 1 HTTP 5xx, 1 failed": the problems and their kinds, as
    the live panel and the summary both say them (``kinds``: what failed, :func:`failed_kinds`,
    after "failed")."""
    if not problems:
        return "none"
    failed = max(problems - status_4xx - status_5xx, 0)
    parts = [f"{n:,} {what}" for n, what in ((status_4xx, "HTTP 4xx"), (status_5xx, "HTTP 5xx"),
                                              (failed, "failed")) if n]
    if failed and kinds:
        parts[-1] += f" ({kinds})"
    return f"{problems:,} — " + ", ".join(parts)


def not_requested(counts: Mapping[str, StatValue]) -> tuple[int, str]:
    """How many URLs were refused before their request, and by what ("10 by robots.txt")."""
    found = [(_int(counts.get(key)), what) for key, what in REFUSALS]
    found = [(n, what) for n, what in found if n]
    return sum(n for n, _ in found), ", ".join(f"{n:,} by {what}" for n, what in found)


def failed_kinds(counts: Mapping[str, StatValue]) -> str:
    """The kinds of the errors that had no 4xx or 5xx answer, with their counts: "network 2
    (ConnectionError 2), redirect loop 1" ("HTTP 503 (gave up …)" is a 5xx, said as one)."""
    kinds = {key.removeprefix("error_"): _int(value) for key, value in counts.items()
             if key.startswith("error_") and not key.startswith("error_HTTP ") and _int(value)}
    network = {k: n for k, n in kinds.items() if k in NETWORK}
    said = []
    if network:
        inner = ", ".join(f"{k} {n:,}" for k, n in sorted(network.items()))
        said.append(f"network {sum(network.values()):,} ({inner})")
    said += [f"{k} {n:,}" for k, n in sorted(kinds.items()) if k not in NETWORK]
    return ", ".join(said)


def _int(value: StatValue) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@dataclass(frozen=True)
class Problem:
    """One page that went wrong: its URL (and where its redirects ended), what went wrong (the
    status, or the error's kind), and the page that links to it (None: a seed)."""

    url: str
    final_url: str
    what: str
    referrer: str | None


def is_problem(page: Page) -> bool:
    """A 4xx or 5xx answer, or an error that is no rule's refusal (robots.txt, a cap): what the
    ``problems`` counter counts. A sitemap file is no page."""
    if page.sitemap:
        return False
    if page.status is not None and page.status >= 400:
        return True
    return bool(page.error) and not (page.status is None and page.error in NOT_REQUESTED)


class FirstProblems(CrawlObserver):
    """Keeps the first ``keep`` problem pages of the crawl, as the crawl goes, for the summary
    (an observer of every page: one test per page, a lock only for the first few)."""

    def __init__(self, keep: int = SHOWN) -> None:
        self.keep = keep
        self.problems: list[Problem] = []
        self._lock = threading.Lock()

    def on_page(self, page: Page) -> None:
        if len(self.problems) >= self.keep or not is_problem(page):
            return
        what = (str(page.status) if page.status is not None and page.status >= 400
                else error_kind(page.error or ""))
        with self._lock:
            if len(self.problems) < self.keep:
                self.problems.append(Problem(page.url, page.final_url, what, page.referrer))


@dataclass(frozen=True)
class Written:
    """An output file the crawl was given: its flag, its path, and whether writing it failed."""

    flag: str
    path: str
    failed: bool = False


def short_summary(stats: StatsSnapshot, first: Sequence[Problem], written: Sequence[Written],
                  this_run: bool = False, broken: Counts | None = None,
                  fail_on: str = "broken") -> str:
    """The summary a crawl ends with: at most 12 lines (one blank first). ``first``: the first
    problems (:class:`FirstProblems`); ``written``: the outputs given (``--out``, ``--stats`` …);
    ``this_run``: the counts are this run's of a crawl kept in ``--state``. ``broken``: with
    ``--check-links``, the broken links' counts: their list was printed just before, so the
    summary says how many and where they are instead of listing the first problems
    (``fail_on``: whether they fail the exit status); with ``this_run`` they are the whole
    crawl's, every run's links joined from the state, and each of the two lines says whose
    count it is ("Problems this run: 28" above "Broken links in the whole crawl (all runs):
    31" read as a contradiction when both said only "Problems:" and "Broken links:")."""
    pages, problems = _int(stats.get("pages")), _int(stats.get("problems"))
    elapsed = stats.get("elapsed_s")
    rate = stats.get("pages_per_s")
    head = "Crawl finished" + (" (interrupted)" if stats.get("interrupted") else "")
    line = (f"{head}: {pages:,} page{'s' if pages != 1 else ''}"
            + (" this run" if this_run else "")
            + f" in {_seconds(_float(elapsed))} ({_float(rate):,.1f} pages/s)")
    refused, by = not_requested(stats)
    if refused:
        line += f"; {refused:,} URL{'s' if refused != 1 else ''} not requested ({by})"
    if left := _int(stats.get("todo_left")):
        line += f"; {left:,} left in ToDo"
    lines = ["", line]
    said = (f"Problems{' this run' if this_run else ''}: "
            + problems_text(problems, _int(stats.get("status_4xx")),
                            _int(stats.get("status_5xx")), failed_kinds(stats)))
    if broken is not None:  # their list came just before: counted here, not listed again
        lines += [said, _broken_said(broken, fail_on, across_runs=this_run)]
        first = []
    else:
        if first:
            said += ". The first (URL ← the page linking to it):"
        lines.append(said)
    width = max((len(p.what) for p in first), default=0)
    for p in first:
        where = p.url if p.final_url == p.url else f"{p.url} → {p.final_url}"
        lines.append(f"  {p.what:<{width}}  {where}  ← {p.referrer or '(a seed)'}")
    out = next((w for w in written if w.flag == "--out" and not w.failed), None)
    if problems > len(first) and broken is None:
        more = problems - len(first)
        lines.append(f"  … and {more:,} more: " + (
            f"{out.path} (--out) has every page, with its referrer" if out else
            "--out FILE writes every page, with its referrer"))
    files = ", ".join(f"{w.path} ({w.flag}{': not written' if w.failed else _copies(w, stats)})"
                      for w in written)
    every = ("every statistic: --verbose" if any(w.flag == "--stats" for w in written)
             else "every statistic: --verbose, or --stats FILE")
    lines.append(f"Written: {files}; {every}" if files else every[0].upper() + every[1:])
    return "\n".join(lines)


def _copies(written: Written, stats: StatsSnapshot) -> str:
    """What ``--mirror`` or ``--save-pages`` wrote: ": 27 files, 1.2 MB" ("" for another)."""
    if written.flag not in ("--mirror", "--save-pages"):
        return ""
    files, size = _int(stats.get("mirror_files")), _int(stats.get("mirror_bytes"))
    deleted = _int(stats.get("mirror_deleted"))
    gone = f", {deleted:,} deleted (gone: --forget-gone)" if deleted else ""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if size >= scale:
            return (f": {files:,} file{'s' if files != 1 else ''}, {size / scale:,.1f} {unit}"
                    + gone)
    return f": {files:,} file{'s' if files != 1 else ''}, {size:,} B{gone}"


def _broken_said(broken: Counts, fail_on: str, across_runs: bool = False) -> str:
    """The summary's line on the broken links (``--check-links``): how many, where they are
    listed, what they do to the exit status. ``across_runs``: the counts are the whole crawl's,
    every run of a ``--state``, which the line says (the problems above it are this run's)."""
    head = "Broken links in the whole crawl (all runs)" if across_runs else "Broken links"
    warned = ""
    if broken.warnings:
        warned = (f"; {broken.warnings:,} warning{'s' if broken.warnings != 1 else ''} "
                  "(a #fragment not found), listed above")
    if not broken.any:
        checked = broken.links - broken.unchecked
        said = f"{head}: none ({checked:,} of {broken.links:,} links checked){warned}"
        if broken.warnings and fail_on == "warnings":
            said += ": exit status 1 (--fail-on warnings)"
        return said
    said = f"{head}: {broken.targets:,} URL{'s' if broken.targets != 1 else ''}"
    if broken.broken:
        said += f", linked {broken.broken:,} time{'s' if broken.broken != 1 else ''}"
    said += " — listed above, each with every page linking to it" + warned + "; "
    return said + ("exit status 0 (--fail-on never)" if fail_on == "never" else
                   "exit status 1 (--fail-on never: 0)")


def _seconds(s: float) -> str:
    """0.04 s, 3.5 s, 2 min 5 s."""
    if s < 10:
        return f"{s:.2g} s" if s < 1 else f"{s:.1f} s"
    if s < 120:
        return f"{s:.0f} s"
    minutes, seconds = divmod(round(s), 60)
    return f"{minutes:,} min {seconds} s"


def _float(value: StatValue) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else 0.0


def format_summary(stats: StatsSnapshot) -> str:
    """Every statistic as aligned ``name: value`` lines (``--verbose``)."""
    width = max((len(k) for k in stats), default=0)
    lines = ["", "Crawl finished" + (" (interrupted)" if stats.get("interrupted") else "")]
    for key, value in stats.items():
        if isinstance(value, float):
            value = f"{value:.6g}"
        lines.append(f"  {key:<{width}}  {value}")
    return "\n".join(lines)
