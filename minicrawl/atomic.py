"""Writing a file atomically: readers (and a crash) see the old file or the new one, never half.

The data goes to a temporary file in the same folder, which is then renamed over the target
(``os.replace`` is atomic within one file system). Used for the Visited checkpoint and for saved
pages.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path


def write_atomically(path: Path, data: bytes | Iterable[bytes], *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` (or its pieces, written as they come) in one step.

    ``durable`` also fsyncs the file and its folder, so the new content survives a power cut
    once this returns (a checkpoint needs that; a saved page copy is cheaper without it).
    """
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:40]}.", suffix=".tmp",
                               dir=path.parent or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            if isinstance(data, bytes):
                fh.write(data)
            else:
                fh.writelines(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if durable:  # make the rename itself durable; not possible on every platform
        with contextlib.suppress(OSError):
            dfd = os.open(path.parent or ".", os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
