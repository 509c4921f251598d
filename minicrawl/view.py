"""Watching a crawl: a live panel while it runs and a summary when it ends.

The live panel is redrawn a few times a second from the crawl's counters (never per URL), so
watching costs the crawl nothing measurable.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any, TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from minicrawl.progress import Progress, RecentRate, read_progress

if TYPE_CHECKING:
    from minicrawl.crawler import Crawler

REFRESH_PER_SECOND = 4


def wants_live_view(quiet: bool, stream: TextIO | None = None, trace_to_stdout: bool = False
                    ) -> bool:
    """Whether to show the live panel: only on a terminal, and not with ``--quiet``.

    A trace written to stdout is a live view of its own, and the two would overwrite each other.
    """
    stream = sys.stdout if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return not quiet and not trace_to_stdout and bool(isatty and isatty())


class LiveView:
    """A ``rich`` panel showing ToDo, workers, Visited and throughput; a no-op when disabled."""

    def __init__(self, crawler: Crawler, enabled: bool = True,
                 console: Console | None = None) -> None:
        self.crawler = crawler
        self.enabled = enabled
        self.console = console
        self._rate = RecentRate()
        self._live: Live | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> LiveView:
        if self.enabled:
            self._live = Live(self.render(), console=self.console or Console(),
                              transient=False, auto_refresh=False)
            self._live.__enter__()
            self._thread = threading.Thread(target=self._refresh, name="live-view", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._stop.set()
            if self._thread is not None:
                self._thread.join()
            self._live.update(self.render(), refresh=True)
            self._live.__exit__(None, None, None)
            self._live = None

    def _refresh(self) -> None:
        while not self._stop.wait(1 / REFRESH_PER_SECOND):
            assert self._live is not None
            self._live.update(self.render(), refresh=True)

    def render(self) -> Panel:
        """The panel for the crawl's state right now."""
        p = read_progress(self.crawler)
        return render_progress(p, self._rate.update(p))


def render_progress(p: Progress, pages_per_s: float) -> Panel:
    """The live panel for one reading; ``pages_per_s`` is the recent rate."""
    table = Table(show_header=False, box=None, padding=(0, 1))
    table.add_column(style="bold cyan", justify="right", no_wrap=True)
    table.add_column()
    done: Any = Text(f"{p.pages:,}")
    if p.max_pages:
        fraction = p.done_fraction or 0.0
        done = Group(Text(f"{p.pages:,} / {p.max_pages:,}  ({fraction:.0%})"),
                     ProgressBar(total=p.max_pages, completed=min(p.pages, p.max_pages),
                                 width=40))
    table.add_row("pages done", done)
    table.add_row("ToDo", f"{p.todo:,} waiting, {p.in_flight:,} in flight")
    fill = "n/a" if p.fill_ratio is None else f"{p.fill_ratio:.4%}"
    fp = "none (exact)" if p.fp_rate is None and p.fill_ratio is None else (
        "n/a" if p.fp_rate is None else f"{p.fp_rate:.2e}")
    table.add_row("Visited", f"{p.visited:,} URLs, fill {fill}, est. false-positive rate {fp}")
    table.add_row("links", f"{p.links_new:,} new → ToDo, {p.links_dropped:,} dropped by Visited, "
                           f"{p.links_out_of_scope:,} out of scope")
    table.add_row("errors", f"{p.errors:,}")
    table.add_row("speed", f"{pages_per_s:,.1f} pages/s now, {p.pages_per_s:,.1f} average, "
                           f"{p.elapsed:,.1f} s elapsed")
    return Panel(table, title="minicrawl", title_align="left", expand=False)


def format_summary(stats: dict[str, Any]) -> str:
    """The final stats as aligned ``name: value`` lines."""
    width = max((len(k) for k in stats), default=0)
    lines = ["", "Crawl finished" + (" (interrupted)" if stats.get("interrupted") else "")]
    for key, value in stats.items():
        if isinstance(value, float):
            value = f"{value:.6g}"
        lines.append(f"  {key:<{width}}  {value}")
    return "\n".join(lines)

