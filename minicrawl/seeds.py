"""Seeds: where a crawl starts.

A seed argument is either a file (one URL per line; blank lines and ``#`` comments ignored) or a
URL. Every seed is canonicalized; one that is not a valid http(s) URL is reported with where it
came from (``file:line``) and skipped.

A seed file is read lazily, never held: :class:`Seeds` reads each file up to its first valid
seed when the crawl is made (so "no valid seed at all" is still refused up front, exit 2), and
the crawl reads the rest while it crawls (:meth:`Seeds.rest`, in chunks), offering each chunk to
Visited like a page's links — Visited, not a list of the others, says which seeds are repeats.
A million-line file starts crawling at once and costs no more memory than the URLs in ToDo.

What the file holds is looked at before its lines: gzip, bzip2 and xz files are read through
their decompressor (``seeds.txt.gz`` is what a user would hand over); a UTF-16 or UTF-32 file
with a byte-order mark is decoded; binary data (a NUL byte, a zip or zstd archive) is refused in
one line instead of thousands of garbage "URLs". A line that is not UTF-8 (a byte ``\\xff``), or
holds a lone surrogate, is a bad seed of its own (``file:line``), not a URL with a code point
that cannot exist.
"""

from __future__ import annotations

import bz2
import codecs
import gzip
import hashlib
import io
import lzma
import os
import re
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import IO

from minicrawl.core.interfaces import Item
from minicrawl.core.urls import canonical
from minicrawl.options import shown
from minicrawl.origins import origin_of
from minicrawl.redact import redact, wire_url
from minicrawl.seams import PoliteFrontier

CHUNK = 1000  # seeds offered to Visited and put in ToDo at once (a page's links are ~10-100)
# What reading a seed file can raise after it opened: a truncated or corrupt compressed file, a
# UTF-16 file cut in the middle of a character.
_READ_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError, UnicodeDecodeError)


class NoValidSeeds(ValueError):
    """Raised when not one seed is a valid http(s) URL."""


class SeedFileError(ValueError):
    """A seed file that cannot be read as lines of URLs (binary data, an archive): the message
    names the file and what it holds."""


def seed_arguments(seeds: object) -> list[str]:
    """``seeds`` as a list of arguments (URLs or seed files); ``TypeError`` naming ``seeds`` for
    anything else (a number, bytes, None, a dict)."""
    if isinstance(seeds, (str, os.PathLike)):
        seeds = [seeds]
    elif isinstance(seeds, (bytes, bytearray, dict)) or not isinstance(seeds, Iterable):
        raise TypeError(f"seeds must be a URL, a seed file or a list of them (strings), got "
                        f"{type(seeds).__name__}")
    args = list(seeds)
    for arg in args:
        if not isinstance(arg, (str, os.PathLike)):
            raise TypeError(f"seeds must be strings (URLs or seed files), got "
                            f"{type(arg).__name__} {shown(arg)}")
    return [os.fspath(arg) for arg in args]


class Seeds:
    """The seeds of a crawl, from URL and file arguments.

    ``head``: the canonical seeds known when it is made — the URL arguments and each file's
    lines up to its first valid seed; ``problems``: one message per seed or file refused so far.
    :meth:`rest` reads the files on from there, :meth:`origins` reads every seed's origin (the
    scope's hosts) in a pass of its own.
    """

    def __init__(self, args: Iterable[str]) -> None:
        self.args = list(args)
        self.head: list[str] = []
        self.problems: list[str] = []
        self.files: list[str] = []  # the seed files, readable
        self._pending: list[tuple[str, Iterator[tuple[str | None, str]]]] = []  # lines left
        for arg in self.args:
            if "://" not in arg and os.path.exists(arg):
                self._open(arg)
            elif "://" not in arg and _looks_like_a_file(arg):
                self.problems.append(f"{arg}: no such seed file")
            else:
                url, problem = _seed(arg, "argument")
                if url is not None:
                    self.head.append(url)
                else:
                    self.problems.append(problem)
        self.head = list(dict.fromkeys(self.head))

    @property
    def streamed(self) -> bool:
        """True if seed files have lines left to read after the head."""
        return bool(self._pending)

    def _open(self, path: str) -> None:
        """Read ``path`` up to its first valid seed (the head); keep the rest for later."""
        try:
            lines = _seed_lines(path)
            first = next(lines, None)  # opens and sniffs the file: its errors come here
        except (*_READ_ERRORS, SeedFileError) as e:
            self.problems.append(_unreadable(path, e))
            return
        self.files.append(path)
        found = False
        while first is not None:
            url, problem = first
            found = True
            if url is not None:
                self.head.append(url)
                self._pending.append((path, lines))
                return
            self.problems.append(problem)
            try:
                first = next(lines, None)
            except _READ_ERRORS as e:
                self.problems.append(_unreadable(path, e))
                return
        if not found:
            self.problems.append(f"{path}: no seed URL in this file")

    def rest(self, report: Callable[[str], None], chunk: int = CHUNK) -> Iterator[list[str]]:
        """The seeds of the files after the head, in order, ``chunk`` at a time; each bad line
        (or a file that breaks off, a truncated gzip) told to ``report`` as it is read."""
        batch: list[str] = []
        while self._pending:
            path, lines = self._pending.pop(0)
            try:
                for url, problem in lines:
                    if url is None:
                        report(problem)
                        continue
                    batch.append(url)
                    if len(batch) >= chunk:
                        yield batch
                        batch = []
            except _READ_ERRORS as e:
                report(_unreadable(path, e))
        if batch:
            yield batch

    def close(self) -> None:
        """Close the files whose rest was not read (a crawl stopped early)."""
        for _, lines in self._pending:
            lines.close()  # type: ignore[attr-defined]
        self._pending = []

    def origins(self) -> Iterator[str]:
        """``scheme://host[:port]`` of every valid seed (repeats included), read afresh from
        the files: what the crawl's scope needs before the rest is read. Fast: a line's origin
        is parsed once per distinct authority, not once per line."""
        known: dict[str, str | None] = {}
        for url in self.head:
            yield origin_of(url)
        for path in self.files:
            try:
                for text in _texts(path):
                    if (origin := _origin(text, known)) is not None:
                        yield origin
            except (*_READ_ERRORS, SeedFileError):
                continue  # told by the feed (rest) when it gets there

    def binding(self) -> list[str]:
        """What a ``--state`` directory is bound to: the URL arguments' seeds and a digest of
        each seed file's bytes (not its seeds: they are not all read before the crawl). A URL's
        password is no part of it: the state is written down, and it is sent, not kept."""
        urls = [wire_url(url) for arg in self.args if arg not in self.files
                for url in [_seed(arg, "argument")[0]] if url is not None]
        digests = []
        for path in self.files:
            h = hashlib.sha256()
            with open(path, "rb") as f:
                while block := f.read(1 << 20):
                    h.update(block)
            digests.append(f"seed file sha256:{h.hexdigest()}")
        return sorted(set(urls)) + digests


#: Seeds put in ToDo and not taken yet, at most (the feeder waits for room): ToDo keeps every
#: waiting URL in memory (~200 bytes each), and a million seeds put at once held 700 MB.
LEAD = 50_000


class SeedFeed:
    """ToDo as the workers see it while a thread still reads seeds into it: the feeder counts as
    a busy worker. ToDo's end rule (empty and nobody busy) would end the crawl the moment its
    workers caught up with the feed; so a ``take`` that finds the crawl over while the feed
    goes on waits for the next chunk (:meth:`fed`) or the feed's end (:meth:`finish`).

    The feeder keeps at most ``lead`` seeds waiting (:meth:`room`): a seed file is never all in
    memory. Seeds read later therefore queue behind the links found meanwhile (per host, first
    in first out), not before them; a ToDo that spills to disk could take them all at once."""

    def __init__(self, todo: PoliteFrontier, lead: int = LEAD) -> None:
        self.todo, self.lead = todo, lead
        lock = threading.Lock()
        self._changed = threading.Condition(lock)  # workers wait here for seeds
        self._room = threading.Condition(lock)  # the feeder waits here for room
        self._chunks = 0  # chunks fed so far: a take that found nothing waits for the next
        # The seeds fed and not taken yet, themselves, not a count: a seed is one of them only
        # the first time it is taken. It may come back to ToDo and be taken again — a retry
        # (attempt + 1), given back unfetched (put_back: the very same item) — and a count
        # lowered at each take of a depth-0 item went below zero, so the feeder read on past
        # its lead (a resumed crawl's seeds, never fed, lowered it too). An item leaves the set
        # at its first take, and none enters it twice: Visited lets a URL through the door once.
        # At most a lead and a chunk of items, most of them the very ones waiting in ToDo.
        self._waiting: set[Item] = set()
        self._finished = False

    def put(self, item: Item) -> None:
        """Queue ``item`` in the ToDo."""
        self.todo.put(item)

    def put_many(self, items: list[Item]) -> int:
        """Queue ``items`` in the ToDo; how many it took."""
        return self.todo.put_many(items)

    def take(self) -> Item | None:
        """The ToDo's next item; None once it is over *and* the feed has ended."""
        while True:
            with self._changed:
                chunks, finished = self._chunks, self._finished
            item = self.todo.take()
            if item is not None and item.depth == 0 and item.referrer is None:  # maybe a seed
                with self._changed:
                    if item in self._waiting:  # fed, and taken for the first time
                        self._waiting.remove(item)
                        self._room.notify()
            if item is not None or finished or self.todo.stopped:
                return item  # (ToDo stopped by whoever holds it: the crawl is over)
            with self._changed:  # ToDo caught up with the feed: wait for it
                while self._chunks == chunks and not self._finished:
                    self._changed.wait()

    def done(self, item: Item) -> None:
        """The worker that took ``item`` has finished it."""
        self.todo.done(item)

    def stop(self) -> None:
        """Stop the ToDo and the feed: every ``take`` returns None."""
        self.finish()
        self.todo.stop()

    def room(self) -> None:
        """Wait until fewer than ``lead`` seeds wait in ToDo (or the feed has ended)."""
        with self._changed:
            while len(self._waiting) >= self.lead and not self._finished:
                self._room.wait()

    def entering(self, seeds: list[Item]) -> None:
        """``seeds`` are about to be put in the ToDo: counted before, not after (a worker may
        take one the moment it is in, and a seed taken before it was counted stayed counted)."""
        with self._changed:
            self._waiting.update(seeds)

    def fed(self) -> None:
        """A chunk of seeds is in the ToDo: workers that found it empty look again."""
        with self._changed:
            self._chunks += 1
            self._changed.notify_all()

    def finish(self) -> None:
        """No more seeds will come (all read, or the crawl stops)."""
        with self._changed:
            self._finished = True
            self._changed.notify_all()
            self._room.notify_all()

    @property
    def finished(self) -> bool:
        """True once the feed has ended (or the crawl stopped)."""
        return self._finished


def read_seeds(args: Iterable[str]) -> tuple[list[str], list[str]]:
    """Every canonical seed URL of the arguments, at once (a short list: the library's and the
    tests'; a crawl reads :class:`Seeds` lazily), and one message per rejected seed."""
    seeds = Seeds(args)
    urls = list(seeds.head)
    problems = list(seeds.problems)
    for batch in seeds.rest(problems.append):
        urls.extend(batch)
    return list(dict.fromkeys(urls)), problems


# Names that are seed files, not host names, when they do not exist: "seeds.txt", "./s".
_FILE_SUFFIXES = (".txt", ".lst", ".list", ".csv", ".tsv", ".urls", ".seeds", ".json", ".jsonl",
                  ".gz", ".bz2", ".xz")


def _looks_like_a_file(arg: str) -> bool:
    return (arg.startswith(("/", "./", "../", "~")) or os.sep in arg.split("/", 1)[0]
            or arg.lower().endswith(_FILE_SUFFIXES))


def _unreadable(path: str, e: BaseException) -> str:
    if isinstance(e, SeedFileError):
        return str(e)
    reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e) or type(e).__name__
    return f"{path}: cannot read seed file: {reason}"


# -- what a file holds ---------------------------------------------------------------------------

_COMPRESSED: dict[bytes, tuple[str, Callable[[str], IO[bytes]]]] = {
    b"\x1f\x8b": ("gzip", lambda p: gzip.open(p, "rb")),
    b"BZh": ("bzip2", lambda p: bz2.open(p, "rb")),
    b"\xfd7zXZ\x00": ("xz", lambda p: lzma.open(p, "rb")),
}
_REFUSED = {b"PK\x03\x04": "a zip archive", b"\x28\xb5\x2f\xfd": "zstd-compressed",
            b"7z\xbc\xaf\x27\x1c": "a 7z archive"}
# Longest first: UTF-32's little-endian mark begins with UTF-16's.
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def _raw_lines(path: str) -> Iterator[bytes | str]:
    """The lines of ``path`` as bytes (UTF-8 expected), or as text when a byte-order mark said
    UTF-16/32; decompressed if it is gzip, bzip2 or xz. Raises :class:`SeedFileError` for
    binary data, before any line."""
    with open(path, "rb") as f:
        start = f.read(8192)
    opener: Callable[[str], IO[bytes]] = lambda p: open(p, "rb")  # noqa: E731
    for magic, (name, decompress) in _COMPRESSED.items():
        if start.startswith(magic):
            opener = decompress
            with decompress(path) as f:
                try:
                    start = f.read(8192)
                except _READ_ERRORS as e:
                    raise SeedFileError(f"{path}: a {name} file that cannot be read ({e})"
                                        ) from None
            break
    for magic, what in _REFUSED.items():
        if start.startswith(magic):
            raise SeedFileError(f"{path}: is {what}, not a text file of URLs; extract it first")
    for bom, encoding in _BOMS:
        if start.startswith(bom):
            with opener(path) as raw, io.TextIOWrapper(
                    raw, encoding=encoding, errors="surrogatepass", newline=None) as text:
                yield from text
            return
    if b"\x00" in start:
        odd = start[1::2].count(0) > len(start) // 4 or start[0::2].count(0) > len(start) // 4
        raise SeedFileError(
            f"{path}: looks like UTF-16 without a byte-order mark; save it as UTF-8" if odd else
            f"{path}: holds binary data (a NUL byte), not a text file of URLs")
    with opener(path) as f:
        yield from f


def _texts(path: str) -> Iterator[str]:
    """The seed texts of ``path``: each line's, comments and blank lines left out, undecodable
    lines too (what :func:`_seed_lines` reports)."""
    for _, text, _ in _numbered(path):
        if text is not None:
            yield text


def _numbered(path: str) -> Iterator[tuple[int, str | None, str]]:
    """(line number, the seed text or None, why not) for each line holding a seed."""
    for number, line in enumerate(_raw_lines(path), 1):
        if isinstance(line, bytes):
            if number == 1 and line.startswith(codecs.BOM_UTF8):
                line = line[3:]  # Windows editors write one; it is not part of line 1
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as e:
                if not line.split(b" #", 1)[0].strip() or line.lstrip().startswith(b"#"):
                    continue  # a comment in another encoding is still a comment
                yield number, None, (f"{path}:{number}: not UTF-8 text (byte "
                                     f"\\x{line[e.start]:02x} at column {e.start + 1}); skipped")
                continue
        elif number == 1:
            line = line.removeprefix("\ufeff")
        # A comment is a whole line, or the rest of a line after " #"; a "#" inside a URL is
        # its fragment, not a comment.
        text = line.split(" #", 1)[0].strip()
        if text and not text.startswith("#"):
            yield number, text, ""


def _seed_lines(path: str) -> Iterator[tuple[str | None, str]]:
    """(canonical URL, "") or (None, the message) for each seed line of ``path``."""
    for number, text, why in _numbered(path):
        yield (None, why) if text is None else _seed(text, f"{path}:{number}")


def _seed(text: str, where: str) -> tuple[str | None, str]:
    """(the canonical URL, "") for one seed, or (None, the message naming ``where``)."""
    if (bad := _SURROGATE.search(text)) is not None:
        code = ord(bad[0])
        what = (f"byte \\x{code - 0xDC00:02x} is not UTF-8" if 0xDC80 <= code <= 0xDCFF else
                f"a lone surrogate \\u{code:04x}")
        return None, (f"{where}: {shown(redact(text, typed=True))} "
                      f"is not a valid http(s) URL ({what}); skipped")
    url, why = canonical(text)
    if url is not None:
        return url, ""
    text = redact(text, typed=True)  # a password stays out of the message and of its hint
    if hint := _scheme_hint(text):  # "localhost:8001" reads as the scheme "localhost:"
        why = f"no scheme; write {hint}"
    return None, f"{where}: {shown(text)} is not a valid http(s) URL ({why}); skipped"


# A URL written without its scheme: a host (a name, an IPv4 address, an IPv6 one in brackets),
# maybe a port, then a path, a query or nothing. The parser reads "localhost:8001/" as the
# scheme "localhost:" (so "not http(s)"), and "127.0.0.1:8001" as no scheme at all.
_SCHEMELESS = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[^\s/?#:\[\]@\\]+)(?::(\d{1,5}))?(?=[/?#]|$)")
_LOCAL = re.compile(r"(?i)localhost|.*\.localhost|127\.[\d.]+|\[::1\]")


def _scheme_hint(text: str) -> str:
    """The URL to write for a seed that is one without its scheme (``localhost:8001/``,
    ``example.org``, ``[::1]:8080``), else "": http for loopback or a port other than 443 (a
    local server), https for a name alone; a bare word (``foo``) is no host to guess."""
    if (match := _SCHEMELESS.match(text)) is None:
        return ""
    host, port = match[1], match[2]
    local = _LOCAL.fullmatch(host) is not None
    if port is None and not local and "." not in host and not host.startswith("["):
        return ""
    url = f"{'https' if port in (None, '443') and not local else 'http'}://{text}"
    return url if canonical(url)[0] is not None else ""


_SURROGATE = re.compile("[\ud800-\udfff]")
# scheme://authority, when the authority is plain (no user, no space): then the origin is the
# parser's answer for "scheme://authority/", the same for every URL of that authority.
_AUTHORITY = re.compile(r"(?i:https?)://[^/?#\\@\s]*(?=[/?#\\]|$)")


def _origin(text: str, known: dict[str, str | None]) -> str | None:
    if (plain := _AUTHORITY.match(text)) is None or _SURROGATE.search(text):
        url = None if _SURROGATE.search(text) else canonical(text)[0]
        return origin_of(url) if url is not None else None
    key = plain[0]
    if key not in known:
        url = canonical(key + "/")[0]
        known[key] = origin_of(url) if url is not None else None
    return known[key]
