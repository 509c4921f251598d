"""WARC records for one fetch, built with ``warcio`` (each record its own gzip member).

What each record holds, and what is reconstructed (the README's WARC section says the same):

* ``request``: the request line and headers exactly as sent (the fetcher builds them from the
  request ``requests`` prepared, the way urllib3 sends them: ``Host`` first, then its headers in
  order), but ``Authorization`` and ``Proxy-Authorization``: credentials are never archived.
  Every record's ``WARC-Target-URI`` is the URL as requested on the wire, without a seed's
  ``user:password@``.
* ``response``: the status line (HTTP version and reason phrase as received) and the headers as
  received (their case and order, a repeated header on each of its lines, grouped under its
  first spelling by urllib3), then the body. The
  fetcher gets the body *after* the transfer coding (chunked) and the content coding (gzip,
  deflate) are undone, so when either was used the recorded headers say so consistently:
  ``Transfer-Encoding`` and ``Content-Encoding`` are dropped,
  ``Content-Length`` gives the recorded body's length, and the headers as received are kept as
  ``X-Minicrawl-Original-Transfer-Encoding`` / ``-Content-Encoding`` / ``-Content-Length``.
  A body the fetcher cut short is marked ``WARC-Truncated`` (``length``, ``time`` or
  ``disconnect``).
* ``revisit``: for a 304 (profile ``server-not-modified``) and for a page recorded as a
  duplicate of another (``identical-payload-digest``, pointing at the first): the status line
  and headers only, no body.

The request record names its response (or revisit) in ``WARC-Concurrent-To``; every record names
its file's ``warcinfo`` in ``WARC-Warcinfo-ID``.
"""

from __future__ import annotations

import base64
import hashlib
import io
import socket
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from typing import TypeAlias
from urllib.parse import urlsplit

from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from minicrawl.core.interfaces import Response
from minicrawl.http.answer import NOT_UNDONE, undone
from minicrawl.http.fetch import Wire, host_header
from minicrawl.redact import wire_url
from minicrawl.version import __version__

WARC_VERSION = "WARC/1.1"
GZIP_LEVEL = 2  # zlib: a quarter of the CPU of its default (6) for files ~15 % larger
PROFILE = "http://netpreserve.org/warc/1.1/revisit/"
NOT_MODIFIED = PROFILE + "server-not-modified"
IDENTICAL = PROFILE + "identical-payload-digest"
ORIGINAL = "X-Minicrawl-Original-"
CREDENTIALS = frozenset({"authorization", "proxy-authorization"})  # left out of request records

#: warcio's header filter: given a (name, value) header, the header to write instead, or None
#: to leave it out.
HeaderFilter: TypeAlias = Callable[[tuple[str, str]], tuple[str, str] | None]


@dataclass(frozen=True)
class Exchange:
    """One fetch to archive: the answer, its request and status line as on the wire (None: not
    known, rebuilt from the URL and status), when it started, and how."""

    response: Response
    wire: Wire | None
    date: str  # WARC-Date: when the request was sent
    response_id: str  # WARC-Record-ID of its response or revisit record, chosen at fetch time
    refers_to: tuple[str, str | None, str | None] | None = None  # a duplicate's first copy:
    # (its response record's URI, WARC-Date, WARC-Record-ID), the last two when known


def record_id() -> str:
    """A new WARC-Record-ID: ``<urn:uuid:…>`` with a random UUID."""
    return f"<urn:uuid:{uuid.uuid4()}>"


def warc_date(timestamp: float) -> str:
    """A WARC/1.1 date with microseconds, UTC."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def payload_digest(body: bytes) -> str:
    """``sha1:`` and the base32 SHA-1 of ``body`` (WARC-Payload-Digest, WARC-Block-Digest)."""
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")


class _WireHeaders(StatusAndHeaders):
    """Headers written back as the Latin-1 bytes they were decoded from (warcio would
    percent-encode any non-ASCII value, which is not what was sent)."""

    def compute_headers_buffer(self, header_filter: HeaderFilter | None = None) -> None:
        """Set ``headers_buff``: the status line and headers (through ``header_filter``) as
        Latin-1 bytes, ending with the blank line."""
        self.headers_buff = self.to_str(header_filter).encode("latin-1", "replace") + b"\r\n"


class RecordMaker:
    """Builds the gzip-compressed bytes of records, for one file's ``warcinfo``."""

    def __init__(self) -> None:
        self._buffer = io.BytesIO()
        # gzip=False: each record is compressed here, as one member, at GZIP_LEVEL
        self._writer = WARCWriter(self._buffer, gzip=False, warc_version=WARC_VERSION)

    def warcinfo(self, filename: str, fields: dict[str, str]) -> tuple[str, bytes]:
        """(its WARC-Record-ID, the record) for a new file named ``filename``."""
        info = {"software": f"minicrawl/{__version__}", "format": "WARC File Format 1.1",
                "conformsTo": "http://iipc.github.io/warc-specifications/specifications/"
                              "warc-format/warc-1.1/",
                "hostname": socket.gethostname(), **fields}
        record = self._writer.create_warcinfo_record(filename, info)
        return record.rec_headers.get_header("WARC-Record-ID"), self._compress([record])

    def exchange(self, exchange: Exchange, warcinfo_id: str) -> bytes:
        """The request record and the response (or revisit) record of one fetch."""
        response, wire = exchange.response, exchange.wire
        uri = wire_url(response.url)  # as on the wire: credentials are never archived
        common = {"WARC-Date": exchange.date, "WARC-Warcinfo-ID": warcinfo_id}
        headers, body, truncated = _recorded(response)
        version, reason = (wire.http_version, wire.reason) if wire is not None else ("", "")
        status = _WireHeaders(f"{response.status} {reason or _phrase(response.status)}".rstrip(),
                              headers, protocol=version or "HTTP/1.1")
        fields = {**common, "WARC-Record-ID": exchange.response_id}
        if response.status == 304 or exchange.refers_to is not None:
            if response.status == 304:  # no payload came back: say what was revisited
                fields.update({"WARC-Profile": NOT_MODIFIED,
                               "WARC-Refers-To-Target-URI": uri})
            else:
                first, date, first_id = exchange.refers_to  # type: ignore[misc]
                fields.update({"WARC-Profile": IDENTICAL,
                               "WARC-Refers-To-Target-URI": wire_url(first),
                               "WARC-Payload-Digest": payload_digest(body)})
                if date:
                    fields["WARC-Refers-To-Date"] = date
                if first_id:
                    fields["WARC-Refers-To"] = first_id
            main = self._writer.create_warc_record(uri, "revisit", http_headers=status,
                                                   warc_headers_dict=fields)
        else:
            if truncated:
                fields["WARC-Truncated"] = truncated
            # The digests in one call each: warcio would hash 16 KiB at a time, and each piece
            # lets the GIL go to the workers and waits to get it back (~5 ms under load).
            status.compute_headers_buffer()
            fields["WARC-Payload-Digest"] = payload_digest(body)
            fields["WARC-Block-Digest"] = payload_digest(status.headers_buff + body)
            main = self._writer.create_warc_record(uri, "response",
                                                   payload=io.BytesIO(body), length=len(body),
                                                   http_headers=status,
                                                   warc_headers_dict=fields)
        request = self._writer.create_warc_record(
            uri, "request",
            http_headers=_WireHeaders(*_request(response.url, wire), is_http_request=True),
            warc_headers_dict={**common, "WARC-Concurrent-To": exchange.response_id})
        return self._compress([main, request])

    def _compress(self, records: list[ArcWarcRecord]) -> bytes:
        """``records`` written one after the other, each as a gzip member of its own."""
        out = []
        for record in records:
            self._buffer.seek(0)
            self._buffer.truncate()
            self._writer.write_record(record)
            gz = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
            out.append(gz.compress(self._buffer.getvalue()) + gz.flush())
        return b"".join(out)


def _request(url: str, wire: Wire | None) -> tuple[str, list[tuple[str, str]]]:
    """The request line and headers as sent, but the credentials (``Authorization``,
    ``Proxy-Authorization``: sent as the server asked, never written down); rebuilt from the
    URL (a GET with its Host) if the fetcher did not say."""
    if wire is not None:
        return wire.request_line, [(name, value) for name, value in wire.request_headers
                                   if name.lower() not in CREDENTIALS]
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return f"GET {target} HTTP/1.1", [("Host", host_header(url))]


def _phrase(status: int | None) -> str:
    try:
        return HTTPStatus(status).phrase  # type: ignore[arg-type]
    except ValueError:
        return ""


def _recorded(response: Response) -> tuple[list[tuple[str, str]], bytes, str | None]:
    """(headers, body, WARC-Truncated value) as the response record holds them: see the module
    docstring for what is rewritten when the fetcher undid a coding."""
    headers = list(response.headers.items())  # as received: each field line, in order
    body = response.body
    lower = {name.lower(): value for name, value in headers}
    decoded = undone(lower.get("content-encoding", ""))
    chunked = "chunked" in lower.get("transfer-encoding", "").lower()
    if decoded or chunked:
        drop = {"transfer-encoding", "content-length"}
        if decoded:
            drop.add("content-encoding")
        kept = [(k, v) for k, v in headers if k.lower() not in drop]
        original = [(ORIGINAL + k, v) for k, v in headers if k.lower() in drop]
        headers = [*kept, ("Content-Length", str(len(body))), *original]
    truncated = None
    if response.error and NOT_UNDONE not in response.error:  # a fetch that got its
        # status line but not its whole body (a coding not undone: all of it, as received)
        error = response.error
        truncated = ("length" if "larger than max_bytes" in error
                     else "time" if "too slow" in error else "disconnect")
    return headers, body, truncated
