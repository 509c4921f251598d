"""Watching a crawl: a live panel while it runs and a summary when it ends.

The live panel is redrawn a few times a second from the crawl's counters (never per URL), so
watching costs the crawl nothing measurable.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

if TYPE_CHECKING:
    from minicrawl.crawler import Crawler

REFRESH_PER_SECOND = 4


class LiveView:
    """A ``rich`` panel showing ToDo, workers, Visited and throughput; a no-op when disabled."""

    def __init__(self, crawler: Crawler, enabled: bool = True) -> None:
        self.crawler = crawler
        self.enabled = enabled
        self._live: Live | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> LiveView:
        if self.enabled:
            self._live = Live(self.render(), console=Console(), transient=False,
                              auto_refresh=False)
            self._live.__enter__()
            self._thread = threading.Thread(target=self._refresh, daemon=True)
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

    def render(self) -> Table:
        """The panel for the crawl's state right now."""
        c = self.crawler
        counts = c.stats.counts()
        elapsed = max(c.stats.elapsed, 1e-9)
        pages = counts.get("pages", 0)
        visited = c.visited
        fill = getattr(visited, "fill_ratio", None)
        fp = getattr(visited, "current_fp_rate", None)
        cap = c.options.max_pages
        table = Table(title="minicrawl", show_header=False, box=None, padding=(0, 2))
        table.add_column(style="bold cyan", justify="right")
        table.add_column()
        done = f"{pages:,}" + (f" / {cap:,}  {_bar(pages / cap)}" if cap else "")
        table.add_row("pages done", done)
        table.add_row("ToDo", f"{len(c.todo):,} waiting, "
                              f"{max(c.todo.unfinished - len(c.todo), 0)} in flight")
        table.add_row("Visited", f"{len(visited):,} URLs" + (
            f", fill {fill:.4f}, est. false positives {fp:.2e}" if fill is not None else ""))
        table.add_row("links", f"{counts.get('links_new', 0):,} new, "
                               f"{counts.get('links_filtered', 0):,} dropped by Visited, "
                               f"{counts.get('links_out_of_scope', 0):,} out of scope")
        table.add_row("errors", f"{counts.get('errors', 0):,}")
        table.add_row("speed", f"{pages / elapsed:,.1f} pages/s, {elapsed:,.1f} s elapsed")
        return table


def _bar(fraction: float, width: int = 24) -> str:
    filled = int(max(0.0, min(1.0, fraction)) * width)
    return "[" + "#" * filled + "." * (width - filled) + "]"


def format_summary(stats: dict[str, Any]) -> str:
    """The final stats as aligned ``name: value`` lines."""
    width = max((len(k) for k in stats), default=0)
    lines = ["", "Crawl finished" + (" (interrupted)" if stats.get("interrupted") else "")]
    for key, value in stats.items():
        if isinstance(value, float):
            value = f"{value:.6g}"
        lines.append(f"  {key:<{width}}  {value}")
    return "\n".join(lines)

