"""Writing a file atomically: readers (and a crash) see the old file or the new one, never half.

The data goes to a temporary file in the same folder, which is then renamed over the target
(``os.replace`` is atomic within one file system). Used for the Visited checkpoint and for saved
pages.

The temporary file is made by ``mkstemp`` (mode 0600, the owner's alone: a checkpoint) unless
``mode`` is given: then it is created with that mode less the umask, as ``open()`` creates a
file (0666 & ~umask for an output the user reads), and ``keep_mode`` gives it an existing
file's permissions instead (as an editor saving a file keeps them).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path


def write_atomically(path: Path, data: bytes | Iterable[bytes], *, durable: bool = True,
                     mode: int | None = None, keep_mode: bool = False) -> None:
    """Replace ``path`` with ``data`` (or its pieces, written as they come) in one step.

    ``durable`` also fsyncs the file and its folder, so the new content survives a power cut
    once this returns (a checkpoint needs that; a saved page copy is cheaper without it).
    ``mode``: the new file's mode less the umask (None: 0600); ``keep_mode``: an existing
    file's permission bits are kept instead (set before the rename: never a moment without).
    """
    old = None
    if keep_mode:
        try:
            old = stat.S_IMODE(os.stat(path).st_mode) & 0o777  # (no set-user-ID bit)
        except FileNotFoundError:
            pass
    if mode is None:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:40]}.", suffix=".tmp",
                                   dir=path.parent or ".")
    else:
        fd, tmp = _create(path, mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            if old is not None:
                os.fchmod(fh.fileno(), old)
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


def _create(path: Path, mode: int) -> tuple[int, str]:
    """A new temporary file beside ``path``, created exclusively with ``mode`` (the umask
    applies, as to ``open()``): its descriptor and name."""
    folder = path.parent or Path(".")
    for _ in range(100):
        tmp = os.path.join(folder, f".{path.name[:40]}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                           | getattr(os, "O_CLOEXEC", 0), mode), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {str(path)!r}")
