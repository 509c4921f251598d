"""The Client's contract (interfaces.Client), run over every implementation — the core's fetcher
and run.py's around it — against real servers on 127.0.0.1: ``fetch`` GETs the URL once, follows
no redirect, adds the headers asked for to this request only, cuts a body at the cap after
decompression, and never raises: a failure is the response's one-line error. (Each fetcher's own
details: tests/core/test_fetch.py, tests/test_fetch.py.)"""

from __future__ import annotations

import gzip
import socket
from collections.abc import Callable

import pytest

from minicrawl.core.fetch import Fetcher as CoreFetcher
from minicrawl.core.interfaces import Client
from minicrawl.demo.site import Resource
from minicrawl.http.fetch import Fetcher as RunPyFetcher
from minicrawl.options import Options

pytestmark = pytest.mark.timeout(30)

CAP = 10_000  # bytes: each implementation's body cap here


def core_client() -> Client:
    return CoreFetcher(timeout=2.0, deadline=5.0, max_bytes=CAP)


def run_py_client() -> Client:
    return RunPyFetcher(Options(timeout=2.0, max_bytes=CAP))


CLIENTS: dict[str, Callable[[], Client]] = {"core": core_client, "run.py": run_py_client}


@pytest.fixture(params=sorted(CLIENTS))
def client(request: pytest.FixtureRequest) -> Client:
    return CLIENTS[request.param]()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_page_comes_back_with_its_status_body_and_headers(client, server):
    server.pages["/p"] = Resource(b"<p>hi</p>", 200, {"Content-Type": "text/html", "ETag": '"v1"'})
    response = client.fetch(server.url("/p"))
    assert (response.url, response.status, response.body, response.error) == (
        server.url("/p"), 200, b"<p>hi</p>", None)
    assert response.headers["content-type"] == response.headers["Content-Type"] == "text/html"
    assert response.headers["etag"] == '"v1"' and response.location is None


def test_a_404_is_an_answer_not_an_error(client, server):
    response = client.fetch(server.url("/missing"))
    assert (response.status, response.error) == (404, None)


def test_a_redirect_is_handed_back_as_sent_and_not_followed(client, server):
    server.pages["/old"] = Resource(b"moved", 301, {"Location": "../new?q=%7e#top"})
    server.pages["/new"] = Resource(b"new")
    response = client.fetch(server.url("/old"))
    assert (response.status, response.location, response.error) == (301, "../new?q=%7e#top", None)
    assert [r.path for r in server.requests] == ["/old"]


def test_headers_asked_for_go_out_with_that_request_only(client, server):
    server.pages["/p"] = Resource(b"page")
    client.fetch(server.url("/p"), {"If-None-Match": '"v0"'})
    assert server.requests[-1].headers["if-none-match"] == '"v0"'
    client.fetch(server.url("/p"))
    assert "if-none-match" not in server.requests[-1].headers


def test_a_body_over_the_cap_is_cut_after_decompression(client, server):
    inflated = b"<p>" + b"x" * (CAP * 50)
    server.pages["/big"] = Resource(gzip.compress(inflated), 200,
                                    {"Content-Encoding": "gzip", "Content-Type": "text/html"})
    response = client.fetch(server.url("/big"))
    assert response.status == 200 and len(response.body) <= CAP and response.error
    assert inflated.startswith(response.body)


def test_nothing_listening_is_no_answer_and_one_line_never_an_exception(client):
    response = client.fetch(f"http://127.0.0.1:{closed_port()}/")
    assert response.status is None and response.transient
    assert response.error and "\n" not in response.error and "Traceback" not in response.error


def test_head_asks_for_the_answer_without_its_body(client, server):
    # --check-links asks HEAD of a link out of the site: its status is all that is wanted. The
    # Content-Length says what a GET would bring; no body comes, and none is waited for.
    server.pages["/big"] = Resource(b"x" * (CAP * 5), 200, {"Content-Type": "video/mp4"})
    response = client.fetch(server.url("/big"), method="HEAD")
    assert (response.status, response.body, response.error) == (200, b"", None)
    assert response.headers["content-length"] == str(CAP * 5)
    assert [(r.method, r.path) for r in server.requests] == [("HEAD", "/big")]
