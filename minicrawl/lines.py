"""Lines written to one stream by many threads, for the core's command line
(:mod:`minicrawl.core.__main__`: a line per page, ``--help``): each write whole, never mixed
with another thread's; a write that fails — the reader gone (``| head``: no failure) or no room
(``> /dev/full``) — noted, the stream pointed at ``/dev/null`` so that nothing fails again, and
``on_closed`` called (the crawl stops).
"""

import os
import sys
import threading
from collections.abc import Callable
from typing import TextIO


class Lines:
    """A stream written by many threads; a write that fails: :meth:`gone`."""

    def __init__(self, stream: TextIO, on_closed: Callable[[], None] = lambda: None) -> None:
        self.stream, self.on_closed = stream, on_closed
        self._lock = threading.Lock()
        self.failure: OSError | None = None  # > /dev/full (a closed pipe is no failure)

    def write(self, text: str) -> None:
        """Write ``text`` at once: lines of two workers never mix (a failure: :meth:`gone`)."""
        with self._lock:
            try:
                self.stream.write(text)
            except OSError as e:  # the reader gone (| head), or no room (> /dev/full)
                self.gone(e)

    def gone(self, e: OSError) -> None:
        """A write failed: note why (``| head`` is no failure), go on to nowhere, ``on_closed``."""
        self.failure = self.failure or (None if isinstance(e, BrokenPipeError) else e)
        os.dup2(nowhere := os.open(os.devnull, os.O_WRONLY), self.stream.fileno())
        os.close(nowhere)
        self.on_closed()

    def flush(self) -> int:
        """Write what is left now, not at exit; 1 (told in one line) if the stream failed, or 0."""
        try:
            self.stream.flush()
        except OSError as e:
            self.gone(e)
        if self.failure:
            print(f"cannot write standard output: {self.failure.strerror}", file=sys.stderr)
        return 1 if self.failure else 0
