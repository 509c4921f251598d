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

When tracing is off the crawler holds ``None`` instead of a :class:`Tracer` and pays an ``if``
at each per-page step (take, fetch, links), never one per link: the per-link lines are only
built here, from lists the crawler has anyway, when someone asked for them.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TextIO

from minicrawl.outpaths import cannot_write

log = logging.getLogger("minicrawl")

INDENT = "    "


class Tracer:
    """Writes decision lines to a stream, whole lines (or whole blocks) at a time, thread-safe."""

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
        if target == "-":
            return cls(sys.stdout, on_broken=on_broken)
        return cls(open(target, "w", encoding="utf-8"), close=True)  # noqa: SIM115

    def close(self) -> None:
        with self._lock:
            if self._close:
                try:
                    self.stream.close()  # flushes the last lines
                except OSError as e:
                    if not self.failed:
                        log.error("%s", cannot_write("--trace", self.name, e))
                    self._broken = self.failed = True
            elif not self._broken:
                self._write_or_break("")

    def __enter__(self) -> Tracer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def write(self, lines: Sequence[str]) -> None:
        """Write ``lines`` together, so no other thread's line lands in between."""
        text = "".join(line + "\n" for line in lines)
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
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
                os.close(devnull)
            if self._on_broken is not None:
                self._on_broken()
        except OSError as e:  # a full disk: the trace stops, the crawl goes on
            self._broken = self.failed = True
            log.error("%s; tracing stops", cannot_write("--trace", self.name, e))

    # -- the decisions, in the order the crawl makes them ------------------------------------

    def seeds(self, fresh: Sequence[str], seen: Sequence[str]) -> None:
        self.write([f"SEED {url} → TODO (depth 0)" for url in fresh]
                   + [f"SEED {url} → drop (given twice)" for url in seen])

    def resumed(self, items: Sequence[tuple[str, int]]) -> None:
        """(url, depth) of the items a resumed crawl (``--state``) put back in ToDo."""
        self.write([f"RESUMED {url} → TODO (depth {depth})" for url, depth in items])

    def retry(self, worker: int, url: str, attempt: int, attempts: int, wait: float) -> None:
        """A failed fetch goes back to ToDo, not to be taken again for ``wait`` seconds."""
        self.write([f"WORKER {worker} RETRY LATER {url} → TODO in {wait:.1f} s "
                    f"(attempt {attempt + 1} of {attempts})"])

    def takes(self, worker: int, url: str, depth: int) -> None:
        self.write([f"WORKER {worker} TAKES {url} (depth {depth})"])

    def fetched(self, worker: int, url: str, status: int | None, nbytes: int,
                error: str | None = None) -> None:
        what = f"{status} {nbytes} bytes" if status is not None else "no response"
        self.write([f"WORKER {worker} FETCHED {what} {url}" + (f" ({error})" if error else "")])

    def redirect(self, source: str, target: str, decision: str) -> None:
        """A redirect from ``source`` to ``target``, and what scope or Visited said about it."""
        decision = decision.replace("_", " ")  # a counter name (out_of_scope) reads as words
        self.write([f"{INDENT}REDIRECT {source} → {target}", f"{INDENT}{decision}"])

    def gives_up(self, worker: int, url: str, error: str) -> None:
        """A redirect chain that ended in an error (loop, too long, bad Location, page cap)."""
        self.write([f"WORKER {worker} GIVES UP {url} ({error})"])

    def robots_drop(self, url: str, worker: int | None = None) -> None:
        """robots.txt forbids ``url``: it is not fetched (called by the politeness layer)."""
        who = f"WORKER {worker} " if worker is not None else ""
        self.write([f"{who}ROBOTS → drop {url}"])

    def links(self, page_url: str, links: Sequence[str], rejected: Sequence[tuple[str, str]],
              depth: int, *, too_deep: bool, max_depth: int | None, in_scope: Sequence[str],
              fresh: Sequence[bool], duplicates: int,
              unwanted: Mapping[str, str] | None = None) -> None:
        """The fate of every link on one page, as the crawler decided it.

        ``links`` are the page's distinct canonical links; ``rejected`` the hrefs that were not
        URLs to crawl, with the reason; ``in_scope`` and ``fresh`` the links offered to Visited
        and its answers (empty when the links were too deep to consider); ``unwanted`` why each
        other link was not offered (``out_of_scope``, ``trap``, …; out of scope if not given).
        """
        answers = dict(zip(in_scope, fresh, strict=True))
        unwanted = unwanted or {}
        lines = []
        for url in links:
            lines.append(f"{INDENT}EXTRACT {url} from {page_url}")
            if too_deep:
                lines.append(f"{INDENT}TOO DEEP (depth {depth} > max depth {max_depth}) → drop")
            elif url not in answers:
                why = unwanted.get(url, "out_of_scope").replace("_", " ").upper()
                lines.append(f"{INDENT}{why} → drop")
            elif answers[url]:
                lines.append(f"{INDENT}VISITED? no → TODO (depth {depth})")
            else:
                lines.append(f"{INDENT}VISITED? yes → drop")
        for href, reason in rejected:
            lines.append(f"{INDENT}EXTRACT {href} from {page_url}")
            lines.append(f"{INDENT}NOT A URL TO CRAWL ({reason}) → drop")
        if duplicates:
            lines.append(f"{INDENT}({duplicates} more link{'s' * (duplicates > 1)} on this page "
                         f"repeat{'s' * (duplicates == 1)} a link above)")
        self.write(lines)

    def done(self, pages: int, todo_left: int) -> None:
        why = (f"stopped with {todo_left} URLs left in ToDo" if todo_left
               else "ToDo is empty and no worker is busy")
        self.write([f"DONE after {pages} pages: {why}"])
