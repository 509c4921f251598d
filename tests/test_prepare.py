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
from requests.cookies import RequestsCookieJar, create_cookie

from minicrawl.core.urls import canonicalize
from minicrawl.http.prepare import _AS_SENT, prepared

TEMPLATE = requests.Session().prepare_request(requests.Request("GET", "http://x/"))
JAR = RequestsCookieJar()  # empty
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
        return prepared(TEMPLATE, method, url, JAR).url
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
        assert prepared(TEMPLATE, "HEAD", url, JAR).method == "HEAD"


@settings(max_examples=800, deadline=None)
@given(st.from_regex(_AS_SENT, fullmatch=True))
def test_every_url_the_rule_lets_through_is_what_requests_would_send(url: str) -> None:
    assert url == by_requests(url)


def test_the_template_is_not_changed() -> None:
    prepared(TEMPLATE, "HEAD", "http://a.b/x", JAR)
    assert TEMPLATE.url == "http://x/" and TEMPLATE.method == "GET"


class AskedJar(RequestsCookieJar):
    """A cookie jar that counts the requests it is asked for cookies for."""

    asked = 0

    def add_cookie_header(self, request) -> None:  # type: ignore[no-untyped-def]
        self.asked += 1
        super().add_cookie_header(request)


def by_requests_copy(url: str, jar: RequestsCookieJar) -> requests.PreparedRequest:
    """What prepared() stands for: the template copied, its URL and cookies prepared."""
    request = TEMPLATE.copy()
    request.prepare_url(url, None)
    request.prepare_cookies(jar)
    return request


@pytest.mark.parametrize("url", ["http://a.b/x", "http://a.b/%41?q"])
def test_a_request_is_prepared_as_requests_prepares_it_with_the_jar_s_cookies(url: str) -> None:
    full = RequestsCookieJar()
    full.set_cookie(create_cookie("s", "1", domain="a.b"))
    full.set_cookie(create_cookie("t", "2", domain="other.example"))
    for jar in (RequestsCookieJar(), full):
        ours, theirs = prepared(TEMPLATE, "GET", url, jar), by_requests_copy(url, jar)
        assert vars(ours) == vars(theirs) and ours._cookies is jar
    assert ours.headers["Cookie"] == "s=1"  # (the full jar's: one cookie goes to a.b)
    assert TEMPLATE.headers.get("Cookie") is None and TEMPLATE._cookies is not full


def test_an_empty_jar_is_not_asked_for_cookies() -> None:
    # requests asks cookielib through a mock request even when the jar is empty (issue 49)
    jar = AskedJar()
    assert "Cookie" not in prepared(TEMPLATE, "GET", "http://a.b/", jar).headers
    assert jar.asked == 0
    jar.set_cookie(create_cookie("s", "1", domain="a.b"))
    assert prepared(TEMPLATE, "GET", "http://a.b/", jar).headers["Cookie"] == "s=1"
    assert jar.asked == 1
    jar.clear()  # emptied again
    assert "Cookie" not in prepared(TEMPLATE, "GET", "http://a.b/", jar).headers
