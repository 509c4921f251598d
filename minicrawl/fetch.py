"""Fetching one URL: one HTTP request, no redirect following, a bounded body.

Each worker owns one :class:`Fetcher`: one requests ``HTTPAdapter`` (requests' transport, with
its connection pool), so connections are kept alive per worker and never shared between threads.
A ``Session`` would add nothing a crawler wants and cost a third of the time of a request:
redirects are *not* followed here (the crawler offers each redirect target to Visited first, so
a redirect to a page already seen is not fetched twice), no proxy or netrc settings come from
the environment (fetching is the crawler's job), and no cookies are kept: every worker fetches a
URL the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import requests
import urllib3

from minicrawl.options import Options

CHUNK = 64 * 1024
HTTP_VERSIONS = {9: "HTTP/0.9", 10: "HTTP/1.0", 11: "HTTP/1.1", 20: "HTTP/2"}  # urllib3's codes


@dataclass
class Response:
    """The outcome of one request. ``error`` is None on success (whatever the status)."""

    url: str
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    elapsed_ms: float = 0.0
    error: str | None = None
    transient: bool = False  # the error was the network's (reset, timeout): worth a retry
    # The exchange as on the wire, for the WARC archive (minicrawl.warc). Filled whenever the
    # request was sent / the status line came back; empty otherwise.
    request_line: str = ""  # "GET /path?query HTTP/1.1"
    request_headers: list[tuple[str, str]] = field(default_factory=list)  # as sent, with Host
    http_version: str = ""  # of the answer: "HTTP/1.1"
    reason: str = ""  # the reason phrase: "OK"
    raw_headers: list[tuple[str, str]] = field(default_factory=list)  # as received: case,
    # order and repeated names kept (``headers`` above is lower-cased and merged)

    @property
    def content_type(self) -> str | None:
        return self.headers.get("content-type")

    @property
    def location(self) -> str | None:
        """The redirect target as sent, if this is a redirect."""
        if self.status in (301, 302, 303, 307, 308):
            return self.headers.get("location")
        return None


class Fetcher:
    """Fetches URLs for one worker over its own keep-alive connections."""

    def __init__(self, options: Options,
                 on_exchange: Callable[[Response], None] | None = None) -> None:
        self.options = options
        self.on_exchange = on_exchange  # hears every finished fetch (the WARC archive)
        self.adapter = requests.adapters.HTTPAdapter(max_retries=0)  # retry.py decides retries
        self.headers = requests.utils.default_headers()  # Accept-Encoding, Accept, keep-alive
        self.headers["User-Agent"] = options.user_agent

    def fetch(self, url: str, headers: dict[str, str] | None = None,
              max_bytes: int | None = None) -> Response:
        """GET ``url`` once. Network failures come back as ``Response.error``, never raised.

        ``max_bytes`` lowers the body cap for this request (robots.txt is read up to 500 KiB).
        """
        opts = self.options
        started = time.monotonic()
        result = Response(url)
        try:
            request = requests.PreparedRequest()
            request.prepare("GET", url, {**self.headers, **headers} if headers else self.headers)
            # http.client sends Host first, then these headers in this order
            result.request_line = f"GET {request.path_url} HTTP/1.1"
            result.request_headers = [("Host", urlsplit(request.url).netloc.rpartition("@")[2]),
                                      *request.headers.items()]
            with self.adapter.send(request, stream=True,
                                   timeout=(opts.timeout, opts.timeout)) as resp:
                result.status = resp.status_code
                result.headers = {k.lower(): v for k, v in resp.headers.items()}
                result.http_version = HTTP_VERSIONS.get(resp.raw.version, "HTTP/1.1")
                result.reason = resp.reason or ""
                result.raw_headers = list(resp.raw.headers.items())
                result.body, result.error = self._read_body(resp, started, max_bytes)
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError,
                ValueError) as e:  # the last three are raised mid-body
            result.error = describe_error(e)
            result.transient = is_transient(e)
        result.elapsed_ms = round((time.monotonic() - started) * 1000, 1)
        if self.on_exchange is not None:
            self.on_exchange(result)
        return result

    def _read_body(self, resp: requests.Response, started: float,
                   max_bytes: int | None = None) -> tuple[bytes, str | None]:
        """The decoded body, cut at ``max_bytes``; the cap is checked per decoded chunk, so a
        compressed bomb is stopped after one chunk of output, not after inflating it all."""
        limit = self.options.max_bytes if max_bytes is None else max_bytes
        declared = resp.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:  # too big before decoding: don't read
            return b"", f"body larger than max_bytes ({limit}): Content-Length {declared}"
        deadline = started + 3 * self.options.timeout  # a slow drip must still end
        chunks: list[bytes] = []
        size = 0
        # read1, not stream(): stream() blocks until a whole CHUNK has arrived, so a body
        # dripping one byte per second would never reach the deadline check. read1 returns
        # after one socket read (each bounded by the read timeout), and urllib3 2.x inflates
        # at most CHUNK bytes of a compressed body per call.
        while chunk := resp.raw.read1(CHUNK, decode_content=True):
            size += len(chunk)
            if size > limit:
                chunks.append(chunk[: limit - (size - len(chunk))])
                return b"".join(chunks), f"body larger than max_bytes ({limit})"
            chunks.append(chunk)
            if time.monotonic() > deadline:
                return b"".join(chunks), "body too slow (deadline exceeded)"
        return b"".join(chunks), None

    def close(self) -> None:
        self.adapter.close()


def describe_error(e: BaseException) -> str:
    """A short, stable description of a fetch failure for records and stats."""
    kind = type(e).__name__
    text = str(e)
    if isinstance(e, requests.ConnectionError) and "timed out" in text.lower():
        kind = "ConnectTimeout"
    return f"{kind}: {text[:200]}" if text else kind


def is_transient(e: BaseException) -> bool:
    """True for failures a later attempt may not meet: refused or reset connections, timeouts,
    bodies cut short. Not for bad certificates, bad URLs or undecodable content."""
    if isinstance(e, requests.RequestException):  # before OSError: they all subclass it
        return (isinstance(e, requests.ConnectionError | requests.Timeout
                           | requests.exceptions.ChunkedEncodingError)
                and not isinstance(e, requests.exceptions.SSLError))
    if isinstance(e, urllib3.exceptions.HTTPError):
        return isinstance(e, urllib3.exceptions.ProtocolError | urllib3.exceptions.TimeoutError
                          | urllib3.exceptions.IncompleteRead)
    return isinstance(e, OSError)


def error_kind(error: str) -> str:
    """The counter name part of an error message: its exception class, or its words before any
    detail ("HTTP 503 (gave up after 3 attempts)" → "HTTP 503")."""
    return error.split(":", 1)[0].split(" (", 1)[0]
