"""The crawl report (``--report FILE.html``): one self-contained HTML file with the stats and plots.

While the crawl runs, a :class:`Recorder` samples the crawl's gauges a few times a second (the
same :func:`minicrawl.watch.progress.read_progress` the live view shows) and notes three numbers per
page — depth, status, response time. At the end :func:`render_report` draws the plots with
matplotlib (Agg, no display needed) and embeds them as PNG data URIs, so the file can be mailed
or archived alone. matplotlib is an optional extra (``pip install 'minicrawl[plot]'``), imported
only when a report is written.
"""

from __future__ import annotations

import base64
import html
import importlib.util
import io
import logging
import threading
from array import array
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from minicrawl.cli.outpaths import write_at_end
from minicrawl.events import CrawlObserver
from minicrawl.http.fetch import error_kind
from minicrawl.redact import redact
from minicrawl.version import __version__
from minicrawl.watch.progress import Progress, ProgressReader, Watched

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from minicrawl.page import Page
    from minicrawl.stats import StatsSnapshot

log = logging.getLogger("minicrawl")

SAMPLE_INTERVAL = 0.1  # seconds; a demo crawl lasts about one second and still gets a curve
MAX_SAMPLES = 4000  # then every other sample goes and the interval doubles: hours stay small
RATE_WINDOW = 0.5  # seconds of samples behind each pages/s point


class ReportUnavailable(RuntimeError):
    """A report was asked for but matplotlib is not installed."""


def require_plotting() -> None:
    """Fail before the crawl, not after it, when the report could not be drawn."""
    if importlib.util.find_spec("matplotlib") is None:
        raise ReportUnavailable("--report needs matplotlib: pip install 'minicrawl[plot]'")


class Recorder(CrawlObserver):
    """What the report plots: gauges over time, and depth / status / response time per page.

    As an observer of the crawl it samples from ``crawl_started`` on, notes each recorded page,
    and at ``crawl_finished`` writes the report to ``path`` (if given).
    """

    flag = "--report"
    failed = False  # the report could not be written (told in one line)

    def __init__(self, crawler: Watched, interval: float = SAMPLE_INTERVAL,
                 path: str | None = None) -> None:
        self._reader = ProgressReader(crawler)
        self.crawler = crawler
        self.path = path
        self.interval = interval
        self.samples: list[Progress] = []
        self.depths: Counter[int] = Counter()
        self.statuses: Counter[str] = Counter()
        self.elapsed_ms = array("f")  # 4 bytes a page, even for a long crawl
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def page(self, page: Page) -> None:
        """Note one fetched page (called by the crawler once per page)."""
        # No status: never fetched (robots.txt, a host cap) or no response; say which.
        status = (str(page.status) if page.status is not None
                  else error_kind(page.error or "no response"))
        with self._lock:
            self.depths[page.depth] += 1
            self.statuses[status] += 1
            self.elapsed_ms.append(page.elapsed_ms)

    def crawl_started(self) -> None:
        self.start()

    def on_page(self, page: Page) -> None:
        if not page.sitemap:  # a sitemap file read (--sitemaps) is no page of the crawl
            self.page(page)

    def crawl_finished(self, stats: StatsSnapshot) -> None:
        self.stop()
        if self.path:  # a failure is one line; the crawl's summary is not lost to it
            self.failed = not write_at_end(self.flag, self.path,
                                           lambda: render_report(self, stats))

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


# -- the HTML file --------------------------------------------------------------------------------

def render_report(recorder: Recorder, stats: StatsSnapshot) -> str:
    """The report as one HTML document."""
    crawler = recorder.crawler
    plots = [(title, _png_data_uri(draw)) for title, draw in _plots(recorder)]
    seeds = [redact(url) for url in crawler.seeds[:10]] + (
        [f"… and {len(crawler.seeds) - 10} more"] if len(crawler.seeds) > 10 else [])
    settings = {k: redact(v) if isinstance(v, str) else v  # a --redis password stays out
                for k, v in vars(crawler.options).items() if v not in (None, [], False)}
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>minicrawl report: {e(seeds[0])}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        "<h1>minicrawl crawl report</h1>",
        f'<p class="meta">minicrawl {e(__version__)}, written '
        f"{e(datetime.now(UTC).strftime('%Y-%m-%d %H:%M:%S UTC'))}; "
        f"{stats.get('pages', 0):,} pages in {stats.get('elapsed_s', 0):.2f} s"
        f"{' (interrupted)' if stats.get('interrupted') else ''}.</p>",
        "<h2>Seeds</h2>",
        "<ul>" + "".join(f"<li><code>{e(s)}</code></li>" for s in seeds) + "</ul>",
        "<h2>Plots</h2>",
        '<div class="plots">',
    ]
    for title, uri in plots:
        parts.append(f'<figure><img src="{uri}" alt="{e(title)}">'
                     f"<figcaption>{e(title)}</figcaption></figure>")
    parts += ["</div>", "<h2>Stats</h2>", _table(stats, "stats"),
              "<h2>Settings</h2>", _table(settings, "settings"), "</body>", "</html>", ""]
    return "\n".join(parts)


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
table { border-collapse: collapse; } th, td { padding: .15em .8em; border-bottom: 1px solid #eee; }
th { text-align: left; font-weight: normal; font-family: monospace; } td { text-align: right; }
"""


# -- the plots ----------------------------------------------------------------------------------

Draw = Callable[["Axes"], None]  # draws one plot on the Axes it is given


def _png_data_uri(draw: Draw) -> str:
    """The plot ``draw`` makes, as a PNG ``data:`` URI."""
    from matplotlib.figure import Figure  # lazily: only a report needs matplotlib

    fig = Figure(figsize=(6.4, 3.2), dpi=100, layout="constrained")
    draw(fig.subplots())
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _plots(rec: Recorder) -> list[tuple[str, Draw]]:
    """(caption, function drawing on an Axes) for each plot of the report."""
    samples = rec.samples
    t = [s.elapsed for s in samples]

    def rate(ax: Axes) -> None:
        ax.plot(*_pages_per_s(samples), color="tab:blue")
        _labels(ax, "pages/s", "seconds since start", "pages per second")

    def todo(ax: Axes) -> None:
        ax.plot(t, [s.todo for s in samples], label="waiting in ToDo", color="tab:orange")
        ax.plot(t, [s.in_flight for s in samples], label="in flight", color="tab:green")
        ax.legend(loc="best")
        _labels(ax, "ToDo length", "seconds since start", "URLs")

    def depth(ax: Axes) -> None:
        depths = sorted(rec.depths)
        ax.bar(depths, [rec.depths[d] for d in depths], color="tab:purple")
        ax.set_xticks(depths)
        _labels(ax, "Pages by depth (hops from a seed)", "depth", "pages")

    def status(ax: Axes) -> None:
        codes = sorted(rec.statuses, key=lambda c: (not c.isdigit(), c))
        colors = [{"2": "tab:green", "3": "tab:blue", "4": "tab:orange", "5": "tab:red"}.get(
            c[0], "tab:gray") for c in codes]
        ax.bar(codes, [rec.statuses[c] for c in codes], color=colors)
        if len(codes) > 4:
            ax.tick_params(axis="x", labelrotation=20)
        _labels(ax, "Status codes", "status", "pages")

    def response(ax: Axes) -> None:
        times = [ms for ms in rec.elapsed_ms if ms > 0]
        if times:
            ax.hist(times, bins=min(50, max(10, len(times) // 10)), color="tab:cyan")
        _labels(ax, "Response times", "milliseconds", "pages")

    def visited(ax: Axes) -> None:
        fill = [s.fill_ratio for s in samples]
        if any(f is None for f in fill):
            ax.plot(t, [s.visited for s in samples], color="tab:brown")
            _labels(ax, "Visited size (exact set: no false positives)", "seconds since start",
                    "URLs in Visited")
            return
        ax.plot(t, fill, color="tab:brown", label="fill ratio")
        ax.set_ylabel("fraction of bits set")
        # An empty filter has a false-positive rate of exactly 0, which a log axis cannot show.
        fp = [(x, f) for x, f in zip(t, (s.fp_rate for s in samples), strict=True) if f]
        target = getattr(rec.crawler.visited, "expected_fp_rate", None)
        if fp:
            right = ax.twinx()
            right.plot(*zip(*fp, strict=True), color="tab:red", linestyle="--",
                       label="est. false-positive rate")
            if target:
                right.axhline(target, color="tab:gray", linestyle=":",
                              label=f"rate at capacity ({target:.2g})")
            right.set_yscale("log")
            right.set_ylabel("false-positive rate")
            right.legend(loc="lower right")
        ax.legend(loc="upper left")
        ax.set_title("Visited: fill ratio and estimated false-positive rate")
        ax.set_xlabel("seconds since start")

    return [
        (f"Pages per second over time (each point: the last {RATE_WINDOW:g} s).", rate),
        ("ToDo length over time: it grows while pages have more new links than the workers "
         "can fetch, and the crawl ends when it is empty and no page is in flight.", todo),
        ("Depth histogram: how many hops from a seed each fetched page was (ToDo is FIFO, so "
         "the crawl is breadth-first).", depth),
        ("Status codes of the pages; a page without one names why (robots.txt disallows, "
         "a network error…).", status),
        ("Response time distribution (time to the full body).", response),
        ("Visited over time: the fraction of the Bloom filter's bits set, and the estimated "
         "false-positive rate fill^k — the chance a new URL is wrongly taken for seen.",
         visited),
    ]


def _labels(ax: Axes, title: str, x: str, y: str) -> None:
    ax.set_title(title)
    ax.set_xlabel(x)
    ax.set_ylabel(y)


def _pages_per_s(samples: list[Progress]) -> tuple[list[float], list[float]]:
    """Pages per second at each sample, over the last ``RATE_WINDOW`` seconds of samples."""
    times, rates = [], []
    start = 0
    for s in samples[1:]:
        while samples[start].elapsed < s.elapsed - RATE_WINDOW:
            start += 1
        first = samples[start] if samples[start] is not s else samples[max(start - 1, 0)]
        if s.elapsed > first.elapsed:
            times.append(s.elapsed)
            rates.append((s.pages - first.pages) / (s.elapsed - first.elapsed))
    return times, rates
