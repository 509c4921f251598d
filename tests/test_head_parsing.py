"""run.py's response heads are parsed by :func:`minicrawl.http.transport.parse_head`, not by
``http.client.parse_headers`` (issue 49: ~50 µs a response in the ``email`` package). These
tests hold the two equal — the same message, the same error, the same bytes left to read — on a
corpus of heads and on many generated ones, then through run.py's fetcher against real servers
beside a plain ``requests`` session (whose heads ``http.client`` parses)."""

from __future__ import annotations

import email.errors
import email.message
import email.parser
import http.client
import io
import random
import socket
from collections.abc import Iterator

import pytest
import requests
from rawserver import RawSocketServer, read_request
from urllib3.exceptions import HeaderParsingError
from urllib3.util.response import assert_header_parsing

from minicrawl.http.fetch import Fetcher
from minicrawl.http.transport import parse_head
from minicrawl.options import Options

BODY = b"the body, which neither parser may touch"

# Heads servers send: parse_head builds these itself (the email parser is not asked)
PLAIN = {
    "nginx": b"Server: nginx/1.22.1\r\nDate: Sat, 28 Nov 2026 16:41:14 GMT\r\n"
             b"Content-Type: text/html\r\nContent-Length: 53\r\nConnection: keep-alive\r\n"
             b'ETag: "6768a1b0-35"\r\nAccept-Ranges: bytes\r\n\r\n',
    "no fields": b"\r\n",
    "bare LF": b"Content-Type: text/html\nContent-Length: 3\n\n",
    "mixed endings": b"A: 1\r\nB: 2\nC: 3\r\n\n",
    "set-cookie repeats": b"Set-Cookie: a=1; Path=/\r\nX: o\r\nset-cookie: b=2\r\n"
                          b"SET-COOKIE: c=3; HttpOnly\r\n\r\n",
    "empty values": b"A:\r\nB: \r\nC:\t \t\r\nD:  x\r\n\r\n",
    "blanks kept after a value": b"A: x  \r\nB: y\t\r\nC: z \t \r\n\r\n",
    "tab after colon": b"A:\tx\r\nB:\t\t y\r\n\r\n",
    "Latin-1 values": b"X-Name: caf\xe9\r\nX-Nbsp: a\xa0b\r\nX-Next-Line: a\x85b\r\n\r\n",
    "characters str.splitlines breaks at": b"A: a\x0bb\x0cc\x1cd\x1de\x1ef\r\n\r\n",
    "NUL and DEL in a value": b"A: a\x00b\x7fc\r\n\r\n",
    "colons in a value": b"Location: http://example.org:8080/a:b\r\nA: ::\r\n\r\n",
    "name of every allowed character": b"!#$%&'*+-.^_`|~09AZaz\"(),/;<=>?@[\\]{}: v\r\n\r\n",
    "a name From": b"From: someone@example.org\r\nFrom:x\r\n\r\n",
    "chunked": b"Transfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n",
    "close": b"Connection: close\r\nContent-Length: 0\r\n\r\n",
    "99 fields (with the empty line, http.client's 100)":
        b"".join(b"X-%d: %d\r\n" % (i, i) for i in range(99)) + b"\r\n",
    "a line of the longest length": b"X: " + b"v" * (65536 - 5) + b"\r\n\r\n",
}

# Heads the email parser reads its own way (folds, colon-less lines, bare CRs, a head cut by
# EOF, multipart and message types…) or http.client refuses: parse_head must give the same
ODD = {
    "obs-fold": b"X-Folded: a\r\n b\r\n\tc\r\nY: d\r\n\r\n",
    "fold of an empty value": b"X:\r\n  b\r\n\r\n",
    "fold first": b" lead: x\r\nA: 1\r\n\r\n",
    "line without a colon": b"A: 1\r\nno colon here\r\nB: 2\r\n\r\n",
    "colon first": b":no name\r\nA: 1\r\n\r\n",
    "blank before colon": b"A : 1\r\nB: 2\r\n\r\n",
    "tab in a name": b"A\tB: 1\r\n\r\n",
    "Latin-1 in a name": b"Caf\xe9: 1\r\nB: 2\r\n\r\n",
    "DEL in a name": b"A\x7f: 1\r\n\r\n",
    "bare CR in a value": b"A: x\rB: y\r\nC: z\r\n\r\n",
    "CR CR LF": b"A: x\r\r\nB: y\r\n\r\n",
    "bare CR line": b"A: x\r\n\r\r\n",
    "From line first": b"From someone Sat Nov 28\r\nA: 1\r\n\r\n",
    "From line between": b"A: 1\r\nFrom x\r\nB: 2\r\n\r\n",
    "From line last": b"A: 1\r\nFrom x\r\n\r\n",
    "ended by EOF after a line": b"A: 1\r\nB: 2\r\n",
    "ended by EOF mid-line": b"A: 1\r\nB: 2",
    "nothing at all": b"",
    "multipart": b"Content-Type: multipart/form-data; boundary=xyz\r\n\r\n",
    "multipart without boundary": b"Content-Type: multipart/mixed\r\n\r\n",
    "multipart in capitals": b"content-type:  MULTIPART/Mixed; boundary=q\r\n\r\n",
    "multipart behind a blank": b"Content-Type: \xa0multipart/mixed; boundary=q\r\n\r\n",
    "message/rfc822": b"Content-Type: message/rfc822\r\nA: 1\r\n\r\n",
    "message/delivery-status": b"Content-Type: message/delivery-status\r\n\r\n",
    "message/http": b"Content-Type: message/http\r\n\r\n",
    "the word in another field": b"X-Message: multipart\r\nContent-Type: text/html\r\n\r\n",
    "second Content-Type multipart": b"Content-Type: text/html\r\n"
                                     b"Content-Type: multipart/mixed; boundary=b\r\n\r\n",
    "100 fields": b"".join(b"X-%d: %d\r\n" % (i, i) for i in range(100)) + b"\r\n",
    "101 fields": b"".join(b"X-%d: %d\r\n" % (i, i) for i in range(101)) + b"\r\n",
    "a line too long": b"A: 1\r\nX: " + b"v" * 65536 + b"\r\n\r\n",
    "a line too long without LF": b"X: " + b"v" * 70000,
}


def model(value: object) -> object:
    """``value`` as what it holds: a message (a message/* head's payload is one, or a list of
    them) as its type and attributes, a defect as its type and arguments."""
    if isinstance(value, email.message.Message):
        return type(value), {key: model(v) for key, v in vars(value).items()}
    if isinstance(value, list):
        return [model(v) for v in value]
    if isinstance(value, email.errors.MessageDefect):
        return type(value), value.args
    return value


def parsed(parse: object, head: bytes) -> tuple[object, ...]:
    """What ``parse`` (parse_headers or parse_head) makes of ``head`` followed by a body: the
    message's every attribute (defects as their type and arguments), what it answers to the
    calls urllib3, requests, http.cookiejar and http.client make, and the bytes left unread; or
    the error raised, as its type and message."""
    fp = io.BufferedReader(io.BytesIO(head + BODY))  # as a socket's makefile("rb") reads
    try:
        message = parse(fp)  # type: ignore[operator]
    except http.client.HTTPException as e:
        return (type(e), str(e), fp.read())
    names = {name.lower() for name in message.keys()} | {"set-cookie", "absent", "x"}
    answers = [(name, message.get(name), message.get_all(name), message.get_all(name, []),
                name in message, message.get(name.upper(), "default")) for name in sorted(names)]
    try:
        assert_header_parsing(message)
        urllib3_says = None
    except HeaderParsingError as e:
        urllib3_says = str(e)
    return (model(message), message.items(), message.keys(), message.values(),
            list(message), answers, urllib3_says, message.is_multipart(),
            message.get_content_type(), message.get_unixfrom(), fp.read())


@pytest.mark.parametrize("head", [*PLAIN.values(), *ODD.values()], ids=[*PLAIN, *ODD])
def test_a_head_parses_as_http_client_parses_it(head: bytes) -> None:
    assert parsed(parse_head, head) == parsed(http.client.parse_headers, head)


@pytest.fixture
def email_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The heads the ``email`` parser is handed from here on (it still parses them)."""
    handed: list[str] = []
    parsestr = email.parser.Parser.parsestr

    def counted(self: email.parser.Parser, text: str, headersonly: bool = False) -> object:
        handed.append(text)
        return parsestr(self, text, headersonly)

    monkeypatch.setattr(email.parser.Parser, "parsestr", counted)
    return handed


@pytest.mark.parametrize("head", PLAIN.values(), ids=PLAIN)
def test_a_plain_head_is_not_handed_to_the_email_parser(head: bytes, email_parses) -> None:
    parse_head(io.BytesIO(head))
    assert email_parses == []


def test_every_odd_head_is_refused_or_handed_to_the_email_parser(email_parses) -> None:
    """An odd head is not built by the lean path, unless refused as http.client refuses it
    (100 and 101 fields with the empty line over its limit of 100 lines, two lines too
    long): so the equality above is the email parser's own for them."""
    refused = 0
    for head in ODD.values():
        try:
            parse_head(io.BytesIO(head))
        except http.client.HTTPException:
            refused += 1
    assert refused == 4 and len(email_parses) == len(ODD) - refused


# Pieces of heads, plain and tricky, for heads made at random
NAMES = [b"A", b"Content-Type", b"content-length", b"Set-Cookie", b"X-\xe9", b"From", b"a b",
         b"", b" A", b"\tB", b"A\x7f", b"Transfer-Encoding", b"From x", b"message"]
VALUES = [b"", b" ", b"v", b" v ", b"\tv\t", b"caf\xe9", b"a\rb", b"a\x85b", b"a\x0bb", b"::",
          b"multipart/mixed; boundary=b", b"text/html", b"chunked", b"a, b", b"\x00", b" \r"]
SEPARATORS = [b":", b": ", b":\t", b" :", b""]
ENDS = [b"\r\n", b"\n", b"\r\n", b"\r\n", b"\r"]


def random_head(rng: random.Random) -> bytes:
    """A head of up to 12 lines, most of them plain fields, some folded or broken, ended as a
    server would end it (or not: cut by EOF)."""
    lines = []
    for _ in range(rng.randrange(13)):
        if rng.random() < 0.8:
            name, value = b"X-%d" % rng.randrange(5), b"v%d" % rng.randrange(5)
        else:
            name, value = rng.choice(NAMES), rng.choice(VALUES)
        sep = b": " if rng.random() < 0.8 else rng.choice(SEPARATORS)
        lines.append((rng.choice((b" ", b"\t")) if rng.random() < 0.05 else b"")
                     + name + sep + value + (b"\r\n" if rng.random() < 0.9 else rng.choice(ENDS)))
    return b"".join(lines) + rng.choice([b"\r\n"] * 8 + [b"\n", b""])


def test_random_heads_parse_as_http_client_parses_them(email_parses) -> None:
    rng = random.Random(49)
    heads = [random_head(rng) for _ in range(5000)]
    for head in heads:
        assert parsed(parse_head, head) == parsed(http.client.parse_headers, head), head
    # Both paths were taken often: the corpus is not all plain nor all odd
    lean = 2 * len(heads) - len(email_parses)  # http.client's own parses hand every head over
    assert lean > 1000 and len(email_parses) - len(heads) > 500


# -- through run.py's fetcher, against real servers -----------------------------------------

ANSWERS = {  # path → the raw answer the server sends
    "/plain": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 2\r\n"
              b"X-Repeat: a\r\nX-Repeat: b\r\n\r\nok",
    "/chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/html\r\n"
                b"\r\n2\r\nok\r\n5\r\n more\r\n0\r\n\r\n",
    "/chunked-capitals": b"HTTP/1.1 200 OK\r\ntransfer-encoding: CHUNKED\r\n\r\n"
                         b"4\r\nsome\r\n0\r\n\r\n",
    "/latin-1": b"HTTP/1.1 200 OK\r\nX-Name: caf\xe9\r\nContent-Length: 2\r\n\r\nok",
    "/folded": b"HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length: 2\r\n\r\nok",
    "/colon-less": b"HTTP/1.1 200 OK\r\nX-A: 1\r\nno colon\r\nContent-Length: 2\r\n\r\nok",
    "/no-length": b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nto the close",
    "/http-1.0": b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
    "/bare-lf": b"HTTP/1.1 200 OK\nContent-Length: 2\nX: y\n\nok",
    "/no-content": b"HTTP/1.1 204 No Content\r\nX: y\r\n\r\n",
    "/negative-length": b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nto the close",
    "/early-hints": b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    "/101-fields": b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(101))
                   + b"\r\nok",
}


# Answers with no length to end them (the colon-less line hides the Content-Length after it:
# both parsers take it for the start of the body) or no answer at all: the server closes
TO_THE_CLOSE = ("/colon-less", "/no-length", "/negative-length", "/http-1.0", "/101-fields")


class AnswersServer(RawSocketServer):
    """Answers each request with ``ANSWERS[path]``, closing the connection when the answer
    has no length to end it (it is read to the close)."""

    def serve(self, conn: socket.socket) -> None:
        pending = b""
        while (request := read_request(conn, pending)) is not None:
            path, pending = request
            answer = ANSWERS[path]
            conn.sendall(answer)
            if path in TO_THE_CLOSE:
                return


@pytest.fixture
def answers() -> Iterator[AnswersServer]:
    server = AnswersServer()
    yield server
    server.close()


# (/early-hints not: plain requests takes the 103 for the answer; tests/test_fetch.py has it)
@pytest.mark.parametrize("path", [p for p in ANSWERS if p != "/early-hints"])
def test_an_answer_through_run_py_is_the_answer_through_plain_requests(answers, path) -> None:
    """The same raw answer, read by run.py's fetcher (parse_head) and by a plain ``requests``
    session (``http.client.parse_headers``), then the next answer on the same connection:
    the same status, fields and body, and the connection kept or not alike."""
    fetcher = Fetcher(Options(timeout=5))
    plain = requests.Session()
    try:
        ours = [fetcher.fetch(answers.url(p)) for p in (path, "/plain")]
        theirs = [plain.get(answers.url(p), timeout=5) for p in (path, "/plain")]
        # Each fetch's status, fields and body; then the second on the same connection or not
        for mine, other in zip(ours, theirs, strict=True):
            if other.status_code == 200 and path == "/101-fields":
                pytest.fail("requests read a head of 101 fields")
            assert (mine.status, mine.body) == (other.status_code, other.content)
            assert list(mine.headers.items()) == list(other.raw.headers.items())
            assert mine.error is None
    except requests.ConnectionError as e:  # http.client refused the head: so must run.py
        assert path == "/101-fields" and "got more than 100 headers" in str(e)
        refused = fetcher.fetch(answers.url(path))
        assert refused.status is None and "got more than 100 headers" in refused.error
    finally:
        fetcher.close()
        plain.close()


def test_run_py_keeps_a_connection_as_http_client_does(answers) -> None:
    """An answer with a length or chunks leaves the connection for the next request; one read
    to the close does not. Counted from the server's side: connections accepted."""
    fetcher = Fetcher(Options(timeout=5))
    try:
        for path in ("/plain", "/chunked", "/chunked-capitals", "/latin-1", "/folded",
                     "/bare-lf", "/no-content", "/early-hints", "/plain"):
            assert fetcher.fetch(answers.url(path)).error is None
        assert answers.connections == 1
        for path in ("/colon-less", "/no-length", "/negative-length", "/http-1.0", "/plain"):
            assert fetcher.fetch(answers.url(path)).error is None
        assert answers.connections == 5  # each read to the close: the next needs a new one
    finally:
        fetcher.close()
