"""Watching a crawl: a live panel while it runs (the summary when it ends:
:mod:`minicrawl.watch.summary`).

The live panel is redrawn a few times a second from the crawl's counters (never per URL), so
watching costs the crawl nothing measurable. While it is drawn, the crawl's log lines (a
warning, "interrupted: …" after Ctrl-C) are printed above it, through its console: written
straight to the terminal they moved the cursor under the panel, and the next frame left a line
of the last one behind.
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import TYPE_CHECKING, TextIO

from minicrawl.watch.progress import Progress, ProgressReader, RecentRate, Watched
from minicrawl.watch.summary import problems_text

if TYPE_CHECKING:  # rich is imported when a panel is drawn: a --quiet crawl never loads it
    from rich.console import Console
    from rich.live import Live
    from rich.panel import Panel
    from rich.text import Text


log = logging.getLogger("minicrawl")

REFRESH_PER_SECOND = 4
LABEL_WIDTH = 10
VALUE_WIDTH = 64


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

    def __init__(self, crawler: Watched, enabled: bool = True,
                 console: Console | None = None) -> None:
        self.crawler = crawler
        self.enabled = enabled
        self.console = console
        self._reader = ProgressReader(crawler)
        self._rate = RecentRate()
        self._live: Live | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._rerouted: list[tuple[logging.StreamHandler[TextIO], TextIO]] = []

    def __enter__(self) -> LiveView:
        if self.enabled:
            from rich.console import Console
            from rich.live import Live

            self._live = Live(self.render(), console=self.console or Console(),
                              transient=False, auto_refresh=False)
            self._live.__enter__()
            self._reroute_log(self._live.console)
            self._thread = threading.Thread(target=self._refresh, name="live-view", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._stop.set()
            if self._thread is not None:
                self._thread.join()
            self._draw(exact=True)
            self._restore_log()
            self._live.__exit__(None, None, None)
            self._live = None

    def _reroute_log(self, console: Console) -> None:
        """The log's handlers that write to a terminal write above the panel while it is drawn
        (a log line written past it left the next frame one line low: a stale line of the panel
        stayed above it). Its stream is that of the handler made before the panel (the
        command line's), which rich's own redirection of sys.stderr does not reach."""
        from rich.file_proxy import FileProxy

        if not console.is_terminal:
            return
        for logger in (logging.getLogger(), log):
            for handler in logger.handlers:
                stream = getattr(handler, "stream", None)
                if (isinstance(handler, logging.StreamHandler) and stream is not None
                        and not isinstance(stream, FileProxy)
                        and getattr(stream, "isatty", lambda: False)()):
                    handler.setStream(FileProxy(console, stream))  # type: ignore[arg-type]
                    self._rerouted.append((handler, stream))

    def _restore_log(self) -> None:
        """The log's handlers write where they wrote before the panel (what waits is printed)."""
        while self._rerouted:
            handler, stream = self._rerouted.pop()
            handler.flush()
            handler.setStream(stream)

    def _refresh(self) -> None:
        while not self._stop.wait(1 / REFRESH_PER_SECOND):
            self._draw()

    def _draw(self, exact: bool = False) -> None:
        assert self._live is not None
        try:
            self._live.update(self.render(exact), refresh=True)
        except Exception:  # a reading can fail (Redis away): skip a tick, the crawl says why
            log.debug("live view: reading the crawl failed", exc_info=True)

    def render(self, exact: bool = False) -> Panel:
        """The panel for the crawl's state right now (``exact``: re-count Visited too)."""
        p = self._reader.read(exact)
        return render_progress(p, self._rate.update(p))


def render_progress(p: Progress, pages_per_s: float) -> Panel:
    """The live panel for one reading; ``pages_per_s`` is the recent rate.

    Plain styled text, not a ``rich`` Table: a table measures its cells on every redraw and
    costs several times more, and this runs four times a second beside the workers.
    """
    from rich.panel import Panel
    from rich.text import Text

    fill = "n/a" if p.fill_ratio is None else f"{p.fill_ratio:.4%}"
    fp = "none (exact)" if p.fp_rate is None and p.fill_ratio is None else (
        "n/a" if p.fp_rate is None else f"{p.fp_rate:.2e}")
    done = f"{p.pages:,}"
    if p.max_pages:  # with --state the cap is this run's: the next run goes on
        done += (f" of this run's {p.max_pages:,}" if p.per_run else f" / {p.max_pages:,}") \
            + f"  ({p.done_fraction or 0.0:.0%})"
    problems = problems_text(p.problems, p.status_4xx, p.status_5xx)
    if p.not_requested:
        problems += f"; {p.not_requested:,} not requested (robots.txt, a cap)"
    rows = [
        ("pages done", done),
        *([("checked", f"{p.checked:,} URLs the pages lead to (--check-links; --mirror's "
                       "requisites)")]
          if p.checked else []),
        *([("saved", f"{p.saved_files:,} files, {_size(p.saved_bytes)} in {p.saved_in}")]
          if p.saved_in else []),
        ("ToDo", f"{p.todo:,} waiting, {p.in_flight:,} in flight"),
        *([] if p.todo_in_memory is None else [
            ("in memory", f"{p.todo_in_memory:,} URLs ≈ {_size(p.todo_memory_bytes or 0)}"),
            ("on disk", f"{p.todo_on_disk or 0:,} URLs ≈ {_size(p.todo_disk_bytes or 0)}, "
                        f"{_size(p.todo_disk_used_bytes or 0)} of disk used" if not
                        p.todo_disk_failed else "none: the disk failed, every URL waits in "
                        f"memory ({p.todo_disk_lost or 0:,} lost)")]),
        ("workers", f"{p.at_work:,} of {p.workers:,} at work (as many as keep the CPU busy)"),
        ("Visited", f"{p.visited:,} URLs, fill {fill}, est. false-positive rate {fp}"),
        ("links", f"{p.links_new:,} new → ToDo, {p.links_dropped:,} dropped by Visited, "
                  f"{p.links_out_of_scope:,} out of scope"),
        ("problems", problems),
        ("speed", f"{pages_per_s:,.1f} pages/s now, {p.pages_per_s:,.1f} average, "
                  f"{p.elapsed:,.1f} s elapsed"),
    ]
    text = Text()
    for label, value in rows:
        text.append(f"{label:>{LABEL_WIDTH}}  ", style="bold cyan")
        text.append(value.ljust(VALUE_WIDTH) + "\n")  # a panel that keeps its width
        if label == "pages done" and p.max_pages:
            text.append(" " * (LABEL_WIDTH + 2))
            text.append_text(_bar(p.done_fraction or 0.0))
            text.append("\n")
    text.rstrip()
    return Panel(text, title="minicrawl", title_align="left", expand=False)


def _size(n: int) -> str:
    """1.2 MB, 340 KB, 12 B."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n} B"


def _bar(fraction: float, width: int = 40) -> Text:
    from rich.text import Text

    filled = round(fraction * width)
    return Text.assemble(("━" * filled, "green"), ("━" * (width - filled), "grey23"))
