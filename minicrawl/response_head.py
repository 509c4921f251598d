"""Reading an HTTP response's head (status line and header fields) without the email package.

``http.client`` hands every response's header block to ``email.parser``, a general MIME parser:
~30 µs per response alone, and on a fast site with many workers the largest single piece of
the fetch's Python (py-spy ``--gil``: 11 % of the GIL's time at 16 workers on the Java docs).
A header block of plain ``name: value`` lines — nearly every block a server sends — is read
here in one pass into :class:`Fields`, with the values ``email.parser`` would give
(:func:`parse_fields`): the part of :class:`http.client.HTTPMessage` that ``http.client`` and the
fetcher read (``get``, ``get_all``, ``items``), without the email policy every read of an
``HTTPMessage`` goes through (a tenth of a request's CPU). Anything else (folded lines, a line
without a colon, a name with odd characters) goes to ``email.parser`` as before, so odd servers
are read exactly as ``http.client`` reads them.

:class:`HeadResponse` is ``http.client``'s response with that reader; :mod:`minicrawl.fetch`'s
connections use it. How the body is delimited (chunked, Content-Length, until close) is decided
from the fields as ``http.client`` decides it (RFC 9112 §6.3).
"""

from __future__ import annotations

import email.parser
import http.client
import re
from collections.abc import Iterator
from typing import BinaryIO

# http.client's own bounds on a header block, kept.
MAX_LINE = 65536
MAX_FIELDS = 100

# Header lines email.parser reads as plain "name: value": a name of visible characters but ":",
# the value on the same line. (Folded lines start with a blank, and fall outside.)
_PLAIN_FIELDS = re.compile(r"(?:[!-9;-~]+:[^\r\n]*\r?\n)*")


def read_header_lines(fp: BinaryIO) -> list[bytes]:
    """The lines of a header block up to (not including) the empty line that ends it."""
    lines: list[bytes] = []
    while True:
        line = fp.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise http.client.LineTooLong("header line")
        if line in (b"\r\n", b"\n", b""):
            return lines
        lines.append(line)
        if len(lines) > MAX_FIELDS:
            raise http.client.HTTPException(f"got more than {MAX_FIELDS} headers")


class Fields:
    """The fields of a plain header block, read as :class:`http.client.HTTPMessage` reads:
    names case-insensitive, ``get`` the first value of a name, ``items`` all in order."""

    __slots__ = ("_first", "_items")

    def __init__(self, items: list[tuple[str, str]]) -> None:
        self._items = items
        self._first: dict[str, str] = {}
        for name, value in items:
            self._first.setdefault(name.lower(), value)

    def get(self, name: str, failobj: str | None = None) -> str | None:
        return self._first.get(name.lower(), failobj)

    def get_all(self, name: str, failobj: list[str] | None = None) -> list[str] | None:
        name = name.lower()
        return [value for key, value in self._items if key.lower() == name] or failobj

    def items(self) -> list[tuple[str, str]]:
        return list(self._items)

    def keys(self) -> list[str]:
        return [name for name, _ in self._items]

    def values(self) -> list[str]:
        return [value for _, value in self._items]

    def __getitem__(self, name: str) -> str | None:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._first

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self._items)


def parse_fields(lines: list[bytes]) -> Fields | http.client.HTTPMessage:
    """The header fields of ``lines``, as ``http.client.parse_headers`` would give them."""
    text = b"".join(lines).decode("iso-8859-1")
    if not _PLAIN_FIELDS.fullmatch(text):
        return email.parser.Parser(_class=http.client.HTTPMessage).parsestr(text)
    items = []
    for line in text.split("\n")[:-1]:  # each line ends with "\n": the last piece is empty
        name, _, value = line.partition(":")
        items.append((name, value.lstrip(" \t").rstrip("\r")))
    return Fields(items)


class HeadResponse(http.client.HTTPResponse):
    """``http.client``'s response, its header block read by :func:`parse_fields`."""

    def begin(self) -> None:
        if self.headers is not None:  # begun already
            return
        version, status, reason = self._read_status()
        while status == http.client.CONTINUE:  # interim 100 answers: their heads are skipped
            read_header_lines(self.fp)
            version, status, reason = self._read_status()
        self.code = self.status = status
        self.reason = reason.strip()
        if version in ("HTTP/1.0", "HTTP/0.9"):
            self.version = 10
        elif version.startswith("HTTP/1."):
            self.version = 11
        else:
            raise http.client.UnknownProtocol(version)
        self.headers = self.msg = parse_fields(read_header_lines(self.fp))
        self._frame_body(status)

    def _frame_body(self, status: int) -> None:
        """Where the body ends: chunked, a Content-Length, or the connection's close."""
        coding = self.headers.get("transfer-encoding")
        self.chunked = bool(coding) and coding.lower() == "chunked"
        if self.chunked:
            self.chunk_left = None
        self.will_close = self._check_close()
        length = self.headers.get("content-length")
        self.length = None
        if length and not self.chunked:
            try:
                self.length = int(length)
            except ValueError:
                pass
            else:
                if self.length < 0:  # nonsense: read until close instead
                    self.length = None
        if status in (http.client.NO_CONTENT, http.client.NOT_MODIFIED) \
                or 100 <= status < 200 or self._method == "HEAD":
            self.length = 0  # never a body
        if not self.will_close and not self.chunked and self.length is None:
            self.will_close = True  # kept alive but no way to tell where the body ends
