"""robots.txt as RFC 9309 says: Google's reference tests, and a few crawls through run.py.

The cases are ``tests/data/robotstxt/cases.json``, translated from Google's ``robots_test.cc``
(vendored beside it with its Apache-2.0 licence) by ``translate.py`` there. Each goes through
:func:`minicrawl.visit.robotstxt.parse_robots` and its ``can_fetch``: what RobotsGate asks for
every URL of a crawl, not a copy of it. The token given is the case's user agent as Google's
matcher takes it (the product token; the crawl's comes from ``robots_token(--user-agent)``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from minicrawl.demo.site import LocalSite, Resource
from minicrawl.visit.robots import robots_token
from minicrawl.visit.robotstxt import parse_robots, product_token

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests/data/robotstxt"
CASES = json.loads((DATA / "cases.json").read_text(encoding="utf-8"))


def body_of(case: dict) -> bytes:
    return CASES["bodies"][case["body"]].encode("latin-1")


def case_id(case: dict, kind: str = "allowed") -> str:
    index = CASES[kind].index(case)
    return f"{case['test']}-{index}"


def test_the_vendored_cases_are_what_translate_py_makes_of_the_vendored_test_file(tmp_path):
    """cases.json is generated, not edited: running the script again gives the same file."""
    source = (DATA / "translate.py").read_text(encoding="utf-8")
    (tmp_path / "robots_test.cc").write_bytes((DATA / "robots_test.cc").read_bytes())
    (tmp_path / "translate.py").write_text(source, encoding="utf-8")
    subprocess.run([sys.executable, str(tmp_path / "translate.py")], check=True,
                   capture_output=True, timeout=60)
    assert (tmp_path / "cases.json").read_bytes() == (DATA / "cases.json").read_bytes()
    assert (DATA / "LICENSE").read_text().startswith("\n                                 Apache")


def test_the_translation_holds_every_expect_of_the_test_file():
    """Every EXPECT on IsUserAgentAllowed in the .cc is a case (LineTooLong's loop once per
    EXPECT), beside the derived ones; and the RFC ones are most of them."""
    source = (DATA / "robots_test.cc").read_text(encoding="utf-8")
    expects = source.count("IsUserAgentAllowed(") - 1  # one is the helper's definition
    direct = [c for c in CASES["allowed"] if not c.get("derived")]
    assert len(direct) == expects == 145
    assert sum(c["rfc"] for c in CASES["allowed"]) == 157
    assert len(CASES["allowed"]) - 157 == 16


RFC = [c for c in CASES["allowed"] if c["rfc"]]
GOOGLE_ONLY = [c for c in CASES["allowed"] if not c["rfc"]]


@pytest.mark.parametrize("case", RFC, ids=case_id)
def test_rfc_9309_case(case):
    assert parse_robots(body_of(case), case["agent"]).can_fetch(case["url"]) \
        is case["allowed"], case.get("note", "")


@pytest.mark.parametrize("case", GOOGLE_ONLY, ids=case_id)
def test_google_only_case_followed(case):
    """The Google extensions minicrawl follows (minicrawl/visit/robotstxt.py says why): all of
    those the tests hold."""
    assert parse_robots(body_of(case), case["agent"]).can_fetch(case["url"]) \
        is case["allowed"], case.get("note", "")


@pytest.mark.parametrize("case", CASES["sitemaps"], ids=lambda c: case_id(c, "sitemaps"))
def test_sitemap_lines_anywhere_are_read(case):
    assert parse_robots(body_of(case), "foo").sitemaps == case["sitemaps"]


@pytest.mark.parametrize("case", CASES["tokens"], ids=lambda c: case_id(c, "tokens"))
def test_a_valid_product_token_is_its_own_robots_token(case):
    """IsValidUserAgentToObey: a valid token is used as it is (lower-cased); of an invalid one
    minicrawl never uses the string itself — robots_token takes its leading token
    (``Foobot/2.1`` → ``foobot``, as the User-Agent header's product is read) or ``*``."""
    token = case["token"]
    assert (robots_token(token) == token.lower() and token != "") is case["valid"]


# -- what the reference tests do not say: minicrawl's own cases -----------------------------

def allowed(body: str, token: str, path: str) -> bool:
    return parse_robots(body.encode(), token).can_fetch("http://example.com" + path)


def test_a_group_for_a_prefix_of_our_token_is_not_ours():
    """RFC 9309 2.2.1: the product token matches exactly (case-insensitively): a ``Foo`` group
    is not FooBot's, which falls back to ``*`` (protego took ``foo`` for ``foobot``)."""
    body = "User-agent: Foo\nAllow: /\n\nUser-agent: *\nDisallow: /\n"
    assert not allowed(body, "foobot", "/x")
    assert allowed(body, "foo", "/x") and allowed(body, "FOO", "/x")
    assert allowed("User-agent: FooBot\nDisallow: /\n", "foo", "/x")  # FooBot's is not foo's either


def test_groups_for_one_token_are_merged_and_star_groups_too():
    """2.2.1: every group that matches is one group; so is every ``*`` group."""
    body = ("User-agent: a\nDisallow: /1\n\nUser-agent: *\nDisallow: /2\n\n"
            "User-agent: A\nDisallow: /3\n\nUser-agent: *\nDisallow: /4\n")
    assert [allowed(body, "a", p) for p in ("/1", "/2", "/3", "/4")] == [False, True, False, True]
    assert [allowed(body, "b", p) for p in ("/1", "/2", "/3", "/4")] == [True, False, True, False]


def test_other_records_do_not_split_a_group_and_keep_their_pace():
    """A Crawl-delay, Request-rate, Sitemap or unknown line between two user-agent lines leaves
    them one group (2.1, 2.2.4: other records must not interfere); Crawl-delay and Request-rate
    stay the group's."""
    body = ("User-agent: slowbot\nCrawl-delay: 7\nX-Unknown: y\nSitemap: /s.xml\n"
            "User-agent: minicrawl\nRequest-rate: 1/4s\nDisallow: /private\n\n"
            "User-agent: *\nCrawl-delay: 1\nDisallow: /\n")
    rules = parse_robots(body.encode(), "minicrawl")
    assert not rules.can_fetch("http://example.com/private") and rules.can_fetch(
        "http://example.com/public")
    assert rules.crawl_delay == 7.0 and rules.request_rate.seconds == 4
    assert rules.sitemaps == ["/s.xml"]
    other = parse_robots(body.encode(), "otherbot")
    assert other.crawl_delay == 1.0 and not other.can_fetch("http://example.com/public")


def test_no_group_and_no_star_allows_all():
    rules = parse_robots(b"User-agent: a\nDisallow: /\nSitemap: https://e.org/s.xml\n", "b")
    assert not rules and rules.can_fetch("http://example.com/")
    assert rules.crawl_delay is None and rules.sitemaps == ["https://e.org/s.xml"]


def test_escapes_compare_as_octets():
    """%xx in rules and URLs: hex case does not matter, an escaped letter is not the letter,
    a non-ASCII rule is its UTF-8 octets escaped (the URL is canonical: escaped already)."""
    assert not allowed("User-agent: *\nDisallow: /%7euser\n", "x", "/%7Euser/a")
    assert allowed("User-agent: *\nDisallow: /%7Euser\n", "x", "/~user/a")
    assert not allowed("User-agent: *\nDisallow: /café\n", "x", "/caf%C3%A9/menu")
    assert not allowed("User-agent: *\nDisallow: /100%\n", "x", "/100%")
    assert allowed("User-agent: *\nDisallow: /*.pdf$\n", "x", "/a.pdf?x=1")


def test_a_line_break_protego_sees_where_the_rfc_sees_none_changes_nothing():
    """RFC 9309 lines end at CR or LF only; protego (given the chosen group as text) also splits
    at VT, FS, NEL, U+2028…: those inside a rule are escaped (as in a canonical URL), inside a
    Crawl-delay they are white space, so no line of the group is lost or moved."""
    for brk in ("\x0b", "\x1c", "\x85", "\u2028"):
        body = (f"User-agent: *\nDisallow: /a{brk}User-agent: other\nCrawl-delay: 3{brk}X: y\n"
                f"Disallow: /b\nRequest-rate: 1/9{brk}\n")
        rules = parse_robots(body.encode(), "minicrawl")
        assert not rules.can_fetch("http://example.com/b"), repr(brk)
        assert rules.can_fetch("http://example.com/a")  # the rule is "/a<break>User-agent..."
        assert rules.request_rate.seconds == 9 and rules.crawl_delay is None


def test_product_token_of_a_user_agent_line():
    assert [product_token(v) for v in ("*", "* x", "FooBot/1.2", "Foo Bar", "ツ", "Foobot*")] \
        == ["*", "*", "foobot", "foo", "", "foobot"]


# -- the same through `python run.py` against a local server ----------------------------------

def run_py(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args, "--delay", "0",
                           "--quiet", "--threads", "2"], cwd=ROOT, text=True,
                          capture_output=True, timeout=120)


def site(robots: bytes) -> dict[str, Resource]:
    page = Resource(b'<a href="/a">a</a> <a href="/b/c">c</a>', 200,
                    {"Content-Type": "text/html"})
    return {"/robots.txt": Resource(robots, 200, {"Content-Type": "text/plain"}), "/": page,
            "/a": page, "/b/c": page}


def crawled(robots: bytes, *args: str) -> list[str]:
    with LocalSite(site(robots)) as server:
        result = run_py(server.url("/"), *args)
        assert result.returncode == 0, result.stderr
        return sorted(r.path for r in server.requests)


def test_run_py_a_bom_before_disallow_all_fetches_nothing_but_robots_txt():
    assert crawled(b"\xef\xbb\xbfUser-agent: *\nDisallow: /\n") == ["/robots.txt"]


def test_run_py_a_group_for_a_prefix_of_the_token_falls_back_to_star():
    robots = b"User-agent: Foo\nAllow: /\n\nUser-agent: *\nDisallow: /b/\n"
    assert crawled(robots, "--user-agent", "FooBot/1.0") == ["/", "/a", "/robots.txt"]
    assert crawled(robots, "--user-agent", "Foo/1.0") == ["/", "/a", "/b/c", "/robots.txt"]


def test_run_py_an_unknown_line_inside_a_group_does_not_end_it():
    robots = b"User-agent: FooBot\nInvalid-Unknown-Line: x\nUser-agent: *\nDisallow: /a\n"
    assert crawled(robots, "--user-agent", "FooBot/1.0") == ["/", "/b/c", "/robots.txt"]
    assert crawled(robots) == ["/", "/b/c", "/robots.txt"]


def test_run_py_escaped_rule_and_crawl_delay_of_a_shared_group():
    """``Disallow: /%61`` is not ``/a`` (octets are compared: ``%61`` is not ``a``); a
    Crawl-delay between two user-agent lines is the group's, ``*``'s too (protego ended the
    group at it, and the ``*`` crawl went at full speed)."""
    robots = b"User-agent: slowbot\nCrawl-delay: 0.4\nUser-agent: *\nDisallow: /%61\n"
    with LocalSite(site(robots)) as server:
        result = run_py(server.url("/"))
        assert result.returncode == 0, result.stderr
        pages = [r for r in server.requests if r.path != "/robots.txt"]
    assert sorted(r.path for r in pages) == ["/", "/a", "/b/c"]
    starts = sorted(r.time for r in pages)
    assert min(b - a for a, b in zip(starts, starts[1:], strict=False)) >= 0.4 - 0.01
