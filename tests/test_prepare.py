"""minicrawl.http.prepare: a canonical URL set on the request as it is only where requests would
send exactly it — checked against requests' own prepare_url on the web-platform-tests URLs, on
URLs made to stress the rule, and on random ones the rule accepts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests
from hypothesis import given, settings
from hypothesis import strategies as st

from minicrawl.core.urls import canonicalize
from minicrawl.http.prepare import _AS_SENT, prepared

TEMPLATE = requests.Session().prepare_request(requests.Request("GET", "http://x/"))
DATA = Path(__file__).parent / "data" / "urltestdata.json"


def by_requests(url: str) -> str | None:
    request = TEMPLATE.copy()
    try:
        request.prepare_url(url, None)
    except (requests.RequestException, ValueError):
        return None  # refused (the fetch says why)
    return request.url


def by_us(url: str, method: str = "GET") -> str | None:
    try:
        return prepared(TEMPLATE, method, url).url
    except (requests.RequestException, ValueError):
        return None


def wpt_urls() -> list[str]:
    cases = [c for c in json.loads(DATA.read_text()) if isinstance(c, dict)]
    found = set()
    for case in cases:
        for spelled in (case.get("href"), case.get("input")):
            if isinstance(spelled, str) and (url := canonicalize(spelled)):
                found.add(url)
    return sorted(found)


def test_every_canonical_url_of_the_wpt_data_is_sent_as_requests_sends_it() -> None:
    urls = wpt_urls()
    fast = [url for url in urls if _AS_SENT.fullmatch(url)]
    assert len(urls) > 150 and len(fast) > 50  # both paths are exercised
    for url in urls:
        assert by_us(url) == by_requests(url), url


@pytest.mark.parametrize("url", [
    "http://a.b/%41", "http://a.b/%7e", "http://a.b/|x", "http://a.b/^x", "http://a.b/x?q=[1]",
    "http://a.b/`", "http://a.b/{x}", "http://u:p@a.b/", "http://[::1]/", "http://.a.b/",
    "http://a.b/\\", "http://a.b/é", "http://xn--caf-dma.example/", "http://a.b./x",
    "https://a.b:443/", "http://a.b:0/", "http://a.b:65535/", "http://a.b:65536/",
    "http://a.b/x#frag", "http://a..b/", "http://A.b/", "http://a.b/x?", "http://a.b/?x?",
])
def test_urls_at_the_edges_of_the_rule(url: str) -> None:
    assert by_us(url, "HEAD") == by_requests(url)
    if by_us(url) is not None:
        assert prepared(TEMPLATE, "HEAD", url).method == "HEAD"


@settings(max_examples=800, deadline=None)
@given(st.from_regex(_AS_SENT, fullmatch=True))
def test_every_url_the_rule_lets_through_is_what_requests_would_send(url: str) -> None:
    assert url == by_requests(url)


def test_the_template_is_not_changed() -> None:
    prepared(TEMPLATE, "HEAD", "http://a.b/x")
    assert TEMPLATE.url == "http://x/" and TEMPLATE.method == "GET"
