"""``--http requests``: run.py's crawler fetching through the core's fetcher (issue 30, step 1),
against real local servers: the same pages, records and counters as with http.client."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from minicrawl.fetch import Fetcher, fetcher_for
from minicrawl.fetch_requests import RequestsFetcher
from minicrawl.local.site import Resource
from minicrawl.options import Options

ROOT = Path(__file__).resolve().parent.parent


def crawl(url: str, out: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), url, "--out", str(out),
                           "--delay", "0", "--quiet", *flags],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)


def records(out: Path) -> dict[str, dict]:
    return {r["url"]: r for r in map(json.loads, out.read_text().splitlines())}


def test_the_flag_picks_the_fetcher() -> None:
    assert isinstance(fetcher_for(Options()), Fetcher)
    assert isinstance(fetcher_for(Options(http="requests")), RequestsFetcher)


def test_run_py_on_requests_fetches_what_http_client_fetches_once(make_site, tmp_path) -> None:
    """A generated site crawled twice, once per client: each page once, and the same records
    (status, final URL after redirects, links, bytes, error) either way."""
    server, site = make_site()
    seen = {}
    for client in ("http.client", "requests"):
        before = len(server.requests)
        done = crawl(server.url("/"), tmp_path / f"{client}.jsonl", "--http", client)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        paths = [r.path for r in server.requests[before:]]
        assert len(paths) == len(set(paths))  # exactly once
        assert {p for p in paths if p != "/robots.txt"} == set(site.reachable())
        seen[client] = {url: (r["status"], r["final_url"], r["links"], r["bytes"], r["error"])
                        for url, r in records(tmp_path / f"{client}.jsonl").items()}
    assert seen["requests"] == seen["http.client"]


@pytest.mark.parametrize("url, kind, transient", [
    ("http://127.0.0.1:1/", "ConnectionError", True),  # refused: worth a retry
])
def test_errors_keep_their_kinds_and_retry_verdicts(url: str, kind: str, transient: bool) -> None:
    for fetcher in (Fetcher(Options(timeout=2)), RequestsFetcher(Options(timeout=2))):
        response = fetcher.fetch(url)
        assert response.error.startswith(kind + ": ") and response.transient is transient
        assert "\n" not in response.error


def test_headers_are_lower_cased_and_repeats_kept_for_the_archive(server) -> None:
    server.pages["/p"] = Resource(b"<p>x</p>", 200, {"Content-Type": "text/html",
                                                      "ETag": '"v1"', "X-Two": "a"})
    exchanges = []
    fetcher = RequestsFetcher(Options(), on_exchange=exchanges.append)
    response = fetcher.fetch(server.url("/p"), headers={"If-None-Match": '"v0"'})
    assert response.headers["etag"] == '"v1"' and response.content_type == "text/html"
    assert exchanges == [response]
    assert response.request_line == "GET /p HTTP/1.1"
    assert ("If-None-Match", '"v0"') in response.request_headers
    assert response.request_headers[0] == ("Host", server.origin.split("//")[1])
    assert ("ETag", '"v1"') in response.raw_headers and response.reason == "OK"
    assert server.requests[-1].headers["if-none-match"] == '"v0"'
