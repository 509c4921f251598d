"""The decision trace (``--trace [FILE]``): one readable line per decision the crawl makes.

Read it next to :mod:`minicrawl.crawler`; every line names a step of the model::

    SEED http://127.0.0.1:8000/ → TODO (depth 0)
    WORKER 1 TAKES http://127.0.0.1:8000/ (depth 0)
    WORKER 1 FETCHED 200 2817 bytes http://127.0.0.1:8000/
        EXTRACT http://127.0.0.1:8000/section1/page1.html from http://127.0.0.1:8000/
        VISITED? no → TODO (depth 1)
        EXTRACT http://offsite.invalid/page.html from http://127.0.0.1:8000/
        OUT OF SCOPE → drop
    WORKER 3 FETCHED 301 0 bytes http://127.0.0.1:8000/old/9
        REDIRECT http://127.0.0.1:8000/old/9 → http://127.0.0.1:8000/section2/page9.html
        VISITED? yes → drop

Workers run in parallel, so their lines interleave; a line that stands alone names its worker,
and each page's link decisions are written as one block (before its new links enter ToDo), so
an indented decision always belongs to the ``EXTRACT`` line above it.

A :class:`Tracer` is an observer of the crawl (:mod:`minicrawl.events`). When tracing is off
none is made and each point costs the crawler a call of a no-op, never anything per link: the
per-link lines are only built here, from lists the crawler has anyway, when someone asked.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TextIO

from minicrawl.events import CrawlObserver, LinkDecisions

if TYPE_CHECKING:
    from minicrawl.core.interfaces import Item, Response
    from minicrawl.page import Page
    from minicrawl.stats import StatsSnapshot

from minicrawl.cli.outpaths import cannot_write, is_stdout, silence_stdout
from minicrawl.redact import redact

log = logging.getLogger("minicrawl")

INDENT = "    "


class Tracer(CrawlObserver):
    """Writes decision lines to a stream, whole lines (or whole blocks) at a time, thread-safe."""

    flag = "--trace"

    def __init__(self, stream: TextIO, close: bool = False,
                 on_broken: Callable[[], None] | None = None) -> None:
        self.stream = stream
        self.name = getattr(stream, "name", "-")
        self._close = close
        self._on_broken = on_broken
        self._broken = False
        self.failed = False  # a write failed (a full disk): the trace file is incomplete
        self._lock = threading.Lock()

    @classmethod
    def open(cls, target: str, on_broken: Callable[[], None] | None = None) -> Tracer:
        """A tracer writing to ``target``: a file path, or ``-`` for standard output.

        ``on_broken`` is called once if the reader goes away (``--trace | head``): the crawl
        passes its ``stop``, so a piped trace ends the crawl the way a Unix filter would.
        """
        if is_stdout(target):  # also /dev/stdout: never reopened (that would truncate it)
            tracer = cls(sys.stdout, on_broken=on_broken)
            tracer.name = "-"
            return tracer
        return cls(open(target, "w", encoding="utf-8"), close=True)  # noqa: SIM115

    def close(self) -> None:
        """Close the trace file (a failure to flush it is told once, ``failed`` set); on
        standard output only flush it."""
        with self._lock:
            if self._close:
                try:
                    self.stream.close()  # flushes the last lines
                except OSError as e:
                    if not self.failed:
                        log.error("%s", cannot_write(self.flag, self.name, e))
                    self._broken = self.failed = True
            elif not self._broken:
                self._write_or_break("")

    def __enter__(self) -> Tracer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def write(self, lines: Sequence[str]) -> None:
        """Write ``lines`` together, so no other thread's line lands in between."""
        text = redact("".join(line + "\n" for line in lines))  # a seed's password stays out
        with self._lock:
            if not self._broken:
                self._write_or_break(text)

    def _write_or_break(self, text: str) -> None:
        try:
            self.stream.write(text)
            if not self._close:
                self.stream.flush()  # someone is watching stdout live
        except BrokenPipeError:
            self._broken = True
            if self.stream is sys.stdout:  # later prints (the summary) must not fail too
                silence_stdout()
            if self._on_broken is not None:
                self._on_broken()
        except OSError as e:  # a full disk: the trace stops, the crawl goes on
            self._broken = self.failed = True
            log.error("%s; tracing stops", cannot_write(self.flag, self.name, e))
            if self.stream is sys.stdout:  # > /dev/full: the summary would fail the same way
                silence_stdout()

    # -- the decisions, in the order the crawl makes them (the points of minicrawl.events) -----

    def seeds_queued(self, fresh: Sequence[str], seen: Sequence[str]) -> None:
        self.write([f"SEED {url} → TODO (depth 0)" for url in fresh]
                   + [f"SEED {url} → drop (given twice)" for url in seen])

    def resumed(self, items: Sequence[Item]) -> None:
        """The items a resumed crawl (``--state``) put back in ToDo."""
        self.write([f"RESUMED {item.url} → TODO (depth {item.depth})" for item in items])

    def retrying(self, worker: int, item: Item, attempts: int, wait: float) -> None:
        """A failed fetch goes back to ToDo, not to be taken again for ``wait`` seconds."""
        self.write([f"WORKER {worker} RETRY LATER {item.url} → TODO in {wait:.1f} s "
                    f"(attempt {item.attempt + 2} of {attempts})"])

    def taken(self, worker: int, item: Item) -> None:
        self.write([f"WORKER {worker} TAKES {item.url} (depth {item.depth})"])

    def fetched(self, worker: int, response: Response) -> None:
        what = (f"{response.status} {len(response.body)} bytes" if response.status is not None
                else "no response")
        error = f" ({response.error})" if response.error else ""
        self.write([f"WORKER {worker} FETCHED {what} {response.url}{error}"])

    def redirected(self, source: str, target: str, decision: str) -> None:
        """A redirect from ``source`` to ``target``, and what scope or Visited said about it."""
        decision = decision.replace("_", " ")  # a counter name (out_of_scope) reads as words
        self.write([f"{INDENT}REDIRECT {source} → {target}", f"{INDENT}{decision}"])

    def gave_up(self, worker: int, url: str, reason: str) -> None:
        """A redirect chain that ended in an error (loop, too long, bad Location, page cap)."""
        self.write([f"WORKER {worker} GIVES UP {url} ({reason})"])

    def refused(self, worker: int, url: str, reason: str, kind: str) -> None:
        """Not fetched: robots.txt forbids it (its own line: a decision of the model, not a
        failure), or a cap was reached."""
        if kind == "robots_disallowed":
            self.robots_drop(url, worker=worker)
        else:
            self.gave_up(worker, url, reason)

    def duplicate_found(self, worker: int, page: Page) -> None:
        """``page``'s body is the one first recorded for ``page.duplicate_of``."""
        self.write([f"WORKER {worker} DUPLICATE OF {page.duplicate_of}: {page.url} → links "
                    f"not extracted, not saved"])

    def sitemap_read(self, page: Page) -> None:
        """One sitemap file read (--sitemaps): how many entries it listed, how many entered
        ToDo, or what went wrong."""
        what = f"{len(page.links)} entries, {page.new} → TODO (depth 0)"
        self.write([f"SITEMAP {page.url}: {what}" + (f" ({page.error})" if page.error else "")])

    def sitemap_queued(self, fresh: Sequence[Item], seen: int) -> None:
        """The sitemap URLs that entered ToDo (their referrer: the sitemap); ``seen``: how many
        Visited already held."""
        self.write([f"SITEMAP URL {item.url} from {item.referrer} → TODO (depth 0)"
                    for item in fresh]
                   + ([f"SITEMAP URLS already in Visited: {seen} → drop"] if seen else []))

    def lastmod_unchanged(self, worker: int, url: str) -> None:
        """--recrawl: the sitemap's <lastmod> is not newer than the recorded fetch."""
        self.write([f"WORKER {worker} UNCHANGED (sitemap lastmod) {url} → not fetched"])

    def robots_drop(self, url: str, worker: int | None = None) -> None:
        """robots.txt forbids ``url``: it is not fetched (called by the politeness layer)."""
        who = f"WORKER {worker} " if worker is not None else ""
        self.write([f"{who}ROBOTS → drop {url}"])

    def links_decided(self, page: Page, decisions: LinkDecisions) -> None:
        """The fate of every link on one page, as the crawler decided it."""
        d = decisions
        offered, new = set(d.in_scope), set(d.new)
        lines = []
        for url in page.links:
            lines.append(f"{INDENT}EXTRACT {url} from {page.final_url}")
            if d.too_deep:
                lines.append(f"{INDENT}TOO DEEP (depth {d.depth} > max depth {d.max_depth}) "
                             "→ drop")
            elif url not in offered:
                why = d.unwanted.get(url, "out_of_scope").replace("_", " ").upper()
                lines.append(f"{INDENT}{why} → drop")
            elif url in new:
                lines.append(f"{INDENT}VISITED? no → TODO (depth {d.depth})")
            else:
                lines.append(f"{INDENT}VISITED? yes → drop")
        for href, reason in d.rejected:
            lines.append(f"{INDENT}EXTRACT {href} from {page.final_url}")
            lines.append(f"{INDENT}NOT A URL TO CRAWL ({reason}) → drop")
        for href in d.nofollow:
            lines.append(f"{INDENT}EXTRACT {href} from {page.final_url}")
            lines.append(f"{INDENT}NOFOLLOW → drop")
        if d.repeats:
            lines.append(f"{INDENT}({d.repeats} more link{'s' * (d.repeats > 1)} on this page "
                         f"repeat{'s' * (d.repeats == 1)} a link above)")
        self.write(lines)

    def crawl_finished(self, stats: StatsSnapshot) -> None:
        pages, todo_left = stats.get("pages", 0), stats.get("todo_left", 0)
        why = (f"stopped with {todo_left} URLs left in ToDo" if todo_left
               else "ToDo is empty and no worker is busy")
        self.write([f"DONE after {pages} pages: {why}"])
        self.close()
