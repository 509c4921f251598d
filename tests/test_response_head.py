"""A response's head read without email.parser: the same fields http.client gives, on every
kind of header block, and bodies delimited as before (against a raw socket server)."""

from __future__ import annotations

import email.parser
import http.client
import io
import socket
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rawserver import RawSocketServer, read_request

from minicrawl.fetch import Fetcher
from minicrawl.options import Options
from minicrawl.response_head import parse_fields, read_header_lines


def stdlib_fields(block: bytes) -> list[tuple[str, str]]:
    return http.client.parse_headers(io.BytesIO(block + b"\r\n")).items()


def our_fields(block: bytes) -> list[tuple[str, str]]:
    return parse_fields(read_header_lines(io.BytesIO(block + b"\r\n"))).items()


NAMES = st.sampled_from(["Content-Type", "ETag", "X-A", "set-cookie", "Bad Name", "", "From",
                         "Ä-Latin1", "A\tB", "x:y"])
VALUES = st.text(alphabet=st.sampled_from(list(" \tab;=/,\"\x85\xe9\x0b\r:")), max_size=12)
LINE_ENDS = st.sampled_from(["\r\n", "\n"])


@st.composite
def header_blocks(draw) -> bytes:
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["field", "field", "field", "folded", "no colon"]))
        value = draw(VALUES)
        if kind == "field":
            line = f"{draw(NAMES)}:{value}"
        elif kind == "folded":
            line = draw(st.sampled_from([" ", "\t"])) + value
        else:
            line = "not a field " + value.replace(":", "")
        lines.append(line + draw(LINE_ENDS))
    return "".join(lines).encode("iso-8859-1")


@settings(max_examples=1500, deadline=None)
@given(header_blocks())
def test_the_fields_are_those_http_client_reads_from_any_block(block):
    assert our_fields(block) == stdlib_fields(block)


def test_fields_answer_every_question_as_http_client_s_message_does():
    block = (b"Set-Cookie: a=1\r\nContent-Type: text/html\r\nset-cookie: b=2\r\n"
             b"X-Empty:\r\nSET-COOKIE: c=3\r\n")
    ours = parse_fields(read_header_lines(io.BytesIO(block + b"\r\n")))
    theirs = http.client.parse_headers(io.BytesIO(block + b"\r\n"))
    assert not isinstance(ours, http.client.HTTPMessage)  # the plain block's own reader
    for name in ("set-cookie", "SET-COOKIE", "Content-Type", "x-empty", "missing"):
        assert ours.get(name) == theirs.get(name)
        assert ours.get(name, "d") == theirs.get(name, "d")
        assert ours.get(name, failobj="d") == theirs.get(name, failobj="d")
        assert ours.get_all(name) == theirs.get_all(name)
        assert ours.get_all(name, []) == theirs.get_all(name, [])
        assert ours[name] == theirs[name]
        assert (name in ours) == (name in theirs)
    assert ours.items() == theirs.items() and ours.keys() == theirs.keys()
    assert ours.values() == theirs.values() and list(ours) == list(theirs)
    assert len(ours) == len(theirs)


@pytest.mark.parametrize("block, fields", [
    (b"Content-Type: text/html\r\nETag:  \"x\" \r\n", [("Content-Type", "text/html"),
                                                      ("ETag", '"x" ')]),
    (b"A:\r\nB: 1\n", [("A", ""), ("B", "1")]),
    (b"X-Long: one\r\n two\r\n", [("X-Long", "one\r\n two")]),  # folded: as email reads it
])
def test_known_blocks(block, fields):
    assert our_fields(block) == fields == stdlib_fields(block)


def test_a_plain_block_is_read_without_email_parser(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("email.parser used")

    monkeypatch.setattr(email.parser.Parser, "parsestr", refuse)
    assert our_fields(b"Server: x\r\nContent-Length: 3\r\n") == [("Server", "x"),
                                                                  ("Content-Length", "3")]
    with pytest.raises(AssertionError):  # an odd block still goes the old way
        our_fields(b"Server: x\r\n folded\r\n")


def test_too_many_or_too_long_lines_are_refused_as_http_client_refuses_them():
    with pytest.raises(http.client.HTTPException):
        read_header_lines(io.BytesIO(b"A: 1\r\n" * 101 + b"\r\n"))
    with pytest.raises(http.client.LineTooLong):
        read_header_lines(io.BytesIO(b"A: " + b"x" * 70000 + b"\r\n\r\n"))


# -- against a raw server: what a worker receives -------------------------------------------------

ANSWERS = {
    # two answers on one connection: the first has no body (304), the second is chunked
    "/304": b"HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\n\r\n",
    "/chunked": (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n"
                 b"\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"),
    "/continue": (b"HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\n"
                  b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Final: yes\r\n\r\nok"),
    "/folded": (b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nX-Note: one\r\n two\r\n\r\nbody"),
    "/http10": b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the close",
    "/negative": b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nread to the close",
}


class RawServer(RawSocketServer):
    """Answers each request with the bytes in ANSWERS for its path; keeps connections alive
    unless the answer is read until the close."""

    def serve(self, conn: socket.socket) -> None:
        pending = b""
        while (request := read_request(conn, pending)) is not None:
            path, pending = request
            conn.sendall(ANSWERS[path])
            if path in ("/http10", "/negative"):
                return  # the body ends with the connection


@pytest.fixture
def raw_server() -> Iterator[RawServer]:
    server = RawServer()
    yield server
    server.close()


def test_bodies_end_where_the_head_says_and_connections_are_reused(raw_server, monkeypatch):
    parsed_by_email: list[str] = []
    parsestr = email.parser.Parser.parsestr

    def counted(self, text, headersonly=False):
        parsed_by_email.append(text)
        return parsestr(self, text, headersonly)

    monkeypatch.setattr(email.parser.Parser, "parsestr", counted)
    fetcher = Fetcher(Options(timeout=5))
    try:
        not_modified = fetcher.fetch(raw_server.url("/304"))
        chunked = fetcher.fetch(raw_server.url("/chunked"))
        continued = fetcher.fetch(raw_server.url("/continue"))
        folded = fetcher.fetch(raw_server.url("/folded"))
        assert raw_server.connections == 1  # no body after the 304; the chunks' end was found
        http10 = fetcher.fetch(raw_server.url("/http10"))
        negative = fetcher.fetch(raw_server.url("/negative"))
    finally:
        fetcher.close()
    assert (not_modified.status, not_modified.body, not_modified.headers["etag"]) == \
        (304, b"", '"v1"')
    assert (chunked.status, chunked.body, chunked.error) == (200, b"hello world", None)
    assert (continued.status, continued.body, continued.headers.get("x-final")) == \
        (200, b"ok", "yes")
    assert "x-interim" not in continued.headers  # the interim answer's fields are not kept
    assert (folded.body, folded.headers["x-note"]) == (b"body", "one two")  # unfolded
    assert (http10.status, http10.body, http10.error) == (200, b"until the close", None)
    assert (negative.body, negative.error) == (b"read to the close", None)
    assert parsed_by_email == ["Content-Length: 4\r\nX-Note: one\r\n two\r\n"]  # only the odd
