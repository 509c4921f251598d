"""Output paths checked before the crawl starts, and written safely when it ends.

A crawl of hours must not fail at its last step because ``--stats`` names a folder that does not
exist: :func:`check_output_paths` tries every path the options name (``--out``, ``--trace``,
``--stats``, ``--report`` as files; ``--state``, ``--save-pages`` as directories) the way the crawl
will use it, without leaving anything behind, and raises :class:`OutputPathError` naming the flag.
It tries rather than asks (``os.access``): root passes every permission test, and a read-only
mount, ``/dev/full`` or a file standing where a folder is expected only show when written to.

:func:`write_at_end` writes a file the crawl produces when it is over (stats, report); a failure
is one logged line, never an exception that would hide the crawl's summary.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minicrawl.options import Options

log = logging.getLogger("minicrawl")

FILE_FLAGS = ("out", "trace", "stats", "report")  # written as one file each
DIR_FLAGS = ("state", "save_pages")  # directories the crawl creates and fills


class OutputPathError(ValueError):
    """An output path the crawl could not write; the message names the flag."""


def check_output_paths(options: Options) -> None:
    """Raise :class:`OutputPathError` for the first output path of ``options`` that cannot be
    written as the crawl will write it; also when two options name the same file."""
    seen: dict[str, str] = {}
    for name in (*FILE_FLAGS, *DIR_FLAGS):
        path = getattr(options, name, None)
        if path is None or (name == "trace" and path == "-"):  # "-": standard output
            continue
        flag = "--" + name.replace("_", "-")
        path = os.fspath(path)
        check = check_file if name in FILE_FLAGS else check_directory
        check(flag, path)
        key = os.path.realpath(path)
        if key in seen and not _is_device(path):
            raise OutputPathError(f"{seen[key]} and {flag} both name {path!r}: give each its "
                                  "own path")
        seen[key] = flag


def check_file(flag: str, path: str) -> None:
    """``path`` can be created or written as a file (an existing file is not changed)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        parent = os.path.dirname(path) or "."
        _check_folder(flag, path, parent)
        _probe(flag, path, lambda: _create_and_remove(path))
        return
    except OSError as e:  # e.g. a file standing where a folder of the path should be
        raise _error(flag, path, e) from None
    if stat.S_ISDIR(st.st_mode):
        raise OutputPathError(f"{flag} {path!r} is a directory; give a file name")
    if stat.S_ISREG(st.st_mode):
        _probe(flag, path, lambda: open(path, "ab").close())  # append mode: nothing is changed
    else:  # a device or a pipe: /dev/null is fine, /dev/full refuses every write
        _probe(flag, path, lambda: _write_nothing(path))


def check_directory(flag: str, path: str) -> None:
    """``path`` is a writable directory, or one that can be created (it is not created)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        existing = Path(path).absolute()
        while not existing.exists():
            existing = existing.parent
        if not existing.is_dir():
            raise OutputPathError(
                f"{flag} {path!r}: {str(existing)!r} is not a directory") from None
        _probe(flag, path, lambda: tempfile.TemporaryFile(dir=existing).close())
        return
    except OSError as e:
        raise _error(flag, path, e) from None
    if not stat.S_ISDIR(st.st_mode):
        raise OutputPathError(f"{flag} {path!r} is not a directory")
    _probe(flag, path, lambda: tempfile.TemporaryFile(dir=path).close())


def write_at_end(flag: str, path: str, write: Callable[[str], None]) -> bool:
    """``write(path)``, the last output of a crawl; a failure is logged in one line naming
    ``flag`` (the crawl's results are not lost to it). True if written."""
    try:
        write(path)
        return True
    except OSError as e:
        log.error("%s", cannot_write(flag, path, e))
        return False


def cannot_write(flag: str, path: str, e: OSError) -> str:
    """The one line saying ``flag``'s file could not be written, and why."""
    return str(_error(flag, path, e))


def _check_folder(flag: str, path: str, parent: str) -> None:
    if not os.path.exists(parent):
        raise OutputPathError(f"{flag} {path!r}: folder {parent!r} does not exist")
    if not os.path.isdir(parent):
        raise OutputPathError(f"{flag} {path!r}: {parent!r} is not a directory")


def _probe(flag: str, path: str, attempt: Callable[[], object]) -> None:
    try:
        attempt()
    except OSError as e:
        raise _error(flag, path, e) from None


def _create_and_remove(path: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.close(fd)
    os.unlink(path)


def _write_nothing(path: str) -> None:
    # O_NONBLOCK: a FIFO nobody reads fails at once (ENXIO) instead of blocking the start.
    fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.write(fd, b"")  # /dev/full answers even an empty write with ENOSPC
    finally:
        os.close(fd)


def _is_device(path: str) -> bool:
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _error(flag: str, path: str, e: OSError) -> OutputPathError:
    reason = {errno.ENXIO: "a pipe with no reader"}.get(e.errno or 0,
                                                      e.strerror or type(e).__name__)
    return OutputPathError(f"{flag} {path!r}: cannot write: {reason}")
