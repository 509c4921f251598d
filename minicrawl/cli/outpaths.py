"""Output paths, checked before the crawl starts against each other and against every input,
and written safely when it ends.

One rule, applied here for every output an option names (``--out``, ``--links``, ``--trace``,
``--stats``, ``--report`` and ``--warc`` with its rolled-over names as files; ``--state`` and
``--save-pages`` as directories): **nothing of the user's is changed but the outputs they
named.** :func:`check_output_paths` refuses, before anything is created or fetched, with one
:class:`OutputPathError` line naming the flag (and the input it would destroy):

* an output that is an input: a seed file, ``--ca-bundle`` (or ``REQUESTS_CA_BUNDLE``,
  ``SSL_CERT_FILE``), a file the ``--redis`` URL names (``?ssl_ca_certs=``, ``?ssl_certfile=``,
  ``?ssl_keyfile=``: a TLS client's key among them), or a file inside the ``--state`` directory
  (the crawl's own database);
* two outputs naming one file (``--out X --warc X``, ``--out`` equal to a WARC's rolled-over
  name ``X-00003.warc.gz``), or two writing to standard output;
* an existing file that is not an output of this kind (``--trace s1.txt s2.txt``, where argparse
  took the first seed file as the trace's FILE): a crawl overwrites its own earlier ``--out``, but
  never a seed list or a README;
* a path the crawl could not write as it will write it (a missing folder, ``/dev/full``, a file
  where a folder should be): tried rather than asked (``os.access``), since root passes every
  permission test and a read-only mount only shows when written to, without leaving anything
  behind.

``-`` is standard output for ``--out``, ``--links``, ``--stats`` and ``--trace`` (so are
``/dev/stdout`` and a path naming the file standard output was redirected to):
:func:`open_output` then writes
through a copy of file descriptor 1, never truncating what the shell opened, and the
command line prints its summary to stderr instead (:func:`writes_to_stdout`).

:func:`write_at_end` writes a file the crawl produces when it is over (stats, report, links):
atomically (a crash or a SIGTERM leaves the old file or the new one, never a 0-byte one), a
failure one logged line, never an exception that would hide the crawl's summary.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from minicrawl.atomic import write_atomically

if TYPE_CHECKING:
    from minicrawl.options import Options

log = logging.getLogger("minicrawl")

FILE_FLAGS = ("out", "links", "trace", "stats", "report")  # written as one file each
DIR_FLAGS = ("state", "save_pages", "mirror")  # directories the crawl creates and fills
STDOUT = "-"
STDOUT_FLAGS = ("out", "links", "trace", "stats")  # may write to standard output
STDOUT_NAMES = frozenset({STDOUT, "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"})
CA_VARIABLES = ("REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "CURL_CA_BUNDLE")  # read by requests/ssl
_HEAD = 4096  # bytes read of an existing output to tell whether it is one of ours
# What each output's file begins with: an existing file that does not is no output of that kind
# (its first line). Empty files pass: `touch out.jsonl` before a crawl is fine.
_OURS: dict[str, tuple[str, Callable[[bytes], bool]]] = {
    "out": ("JSON-lines or CSV --out file", lambda head: head.lstrip().startswith(
        (b"{", b"url,final_url,"))),
    "links": ("JSON-lines or CSV --links file", lambda head: head.lstrip().startswith(
        (b"{", b"page,url,"))),
    "stats": ("stats file (JSON)", lambda head: head.lstrip().startswith(b"{")),
    "trace": ("trace", lambda head: re.match(rb"[A-Z][A-Z?]+ ", head) is not None),
    "report": ("HTML report", lambda head: head.lstrip()[:14].lower().startswith(
        (b"<!doctype html", b"<html"))),
    "warc": ("WARC file", lambda head: head.startswith(b"\x1f\x8b")),
    "png": ("PNG image", lambda head: head.startswith(b"\x89PNG")),  # minicrawl bloom plot
}


class OutputPathError(ValueError):
    """An output path the crawl could not or must not write; the message names the flag."""


def check_output_paths(options: Options, inputs: Iterable[str] = ()) -> None:
    """Raise :class:`OutputPathError` for the first output path of ``options`` that the crawl
    must not or could not write (see the module docstring); ``inputs`` are the seed arguments
    (those naming files are inputs). Creates nothing."""
    outputs = _outputs(options)
    _check_stdout(outputs)
    _check_against_inputs(outputs, _inputs(options, inputs), options.state)
    _check_each_other(outputs, options)
    for flag, path, kind in outputs:
        if is_stdout(path):
            continue
        if kind == "dir":
            check_directory(flag, path)
        else:
            check_file(flag, path)
    rolls = bool(options.warc and options.warc_max_size)  # then X.warc.gz itself is unused
    for flag, path, kind in outputs:
        if kind != "dir" and not is_stdout(path) and not (kind == "warc" and rolls):
            _check_ours(flag, path, kind)
    if rolls:  # a new archive removes these: they must be WARC files
        for name in rolled_over(os.fspath(options.warc)):
            _check_ours("--warc", name, "warc")


def is_stdout(path: str | os.PathLike[str]) -> bool:
    """``path`` means standard output: ``-``, ``/dev/stdout`` (and its aliases), or the very
    file or pipe standard output is (``--out o.txt > o.txt``)."""
    path = os.fspath(path)
    if path in STDOUT_NAMES:
        return True
    try:
        out = os.fstat(1)
        st = os.stat(path)
    except (OSError, ValueError):
        return False
    # A terminal or /dev/null as stdout: writing to it by name mixes or truncates nothing.
    return (stat.S_ISREG(out.st_mode) or stat.S_ISFIFO(out.st_mode)) and \
        (st.st_dev, st.st_ino) == (out.st_dev, out.st_ino)


def writes_to_stdout(options: Options) -> bool:
    """``--out``, ``--links`` or ``--stats`` of ``options`` goes to standard output: JSON for a
    program (``| jq``), so the summary goes to stderr. (A trace on stdout is for a person: the
    summary follows it there.)"""
    return any(getattr(options, name, None) is not None and is_stdout(getattr(options, name))
               for name in ("out", "links", "stats"))


def open_output(path: str | os.PathLike[str], mode: str = "w") -> TextIO:
    """The output file at ``path`` opened for text (``mode`` ``w`` or ``a``); standard output
    (:func:`is_stdout`) through a copy of its descriptor: closing it leaves stdout open, and
    nothing is truncated."""
    if is_stdout(path):
        sys.stdout.flush()  # what was printed before comes first
        return open(os.dup(1), "w", encoding="utf-8")  # noqa: SIM115 - the caller closes it
    return open(path, mode, encoding="utf-8")  # noqa: SIM115 - the caller closes it


def silence_stdout() -> None:
    """Point standard output at ``/dev/null``: its reader is gone (``| head``) or it cannot
    be written (``> /dev/full``), and what is still printed, or flushed at exit, must not fail
    again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
    finally:
        os.close(devnull)


def rolled_over(warc: str) -> list[str]:
    """The existing files ``X-00000.warc.gz``, ``X-00001.warc.gz`` … of ``--warc X.warc.gz``
    that a new archive would replace (the first, then the next ones up to the first missing)."""
    from minicrawl.records.warc import rolled_name  # here: a usage error loads no warcio

    names = [rolled_name(warc, 0)] if os.path.exists(rolled_name(warc, 0)) else []
    index = 1
    while os.path.exists(name := rolled_name(warc, index)):
        names.append(name)
        index += 1
    return names


def check_output_file(flag: str, path: str, kind: str) -> None:
    """``path`` can be written as a file of ``kind`` (a key of the outputs' kinds: ``out``,
    ``png`` …) and is not another kind of file: :func:`check_file`, then an existing file must
    be one of this kind (or empty)."""
    check_file(flag, path)
    if not is_stdout(path):
        _check_ours(flag, path, kind)


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


def write_at_end(flag: str, path: str, text: Callable[[], str | Iterable[str]]) -> bool:
    """Write ``text()``, the last output of a crawl (or its pieces, written as they come: a
    big file need not be held), to ``path`` in one step (atomically: the old file or the new
    one, never a part, should a signal or a full disk come in between; standard output and
    devices directly). A failure is logged in one line naming ``flag`` (the crawl's results
    are not lost to it). True if written."""
    try:
        write_text(path, text())
        return True
    except OSError as e:
        log.error("%s", cannot_write(flag, path, e))
        return False


def write_text(path: str, text: str | Iterable[str]) -> None:
    """``text`` (or its pieces) to ``path``: atomically if it is (or will be) a regular file,
    else (stdout, a device, a pipe) written straight; a symlink's target is replaced, not the
    link."""
    pieces = [text] if isinstance(text, str) else text
    if is_stdout(path):
        with open_output(path) as f:
            f.writelines(pieces)
        return
    real = os.path.realpath(path)
    try:
        regular = stat.S_ISREG(os.stat(real).st_mode)
    except FileNotFoundError:
        regular = True
    if not regular:  # /dev/null: never renamed over (as root that would replace the device)
        with open(real, "w", encoding="utf-8") as f:
            f.writelines(pieces)
        return
    # A new file gets the mode open() would give it (0666 & ~umask: readable by whoever reads
    # the --out beside it), an existing one keeps its own (as an editor saving it does)
    write_atomically(Path(real), (piece.encode("utf-8") for piece in pieces), durable=False,
                     mode=0o666, keep_mode=True)


def cannot_write(flag: str, path: str, e: OSError) -> str:
    """The one line saying ``flag``'s file could not be written, and why."""
    return str(_error(flag, path, e))


def cannot_write_stdout(e: OSError) -> str:
    """The one line saying standard output could not be written (``> /dev/full``)."""
    return f"cannot write standard output: {e.strerror or type(e).__name__}"


# -- the checks ------------------------------------------------------------------------------

def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _outputs(options: Options) -> list[tuple[str, str, str]]:
    """(flag, path, kind) of each output named: kind is the option's name for a file, ``dir``
    for a directory."""
    named = [(name, getattr(options, name, None)) for name in (*FILE_FLAGS, "warc", *DIR_FLAGS)]
    return [(_flag(name), os.fspath(path), "dir" if name in DIR_FLAGS else name)
            for name, path in named if path is not None]


def _check_stdout(outputs: list[tuple[str, str, str]]) -> None:
    on_stdout = []
    for flag, path, kind in outputs:
        if path == STDOUT and kind not in STDOUT_FLAGS:
            what = "a directory" if kind == "dir" else "a file name"
            raise OutputPathError(f"{flag} {path!r}: standard output cannot take it; give "
                                  f"{what} (./- for one named '-')")
        if is_stdout(path):
            on_stdout.append(flag)
    if len(on_stdout) > 1:
        raise OutputPathError(f"{on_stdout[0]} and {on_stdout[1]} both write to standard "
                              "output: give one of them a file")


def _inputs(options: Options, seed_args: Iterable[str]) -> list[tuple[str, str]]:
    """(what it is, path) of each file the crawl reads."""
    found = [(f"the seed file {arg!r}", arg) for arg in seed_args
             if "://" not in arg and os.path.exists(arg)]
    if options.ca_bundle:
        found.append((f"--ca-bundle {os.fspath(options.ca_bundle)!r}",
                      os.fspath(options.ca_bundle)))
    found += [(f"{name} {os.environ[name]!r}", os.environ[name]) for name in CA_VARIABLES
              if os.environ.get(name)]
    # Whatever the scheme: redis:// naming them is refused by Options, but they are the
    # user's files all the same.
    if options.redis:
        from minicrawl.options import REDIS_FILES, redis_query  # (outpaths imports no options)

        found += [(f"--redis ?{name}={value!r}", value)
                  for name, value in redis_query(options.redis)
                  if name in REDIS_FILES and value]
    return found


def _check_against_inputs(outputs: list[tuple[str, str, str]], inputs: list[tuple[str, str]],
                          state: str | os.PathLike[str] | None) -> None:
    state_dir = os.path.realpath(state) if state is not None else None
    for flag, path, kind in outputs:
        if is_stdout(path):
            continue
        for what, source in inputs:
            if _same(path, source) or (kind == "warc" and _claims(path, source)):
                raise OutputPathError(f"{flag} {path!r} is {what}: writing it would destroy "
                                      f"it; give {flag} another path")
        if state_dir is not None and flag != "--state" and _inside(path, state):
            raise OutputPathError(f"{flag} {path!r} is inside --state {os.fspath(state)!r}: "
                                  "the state directory is the crawl's own; put it elsewhere")


def _check_each_other(outputs: list[tuple[str, str, str]], options: Options) -> None:
    seen: dict[str, str] = {}
    for flag, path, _ in outputs:
        if is_stdout(path):
            continue
        key = os.path.realpath(path)
        if key in seen and not _is_device(path):
            raise OutputPathError(f"{seen[key]} and {flag} both name {path!r}: give each its "
                                  "own path")
        seen[key] = flag
    if options.warc and options.warc_max_size:
        for flag, path, _ in outputs:
            if flag != "--warc" and _claims(os.fspath(options.warc), path):
                raise OutputPathError(f"{flag} {path!r} is a file name --warc "
                                      f"{os.fspath(options.warc)!r} rolls over to: give "
                                      "each its own path")


def _check_ours(flag: str, path: str, kind: str) -> None:
    """An existing regular file at ``path`` must be an output of ``kind`` (or empty)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return
        with open(path, "rb") as f:
            head = f.read(_HEAD)
    except OSError:  # unreadable: check_file has tried writing it already
        return
    what, ours = _OURS[kind]
    if not head.strip() or ours(head):
        return
    first = head.splitlines()[0].decode("utf-8", "replace") if head.splitlines() else ""
    first = first if len(first) <= 40 else first[:39] + "…"
    hint = (" (--trace took it as its FILE: put --trace after the seeds, or write --trace - "
            "for stdout)") if flag == "--trace" else ""
    raise OutputPathError(f"{flag} {path!r} exists and is not a {what} (it begins "
                          f"{first!r}); not overwriting it: remove it or give another "
                          f"name{hint}")


def _same(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist (yet)
        return os.path.realpath(a) == os.path.realpath(b)


def _inside(path: str, directory: str | os.PathLike[str]) -> bool:
    real, folder = os.path.realpath(path), os.path.realpath(directory)
    return real != folder and real.startswith(folder.rstrip(os.sep) + os.sep)


def _claims(warc: str, path: str) -> bool:
    """``path`` is one of the rolled-over names ``X-NNNNN.warc.gz`` of ``--warc X.warc.gz``."""
    real, base = os.path.realpath(path), os.path.realpath(warc)
    stem = os.path.basename(base).removesuffix(".warc.gz")
    return (os.path.dirname(real) == os.path.dirname(base)
            and re.fullmatch(re.escape(stem) + r"-\d{5,}\.warc\.gz",
                             os.path.basename(real)) is not None)


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
    where = "standard output" if is_stdout(path) else repr(path)
    return OutputPathError(f"{flag} {where}: cannot write: {reason}")
