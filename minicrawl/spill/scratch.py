"""A scratch directory: where a crawl keeps on disk what it need not keep in memory.

One mechanism for every scratch file of a crawl without ``--state`` — the spilling ToDo's cold
end (:mod:`minicrawl.spill.todo`) and the duplicate-content map (:mod:`minicrawl.digests`): a
temporary directory under ``temp_dir`` (default: ``TMPDIR``), made at its first use, removed by
:meth:`ScratchDir.close` — which the crawl calls at its end, also after Ctrl-C and SIGTERM,
which end the crawl the same way — and at the interpreter's exit (or when its owner is
collected) at the latest. Only a ``kill -9`` leaves it behind, as any process's temporary files.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from pathlib import Path


class ScratchDir:
    """A temporary directory named ``prefix…`` under ``temp_dir``, made by :meth:`make`.

    Not thread-safe: its owner calls it under its own lock. Once closed it makes no new
    directory (:meth:`make` returns None): a straggler's work then stays in memory.
    """

    def __init__(self, prefix: str, temp_dir: str | None = None) -> None:
        self.prefix = prefix
        self.temp_dir = temp_dir
        self.path: Path | None = None  # while it exists
        self.closed = False
        self._cleanup: weakref.finalize | None = None

    def make(self) -> Path | None:
        """The directory, made now if it is not yet (None once closed)."""
        if self.path is None and not self.closed:
            self.path = Path(tempfile.mkdtemp(prefix=self.prefix, dir=self.temp_dir))
            # At the interpreter's exit at the latest, whatever ended the crawl.
            self._cleanup = weakref.finalize(self, shutil.rmtree, self.path, ignore_errors=True)
        return self.path

    def close(self) -> None:
        """Remove the directory and all in it (once; close its files first), and make no more."""
        self.closed = True
        if self._cleanup is not None:
            self._cleanup()  # removes the directory, once
            self._cleanup = None
        self.path = None
