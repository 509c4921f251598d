"""The crawl report (``--report FILE.html``): one self-contained HTML file that says first what
went wrong — tables a person can act on — and then how the crawl went, in plots.

The tables, in this order:

1. **Broken links**: each broken URL (its status, where its redirects ended, why) with every
   link to it — the page it is on (clickable), the line of the page's source, its text, the
   element as written. They come from the links' join (:mod:`minicrawl.records.broken`, the
   same rows ``--check-links`` prints), so only when the links are recorded (``--check-links``
   or ``--links``). Without, the table lists the pages that failed, each with the one page the
   crawl found it on, and says how to get every link: recording them costs the walk of every
   page 1.2× to 2.2× its time (``bench/bench_extract.py --edges``), which a report alone does
   not pay.
2. **Warnings** (with ``--check-links``): each URL whose ``#fragment`` names nothing on its
   page, with every link to it, as the list ``--check-links`` prints has them after the broken
   links (the same reader's :meth:`~minicrawl.records.broken.BrokenLinks.warnings`); without
   ``--check-links`` no fragment is checked, and the section says so.
3. **Redirects**: each redirect chain, hop by hop, and how it ended.
4. **Slowest** and **largest pages**.
5. **Status by section**: pages by the first segment of their path (``/docs/``; a page at the
   top is in ``/``), per status class.

Then the plots (pages per second, ToDo, depths, statuses, response times, Visited), drawn with
matplotlib when it is installed (``pip install 'minicrawl[plot]'``: the report says so in one
line when it is not, and is written all the same), on scales where a few broken pages show: the
status bars on a log scale, each bar labelled with its count; then the seeds, the stats and the
settings.

While the crawl runs, a :class:`Recorder` samples the crawl's gauges a few times a second (the
same :func:`minicrawl.watch.progress.read_progress` the live view shows) and notes of each page
what the tables and plots need, in bounded memory (at most ``KEEP`` rows of a table; the counts
are all). Everything that came from the crawled sites is escaped (a link's text, a URL, an
error), and the file says to its browser that it runs no script (a Content-Security-Policy).
"""

from __future__ import annotations

import heapq
import html
import itertools
import logging
import threading
from array import array
from collections import Counter
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import urlsplit

from minicrawl.cli.outpaths import write_at_end
from minicrawl.events import CrawlObserver
from minicrawl.http.fetch import error_kind
from minicrawl.page import error_of
from minicrawl.redact import redact
from minicrawl.version import __version__
from minicrawl.visit.robots import NOT_REQUESTED
from minicrawl.watch.broken import (
    headline,
    printable,
    warned_where,
    warned_why,
    warnings_headline,
    why,
)
from minicrawl.watch.plots import plots, png_data_uri
from minicrawl.watch.progress import Progress, ProgressReader, Watched
from minicrawl.watch.summary import is_problem

if TYPE_CHECKING:
    from minicrawl.page import Page
    from minicrawl.records.broken import BrokenLinks, Referrer, Target, Warned
    from minicrawl.stats import StatsSnapshot

log = logging.getLogger("minicrawl")

SAMPLE_INTERVAL = 0.1  # seconds; a demo crawl lasts about one second and still gets a curve
MAX_SAMPLES = 4000  # then every other sample goes and the interval doubles: hours stay small
KEEP = 1_000  # rows kept for the broken pages' and the redirects' tables (then counted)
TOP = 15  # slowest and largest pages shown
MAX_LINK_ROWS = 20_000  # links to broken URLs shown (then counted: the report stays readable)
MAX_SECTIONS = 1_000  # sections counted apart (the rest together)
MAX_HOPS = 20  # of a redirect chain, shown
MAX_WAITING_HOPS = 100_000  # redirect hops kept until their chain's page (a few in flight)
PLOT_EXTRA = "pip install 'minicrawl[plot]'"
OTHER = "(other sections)"
COLUMNS = ("2xx", "3xx", "4xx", "5xx", "failed", "not requested")  # status by section
Row = TypeVar("Row", bound=tuple)  # a row of the slowest or largest pages' heaps
_Head = TypeVar("_Head")  # what a group of the links' rows starts with (Target, Warned)


@dataclass(frozen=True)
class Failed:
    """A page that went wrong, as the report lists it without the links' join."""

    url: str
    final_url: str
    status: int | None
    error: str | None
    referrer: str | None


@dataclass(frozen=True)
class Redirect:
    """A redirect chain: the URL asked for, each hop after it, its status and error."""

    hops: tuple[str, ...]
    status: int | None
    error: str | None


class Recorder(CrawlObserver):
    """What the report shows: gauges over time; per page its depth, status and response time,
    and the rows of its tables (see the module's doc).

    As an observer of the crawl it samples from ``crawl_started`` on, notes each recorded page
    and each redirect, and at ``crawl_finished`` writes the report to ``path`` (if given).
    ``broken``: the links' broken-link reader, when the links are recorded (it has their list
    once the join has run, before this observer's ``crawl_finished``).
    """

    flag = "--report"
    failed = False  # the report could not be written (told in one line)

    def __init__(self, crawler: Watched, interval: float = SAMPLE_INTERVAL,
                 path: str | None = None, broken: BrokenLinks | None = None) -> None:
        self._reader = ProgressReader(crawler)
        self.crawler = crawler
        self.path = path
        self.interval = interval
        self.broken = broken
        self.samples: list[Progress] = []
        self.depths: Counter[int] = Counter()
        self.statuses: Counter[str] = Counter()
        self.elapsed_ms = array("f")  # 4 bytes a page, even for a long crawl
        self.failures: list[Failed] = []  # the first KEEP pages that went wrong
        self.problems = 0
        self.redirects: list[Redirect] = []  # the first KEEP redirect chains
        self.chains = 0  # redirect chains seen
        self.slowest: list[tuple[float, int, str, int | None, int]] = []  # a heap of TOP
        self.largest: list[tuple[int, int, str, int | None, float]] = []  # a heap of TOP
        self.sections: dict[tuple[str, str], Counter[str]] = {}
        self._hops: dict[str, str] = {}  # a redirect's source → target, until its page
        self._seq = itertools.count()  # ties in the heaps: the first page met stays
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def page(self, page: Page) -> None:
        """Note one recorded page (called once per page, from the worker threads)."""
        # No status: never fetched (robots.txt, a cap) or no response; say which.
        status = (str(page.status) if page.status is not None
                  else error_kind(page.error or "no response"))
        size = len(page.body)
        with self._lock:
            self.depths[page.depth] += 1
            self.statuses[status] += 1
            self.elapsed_ms.append(page.elapsed_ms)
            self._section(page)
            if is_problem(page):
                self.problems += 1
                if len(self.failures) < KEEP:
                    self.failures.append(Failed(page.url, page.final_url, page.status,
                                                page.error, page.referrer))
            chain = self._chain(page)
            if chain is not None:
                self.chains += 1
                if len(self.redirects) < KEEP:
                    self.redirects.append(Redirect(chain, page.status, page.error))
            if page.status is not None:
                n = next(self._seq)
                _keep_top(self.slowest, (page.elapsed_ms, -n, page.final_url, page.status, size))
                _keep_top(self.largest, (size, -n, page.final_url, page.status,
                                         page.elapsed_ms))

    def redirected(self, source: str, target: str, decision: str) -> None:
        with self._lock:
            if len(self._hops) >= MAX_WAITING_HOPS:  # chains whose page never came here (a
                self._hops.clear()  # shared crawl's, ended by another process): forgotten
            self._hops[source] = target

    def crawl_started(self) -> None:
        self.start()

    def on_page(self, page: Page) -> None:
        # A sitemap file read (--sitemaps) is no page of the crawl, nor a URL only checked
        # (--check-links: a broken one is in the broken links' table, with where it is)
        if not page.sitemap and not page.check:
            self.page(page)

    def crawl_finished(self, stats: StatsSnapshot) -> None:
        self.stop()
        if self.path:  # a failure is one line; the crawl's summary is not lost to it
            self.failed = not write_at_end(self.flag, self.path,
                                           lambda: render_report(self, stats))

    def _section(self, page: Page) -> None:
        """Count ``page`` in its section (lock held)."""
        key = section(page.url)
        counts = self.sections.get(key)
        if counts is None:
            if len(self.sections) >= MAX_SECTIONS:
                key = ("", OTHER)
            counts = self.sections.setdefault(key, Counter())
        counts["pages"] += 1
        counts[status_class(page)] += 1
        if is_problem(page):
            counts["problems"] += 1

    def _chain(self, page: Page) -> tuple[str, ...] | None:
        """The redirect chain that led to ``page``'s record, from the hops told (lock held;
        they are forgotten: a URL is fetched once), or None if it was not redirected."""
        url = page.url
        if url not in self._hops:
            return None
        chain, seen = [url], {url}
        while (url := self._hops.pop(url, None)) is not None and len(chain) <= MAX_HOPS:
            chain.append(url)
            if url in seen:  # a loop: shown once round
                break
            seen.add(url)
        return tuple(chain)

    def start(self) -> Recorder:
        """Take a first sample, then one every ``interval`` seconds from a daemon thread;
        returns self."""
        self._sample()
        self._thread = threading.Thread(target=self._run, name="report-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the sampler thread and, if it ran, take a last, exact sample."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            self._sample(exact=True)  # the final state, exactly

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def _sample(self, exact: bool = False) -> None:
        try:
            self.samples.append(self._reader.read(exact))
        except Exception:  # a reading can fail (Redis away): a gap in the curves, no more
            log.debug("report: reading the crawl failed", exc_info=True)
        if len(self.samples) > MAX_SAMPLES:  # a long crawl: coarser curves, bounded memory
            self.samples = self.samples[::2]
            self.interval *= 2


def _keep_top(heap: list[Row], row: Row) -> None:
    """Keep ``row`` in ``heap`` if it is among the ``TOP`` largest rows."""
    if len(heap) < TOP:
        heapq.heappush(heap, row)
    elif row > heap[0]:
        heapq.heapreplace(heap, row)


def section(url: str) -> tuple[str, str]:
    """(origin, section) of ``url``: the first segment of its path if there is one below it
    (``/docs/`` for ``/docs/intro.html``), else ``/``."""
    parts = urlsplit(url)
    segments = parts.path.split("/")
    return (f"{parts.scheme}://{parts.netloc}",
            f"/{segments[1]}/" if len(segments) > 2 else "/")


def status_class(page: Page) -> str:
    """One of ``COLUMNS``: the status's class, else failed (no answer) or not requested (a
    rule's refusal: robots.txt, a host cap, a redirect's target past --max-pages)."""
    if page.status is not None:
        return f"{min(max(page.status // 100, 2), 5)}xx"
    return "not requested" if page.error in NOT_REQUESTED else "failed"


# -- the HTML file --------------------------------------------------------------------------------

def plotting() -> bool:
    """Whether matplotlib can be imported (``pip install 'minicrawl[plot]'``)."""
    try:
        import matplotlib  # noqa: F401 - only whether it is there
    except ImportError:
        return False
    return True


def render_report(recorder: Recorder, stats: StatsSnapshot) -> str:
    """The report as one HTML document."""
    return "".join(_document(recorder, stats))


def _document(recorder: Recorder, stats: StatsSnapshot) -> Iterator[str]:
    crawler = recorder.crawler
    seeds = [redact(url) for url in crawler.seeds[:10]] + (
        [f"… and {len(crawler.seeds) - 10} more"] if len(crawler.seeds) > 10 else [])
    settings = {k: redact(v) if isinstance(v, str) else v  # a --redis password stays out
                for k, v in vars(crawler.options).items() if v not in (None, [], False)}
    e = html.escape
    yield "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        # What came from the sites is escaped; and should anything slip, no script runs
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "img-src data:; style-src 'unsafe-inline'\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>minicrawl report: {e(seeds[0])}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        "<h1>minicrawl crawl report</h1>",
        f'<p class="meta">minicrawl {e(__version__)}, written '
        f"{e(datetime.now(UTC).strftime('%Y-%m-%d %H:%M:%S UTC'))}; "
        f"{stats.get('pages', 0):,} pages in {stats.get('elapsed_s', 0):.2f} s"
        f"{' (interrupted)' if stats.get('interrupted') else ''}; "
        f"{stats.get('problems', 0):,} problems.</p>",
        '<p class="contents"><a href="#broken">Broken links</a> · '
        '<a href="#warnings">Warnings</a> · '
        '<a href="#redirects">Redirects</a> · <a href="#slowest">Slowest pages</a> · '
        '<a href="#largest">Largest pages</a> · <a href="#sections">Status by section</a> · '
        '<a href="#plots">Plots</a> · <a href="#stats">Stats</a></p>', ""])
    if recorder.broken is not None:
        yield from _broken_links(recorder.broken)
    else:
        yield from _failed_pages(recorder)
    yield from _warnings(recorder.broken if crawler.options.check_links else None)
    yield from _redirects(recorder)
    yield from _top_pages(recorder)
    yield from _sections(recorder)
    yield '<h2 id="plots">Plots</h2>\n'
    if plotting():
        yield '<div class="plots">\n'
        for title, draw in plots(recorder.samples, recorder.depths, recorder.statuses,
                                 recorder.elapsed_ms, getattr(crawler.visited,
                                                              "expected_fp_rate", None)):
            yield (f'<figure><img src="{png_data_uri(draw)}" alt="{e(title)}">'
                   f"<figcaption>{e(title)}</figcaption></figure>\n")
        yield "</div>\n"
    else:
        yield (f'<p class="noplots">No plots: matplotlib is not installed ({e(PLOT_EXTRA)} '
               "draws them in the next report).</p>\n")
    yield "\n".join([
        "<h2>Seeds</h2>",
        "<ul>" + "".join(f"<li><code>{e(s)}</code></li>" for s in seeds) + "</ul>",
        '<h2 id="stats">Stats</h2>', _table(stats, "stats"),
        "<h2>Settings</h2>", _table(settings, "settings"), "</body>", "</html>", ""])


def _broken_links(broken: BrokenLinks) -> Iterator[str]:
    """The first table: every broken URL, each with every link to it."""
    counts = broken.counts
    e = html.escape
    yield '<h2 id="broken">Broken links</h2>\n'
    yield f'<p class="headline">{e(headline(counts))}.</p>\n'
    yield from _grouped_table(broken, "broken", "broken URL", broken.groups(), _target_row,
                              counts.broken + counts.seeds, "no link checked is broken",
                              "links to broken URLs")


def _grouped_table(broken: BrokenLinks, kind: str, head: str,
                   groups: Iterator[tuple[_Head, Iterator[Referrer]]],
                   row: Callable[[_Head], str], counted: int, none: str,
                   what: str) -> Iterator[str]:
    """A table of ``groups`` (the broken links', the warnings'), each a head ``row`` then every
    link to it; ``none``: what its one row says when ``counted`` is 0; ``what``: its rows, in
    the note of any left out."""
    yield (f'<table class="{kind}"><thead><tr><th>status</th><th>{head} / linked from</th>'
           "<th>line</th><th>text</th><th>element</th></tr></thead>\n")
    shown = yield from _grouped_rows(groups, row)
    if not counted:
        yield f'<tbody><tr><td colspan="5">None: {none}.</td></tr></tbody>\n'
    yield "</table>\n"
    yield from _left_out(broken, counted, shown, what)


def _target_row(target: Target) -> str:
    """A broken URL's row: its status, the URL, where its redirects ended, why."""
    e = html.escape
    ended = (f' → {_link(target.final_url)}'
             if target.final_url and target.final_url != target.url else "")
    status = "no answer" if target.status is None else str(target.status)
    return (f'<tr class="target"><td class="status bad">{e(status)}</td>'
            f'<td colspan="4">{_link(target.url)}{ended} '
            f'<span class="why">({e(why(target))})</span></td></tr>\n')


def _warnings(broken: BrokenLinks | None) -> Iterator[str]:
    """The second table, with ``--check-links`` (``broken``: its reader, else None): every
    URL#fragment that names nothing on its page, each with every link to it — the warnings
    the printed list has after the broken links, read from the same reader."""
    e = html.escape
    yield '<h2 id="warnings">Warnings</h2>\n'
    if broken is None:  # --links alone records the links, but only --check-links looks for
        # each #fragment on its page: "none" would claim what nobody checked
        yield ('<p class="headline">The #fragments were not checked: crawl with --check-links '
               "to list each link whose #fragment names nothing on its page.</p>\n")
        return
    counts = broken.counts
    yield f'<p class="headline">{e(warnings_headline(counts))}.</p>\n'
    yield from _grouped_table(broken, "warnings", "URL#fragment", broken.warnings(),
                              _warned_row, counts.warnings,
                              "every #fragment linked names a part of its page",
                              "links to a missing #fragment")


def _warned_row(warned: Warned) -> str:
    """A URL#fragment's row: the page is fine (200), the fragment names nothing on it."""
    # Linked in full (the page opens at its top); shown as the printed list shows it: the
    # fragment is as written on a page, so it is cut and made printable as an href is
    return (f'<tr class="target"><td class="status">200</td><td colspan="4">'
            f"{_link(warned.url, warned_where(warned))} "
            f'<span class="why">({html.escape(warned_why(warned))})</span></td></tr>\n')


def _grouped_rows(groups: Iterator[tuple[_Head, Iterator[Referrer]]],
                  head_row: Callable[[_Head], str]) -> Generator[str, None, int]:
    """A ``<tbody>`` per group of ``groups`` (a :class:`BrokenLinks` reading): its head's row
    (``head_row``), then a row per link to it, until ``MAX_LINK_ROWS`` links are shown (the
    report stays readable); returns how many were."""
    shown = 0
    for head, referrers in groups:
        if shown >= MAX_LINK_ROWS:
            break
        yield f'<tbody class="target">{head_row(head)}'
        for referrer in referrers:
            if shown >= MAX_LINK_ROWS:
                break
            shown += 1
            yield _referrer_row(referrer)
        yield "</tbody>\n"
    return shown


def _left_out(broken: BrokenLinks, every: int, shown: int, what: str) -> Iterator[str]:
    """Under a table of :func:`_grouped_rows`: how many of its ``every`` links (``what``) it
    does not show, and whether the reader could keep them all."""
    if shown < every:
        yield (f'<p class="more">… and {every - shown:,} more {html.escape(what)}, not shown '
               "here: every one is in the list --check-links prints, and in the --links "
               "file.</p>\n")
    if broken.failed or not broken.complete:
        yield ('<p class="more">The list is incomplete: the links could not all be kept (the '
               "crawl said why).</p>\n")


def _referrer_row(referrer: Referrer) -> str:
    e = html.escape
    if not referrer.page:
        return '<tr class="referrer"><td></td><td colspan="4">(a seed)</td></tr>\n'
    line = "" if referrer.line is None else f"{referrer.line:,}"
    element = ("Refresh header" if referrer.tag == "header" else
               f'<{referrer.tag} {referrer.attr}="{referrer.href}">')
    return (f'<tr class="referrer"><td></td><td class="page">{_link(referrer.page)}</td>'
            f'<td class="line">{e(line)}</td><td class="text">{e(printable(referrer.text))}'
            f"</td><td><code>{e(printable(element))}</code></td></tr>\n")


def _failed_pages(recorder: Recorder) -> Iterator[str]:
    """The first table without the links' join: the pages that failed, each with the page
    the crawl found it on."""
    e = html.escape
    yield '<h2 id="broken">Broken links</h2>\n'
    yield ('<p class="headline">The links were not recorded: each page that failed is listed '
           "with the one page the crawl found it on. Every link to it, with its page, line and "
           "text: crawl with --check-links (or --links FILE).</p>\n")
    yield ('<table class="broken failed"><thead><tr><th>status</th><th>URL</th><th>why</th>'
           "<th>found on</th></tr></thead><tbody>\n")
    for failed in recorder.failures:
        status = "no answer" if failed.status is None else str(failed.status)
        ended = (f" → {_link(failed.final_url)}" if failed.final_url != failed.url else "")
        said = error_of(failed.status, failed.error) or ""
        yield (f'<tr><td class="status bad">{e(status)}</td><td>{_link(failed.url)}{ended}'
               f"</td><td>{e(redact(said))}</td>"
               f"<td>{_link(failed.referrer) if failed.referrer else '(a seed)'}</td></tr>\n")
    if not recorder.failures:
        yield '<tr><td colspan="4">None: no page failed.</td></tr>\n'
    yield "</tbody></table>\n"
    if recorder.problems > len(recorder.failures):
        yield (f'<p class="more">… and {recorder.problems - len(recorder.failures):,} more: '
               "--out FILE has every page.</p>\n")


def _redirects(recorder: Recorder) -> Iterator[str]:
    e = html.escape
    yield '<h2 id="redirects">Redirects</h2>\n'
    yield ('<table class="redirects"><thead><tr><th>status</th><th>chain (each hop)</th>'
           "<th>ended</th></tr></thead><tbody>\n")
    for redirect in recorder.redirects:
        hops = " → ".join(_link(url) for url in redirect.hops)
        status = str(redirect.status) if redirect.status is not None else (
            "not requested" if redirect.error in NOT_REQUESTED else "no answer")  # (its end)
        ended = redirect.error or ("fine" if (redirect.status or 0) < 400 else
                                   f"HTTP {redirect.status}")
        bad = " bad" if is_bad(redirect.status, redirect.error) else ""
        yield (f'<tr><td class="status{bad}">{e(status)}</td><td>{hops}</td>'
               f"<td>{e(redact(ended))}</td></tr>\n")
    if not recorder.redirects:
        yield '<tr><td colspan="3">None: no page was redirected.</td></tr>\n'
    yield "</tbody></table>\n"
    if recorder.chains > len(recorder.redirects):
        yield (f'<p class="more">… and {recorder.chains - len(recorder.redirects):,} '
               "more.</p>\n")


def _top_pages(recorder: Recorder) -> Iterator[str]:
    e = html.escape
    yield '<h2 id="slowest">Slowest pages</h2>\n'
    yield ('<table class="slowest"><thead><tr><th>response time</th><th>URL</th>'
           "<th>status</th><th>bytes</th></tr></thead><tbody>\n")
    for ms, _, url, status, size in sorted(recorder.slowest, reverse=True):
        yield (f'<tr><td class="number">{ms:,.0f} ms</td><td>{_link(url)}</td>'
               f'<td class="status">{e(str(status))}</td><td class="number">{size:,}</td>'
               "</tr>\n")
    yield "</tbody></table>\n"
    yield '<h2 id="largest">Largest pages</h2>\n'
    yield ('<table class="largest"><thead><tr><th>bytes</th><th>URL</th><th>status</th>'
           "<th>response time</th></tr></thead><tbody>\n")
    for size, _, url, status, ms in sorted(recorder.largest, reverse=True):
        yield (f'<tr><td class="number">{size:,}</td><td>{_link(url)}</td>'
               f'<td class="status">{e(str(status))}</td><td class="number">{ms:,.0f} ms</td>'
               "</tr>\n")
    yield "</tbody></table>\n"


def _sections(recorder: Recorder) -> Iterator[str]:
    e = html.escape
    origins = {origin for origin, _ in recorder.sections if origin}
    yield '<h2 id="sections">Status by section</h2>\n'
    yield ('<table class="sections"><thead><tr><th>section</th><th>pages</th><th>problems</th>'
           + "".join(f"<th>{e(c)}</th>" for c in COLUMNS) + "</tr></thead><tbody>\n")
    for (origin, path), counts in sorted(recorder.sections.items(),
                                         key=lambda kv: (kv[0][1] == OTHER, kv[0])):
        name = path if len(origins) <= 1 or path == OTHER else origin + path
        cells = "".join(
            f'<td class="number{" bad" if counts[c] and c in ("4xx", "5xx", "failed") else ""}">'
            f"{counts[c]:,}</td>" for c in COLUMNS)
        problems = counts["problems"]
        yield (f"<tr><td>{e(redact(name))}</td><td class=\"number\">{counts['pages']:,}</td>"
               f'<td class="number{" bad" if problems else ""}">{problems:,}</td>{cells}</tr>\n')
    yield "</tbody></table>\n"


def is_bad(status: int | None, error: str | None) -> bool:
    """A status or error that makes a page a problem (no rule's refusal)."""
    return (status or 0) >= 400 or (bool(error) and error not in NOT_REQUESTED)


def _link(url: str, text: str | None = None) -> str:
    """``url`` as a link (an http(s) URL; anything else only shown), escaped; shown as
    ``text`` if given (else as the URL)."""
    target = html.escape(redact(url))
    shown = target if text is None else html.escape(redact(text))
    if url.startswith(("http://", "https://")):
        return f'<a href="{target}" rel="noreferrer">{shown}</a>'
    return shown


def _table(values: Mapping[str, object], css_class: str) -> str:
    """``values`` as an HTML table, one row per name; each value is only shown."""
    rows = []
    for key, value in values.items():
        if isinstance(value, float):
            value = f"{value:.6g}"
        elif isinstance(value, int) and not isinstance(value, bool):
            value = f"{value:,}"
        rows.append(f"<tr><th>{html.escape(str(key))}</th>"
                    f"<td>{html.escape(str(value))}</td></tr>")
    return f'<table class="{css_class}">' + "".join(rows) + "</table>"


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { margin-bottom: .2em; } .meta { color: #666; margin-top: 0; }
.plots { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 1em; }
figure { margin: 0; border: 1px solid #ddd; padding: .5em; }
figure img { width: 100%; height: auto; } figcaption { color: #555; font-size: .9em; }
table { border-collapse: collapse; margin-bottom: 1em; }
th, td { padding: .15em .8em; border-bottom: 1px solid #eee; vertical-align: top; }
th { text-align: left; font-weight: normal; font-family: monospace; }
.stats td, .settings td, td.number { text-align: right; }
td { overflow-wrap: anywhere; } .why { color: #666; } .more, .noplots { color: #555; }
tr.target td { border-top: 2px solid #ccc; font-weight: 600; }
.bad { color: #b00020; } code { font-size: .9em; }
"""
