"""Wrong inputs, round three (issue 39): the HTTP settings, options that did nothing or the wrong
thing, the library APIs and Redis URLs — as a table, each case a subprocess (``run.py`` or
``python -m minicrawl.core``, as a user runs them) or an API call.

A command-line case checks what a user sees from outside the process (the harness of
``test_wrong_inputs``: :func:`check`): the exit status, stderr one line with no traceback that
says what it should once, nothing crawled on a usage error, no password anywhere, and no file
left behind in the directory it ran in. The environment of each case is the test's own, less
the proxy and CA variables, plus the case's (a variable set to None is removed).

Nothing here contacts anything but 127.0.0.1: SEED (port 9, discard) is refused at once, and
every check under test happens before the crawl would fetch it.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from test_wrong_inputs import PASSWORD, ROOT, SEED, Case, check
from warcio.archiveiterator import ArchiveIterator

from minicrawl.core.fetch import CA_VARIABLES
from minicrawl.demo.site import LocalSite, Resource

PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
NOT_PEM = "not a certificate\n"


@dataclass
class Setting(Case):
    """A case with its environment (None: the variable removed) and its program."""

    env: dict[str, str | None] = field(default_factory=dict)
    core: bool = False  # python -m minicrawl.core instead of run.py


def environment(changes: dict[str, str | None]) -> dict[str, str]:
    """The test's environment without proxies or CA variables, then ``changes``; this worktree's
    minicrawl first (``-m minicrawl.core`` imports it by PYTHONPATH)."""
    drop = {*CA_VARIABLES, *PROXY_VARIABLES, *(v.upper() for v in PROXY_VARIABLES)}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PYTHONPATH"] = str(ROOT)
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def launch(case: Setting, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    program = ["-m", "minicrawl.core"] if case.core else [str(ROOT / "run.py")]
    return subprocess.run([sys.executable, *program, *case.args], cwd=cwd, timeout=timeout,
                          capture_output=True, text=True, env=environment(case.env))


def launch_all(cases: dict[str, Setting], cwd: Path) -> dict[str, subprocess.CompletedProcess]:
    with ThreadPoolExecutor(max_workers=4) as pool:  # both cores busy while others start
        futures = {name: pool.submit(launch, case, cwd) for name, case in cases.items()}
        return {name: future.result() for name, future in futures.items()}


def refused(*args: str, says: str, env: dict[str, str | None] | None = None,
            core: bool = False, hidden: str | None = None) -> Setting:
    """A usage error: exit 2, before anything is fetched."""
    return Setting([SEED, *args], 2, says, hidden, env or {}, core)


# -- the HTTP settings: one check before the first request -----------------------------------
# A file of each kind the cases name, made in the directory they run in (see prepare)
FILES = {"notpem.pem": NOT_PEM.encode(), "empty.pem": b"",
         "binary.pem": gzip.compress(b"\x30\x82" * 100),
         # the markers of a certificate around what is not one: only its first is loaded
         # (issue 49), and that one is loaded, not merely found
         "garbled.pem": b"-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n"
                        b"-----END CERTIFICATE-----\n"}
PROXY_PW = f"http://user:{PASSWORD}@127.0.0.1:99999"
HTTP: dict[str, Setting] = {
    "--ca-bundle not PEM": refused("--ca-bundle", "notpem.pem",
                                   says="--ca-bundle 'notpem.pem' is not a PEM file"),
    "--ca-bundle empty": refused("--ca-bundle", "empty.pem", says="is not a PEM file"),
    "--ca-bundle binary": refused("--ca-bundle", "binary.pem", says="is not a PEM file"),
    "--ca-bundle garbled": refused("--ca-bundle", "garbled.pem", says="is not a PEM file"),
    "--ca-bundle missing": refused("--ca-bundle", "nope.pem",
                                   says="--ca-bundle 'nope.pem' is no such file"),
    "--ca-bundle not PEM, a good REQUESTS_CA_BUNDLE": refused(
        "--ca-bundle", "notpem.pem", says="--ca-bundle 'notpem.pem' is not a PEM",
        env={"REQUESTS_CA_BUNDLE": "/etc/ssl/certs/ca-certificates.crt"}),
    **{f"{name} {kind}{' (core)' if core else ''}": refused(
        says=f"the environment's {name}='{path}' is {problem}", env={name: path}, core=core)
       for name in CA_VARIABLES
       for kind, path, problem in (("missing", "nope.pem", "no such file"),
                                   ("not PEM", "notpem.pem", "not a PEM file"))
       for core in (False, True)},
    "REQUESTS_CA_BUNDLE missing, CURL_CA_BUNDLE good": refused(  # the first set is the one used
        says="REQUESTS_CA_BUNDLE='nope.pem' is no such file",
        env={"REQUESTS_CA_BUNDLE": "nope.pem", "CURL_CA_BUNDLE": "/etc/ssl/certs/"}),
    # proxies from the environment: requests would use them for every request
    **{f"{name} {kind}{' (core)' if core else ''}": refused(
        says=f"the environment's {name}={shown} {problem.replace('FIX', f'; fix or unset {name}')}",
        env={name: value}, core=core, hidden=PASSWORD)
       for name in ("HTTP_PROXY", "https_proxy", "ALL_PROXY")
       for kind, value, shown, problem in (
           ("SOCKS", "socks5h://127.0.0.1:1080", "'socks5h://127.0.0.1:1080'",
            "is a SOCKS proxy, which needs PySocks (pip install 'requests[socks]')FIX"),
           ("port", "http://127.0.0.1:99999", "'http://127.0.0.1:99999'", "is not a valid URL"),
           ("leading space", " http://127.0.0.1:3128", "' http://127.0.0.1:3128'",
            "has a blank or control character in itFIX"),
           ("password", PROXY_PW, "'http://user:***@127.0.0.1:99999'", "is not a valid URL"),
           ("ftp", "ftp://127.0.0.1:21", "'ftp://127.0.0.1:21'", "must be http://HOST:PORT"),
           ("no host", "http://:3128", "'http://:3128'", "has no host"))
       for core in (False, True) if not core or kind in ("SOCKS", "port")},
    "socks4 proxy": refused(says="is a SOCKS proxy", env={"http_proxy": "socks4://127.0.0.1:1"}),
    "no_proxy for some hosts only": refused(says="HTTP_PROXY='socks5://127.0.0.1:1' is a SOCKS",
                                            env={"HTTP_PROXY": "socks5://127.0.0.1:1",
                                                 "NO_PROXY": "127.0.0.1,localhost"}),
    "lower case wins": refused(says="http_proxy='socks5://127.0.0.1:1'",
                               env={"http_proxy": "socks5://127.0.0.1:1",
                                    "HTTP_PROXY": "http://127.0.0.1:3128"}),
    # --proxy
    "--proxy leading space": refused("--proxy", " http://127.0.0.1:3128",
                                     says="has a blank or control character"),
    "--proxy trailing space": refused("--proxy", "http://127.0.0.1:3128 ",
                                      says="has a blank or control character"),
    "--proxy tab": refused("--proxy", "http://127.0.0.1:3128\t", says="control character"),
    "--proxy socks": refused("--proxy", "socks5://127.0.0.1:1080", says="needs PySocks"),
    "--proxy password": refused("--proxy", PROXY_PW, says="is not a valid URL", hidden=PASSWORD),
    "--proxy ftp": refused("--proxy", "ftp://127.0.0.1:21", says="must be http://HOST:PORT"),
    "--proxy no host": refused("--proxy", "http://:3128", says="has no host"),
    "--proxy no scheme": refused("--proxy", "127.0.0.1:3128", says="must be http://HOST:PORT"),
    "--proxy no port": refused("--proxy", f"http://u:{PASSWORD}@127.0.0.1", hidden=PASSWORD,
                               says="--proxy 'http://u:***@127.0.0.1' must be http://HOST:PORT"),
    "--proxy empty": refused("--proxy", "", says="--proxy '' is empty"),
    # --user-agent: requests refused these with a 48-line traceback
    "--user-agent leading space": refused("--user-agent", " bot/1.0",
                                          says="--user-agent must not start with a space, got "
                                               "' bot/1.0': write 'bot/1.0'"),
    "--user-agent tab": refused("--user-agent", "bot\t1.0", says="control characters"),
    "--user-agent DEL": refused("--user-agent", "bot\x7f", says="control characters"),
    "--user-agent CR": refused("--user-agent", "bot\rX: 1", says="control characters"),
    "--user-agent leading tab": refused("--user-agent", "\tbot", says="control characters"),
}


def prepare(directory: Path) -> None:
    for name, data in FILES.items():
        (directory / name).write_bytes(data)


def ran_each(cases: dict[str, Setting], directory: Path) -> dict[str, subprocess.CompletedProcess]:
    """Run every case in ``directory`` (prepared); no case may leave a file there."""
    prepare(directory)
    before = set(os.listdir(directory))
    results = launch_all(cases, directory)
    assert set(os.listdir(directory)) == before, "a refused command left files behind"
    return results


@pytest.fixture(scope="module")
def http_results(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    return ran_each(HTTP, tmp_path_factory.mktemp("http-settings"))


@pytest.mark.parametrize("name", list(HTTP))
def test_a_wrong_http_setting_is_refused_up_front(name, http_results):
    check(HTTP[name], http_results[name])


# Neighbours that are right: each crawls (SEED refuses the connection: one page, an error)
RIGHT = {
    "--ca-bundle good": Setting([SEED, "--ca-bundle", "/etc/ssl/certs/ca-certificates.crt"], 0,
                                ""),
    "a CA directory": Setting([SEED], 0, "", env={"SSL_CERT_FILE": "/etc/ssl/certs/"}),
    "--ca-bundle wins over a missing REQUESTS_CA_BUNDLE": Setting(
        [SEED, "--ca-bundle", "/etc/ssl/certs/ca-certificates.crt"], 0, "",
        env={"REQUESTS_CA_BUNDLE": "nope.pem"}),
    "--proxy wins over a SOCKS HTTP_PROXY": Setting(
        [SEED, "--proxy", "http://127.0.0.1:9"], 0, "", env={"HTTP_PROXY": "socks5://x:1"}),
    "a proxy without scheme from the environment": Setting(
        [SEED], 0, "", env={"http_proxy": "127.0.0.1:9", "no_proxy": "127.0.0.1"}),
    "ftp_proxy is not ours": Setting([SEED], 0, "", env={"ftp_proxy": "socks5://x:1"}),
    "--demo with a SOCKS proxy in the environment": Setting(
        ["--demo", "--max-pages", "5"], 0, "", env={"HTTPS_PROXY": "socks5://x:1",
                                                    "http_proxy": "socks5h://x:1"}),
    "no_proxy=* bypasses a SOCKS HTTP_PROXY": Setting(
        [SEED], 0, "", env={"HTTP_PROXY": "socks5://x:1", "no_proxy": "*"}),
    "an empty proxy variable": Setting([SEED], 0, "", env={"HTTP_PROXY": ""}),
    "--user-agent trailing space": Setting([SEED, "--user-agent", "bot/1.0 "], 0, ""),
    "the core, good CA": Setting([SEED], 0, "", core=True,
                                 env={"SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt"}),
}


def test_the_right_neighbours_still_crawl(tmp_path):
    for case in RIGHT.values():
        case.args += [] if case.core else ["--quiet", "--retries", "0"] + (
            [] if "--demo" in case.args else ["--ignore-robots"])
    results = ran_each(RIGHT, tmp_path)
    for name, done in results.items():
        assert done.returncode == 0 and "Traceback" not in done.stderr, (name, done.stderr)
        assert "is not" not in done.stderr and "must" not in done.stderr, (name, done.stderr)


def test_a_wrong_setting_from_the_library_names_it():
    from minicrawl import Crawler, Options

    with pytest.raises(ValueError, match="--user-agent must not start with a space"):
        Options(user_agent=" bot")
    with pytest.raises(ValueError, match="--ca-bundle 'nope.pem' is no such file"):
        Crawler(SEED, ca_bundle="nope.pem")
    with pytest.raises(ValueError, match=r"--proxy 'http://u:\*\*\*@h:1' has a blank"):
        Options(proxy=f"http://u:{PASSWORD} @h:1")


# -- Content-Encoding: stacked codings undone; one not undone kept as received -----------------

LINKS = b'<html><body><a href="/a">a</a><a href="/b">b</a></body></html>'


def stacked_site(server: LocalSite) -> bytes:
    import brotli

    body = brotli.compress(gzip.compress(LINKS))  # gzip applied first: "gzip, br"
    server.pages["/"] = Resource(body, 200, {"Content-Type": "text/html",
                                             "Content-Encoding": "gzip, br"})
    server.pages["/a"] = server.pages["/b"] = Resource(b"<p>leaf</p>")
    return body


def test_gzip_then_br_is_undone_and_its_links_followed(server, tmp_path):
    stacked_site(server)
    done = launch(Setting([server.url("/"), "--out", "o.jsonl", "--delay", "0", "--quiet"], 0,
                          ""), tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    got = (tmp_path / "o.jsonl").read_text()
    assert '"error": null' in got and got.count("\n") == 3  # /, /a and /b


WITHOUT_BROTLI = """
import runpy, sys
for name in ("brotli", "brotlicffi"):
    sys.modules[name] = None  # as if the compression extra were not installed
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.parametrize("coding", ["br", "gzip, br"])
def test_without_brotli_a_br_page_is_archived_as_received(server, tmp_path, coding):
    """README: a coding the library does not undo is stored as received, with its header; the
    record is whole (no WARC-Truncated) and no link is taken from the undecoded bytes."""
    import brotli

    body = brotli.compress(gzip.compress(LINKS) if "gzip" in coding else LINKS, quality=0)
    server.pages["/"] = Resource(body, 200, {"Content-Type": "text/html",
                                             "Content-Encoding": coding})
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_BROTLI, str(ROOT / "run.py"), server.url("/"),
         "--warc", "a.warc.gz", "--warc-max-size", "0", "--delay", "0", "--quiet",
         "--ignore-robots"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=environment({}))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    with open(tmp_path / "a.warc.gz", "rb") as f:
        responses = [(r.http_headers, r.rec_headers, r.raw_stream.read())
                     for r in ArchiveIterator(f) if r.rec_type == "response"]
    assert len(responses) == 1  # the links were not followed
    http, warc, payload = responses[0]
    assert payload == body
    assert http.get_header("Content-Encoding") == coding
    assert warc.get_header("WARC-Truncated") is None


# -- options that did nothing, or the wrong thing ----------------------------------------------
OPTIONS: dict[str, Setting] = {
    **{f"--{flag} {value!r}": refused(f"--{flag}", value, says=f"--{flag} {value!r} is an empty "
                                      "pattern, which matches every URL")
       for flag in ("exclude", "include") for value in ("", " ", "\t")},
    **{f"--exclude {value!r}": refused("--exclude", value, says=f"--exclude {value!r} matches "
                                       "the empty string, so every URL")
       for value in ("x*", "^", "$", "logout|", "(?:)", "(a)?", ".*")},
    "--include '(' still": refused("--include", "(", says="is not a valid regular expression"),
    **{f"--allow-domain {value!r}": refused("--allow-domain", value, says="--allow-domain must "
                                            "be a host name like example.org or *.example.org")
       for value in ("ex*ample.org", "*example.org", "*.*.org", "*", "*.", "exa mple.org",
                     "example.org/", "*.example.org:80", "http://*.example.org")},
    **{f"--{flag} without --redis": refused(f"--{flag}", value, says=f"--{flag} is for a crawl "
                                            "shared through Redis: give --redis URL too")
       for flag, value in (("crawl", "mine"), ("visited-shards", "4"), ("reclaim-after", "5"),
                           ("redis-retry", "5"))},
    "--warc-max-size without --warc": refused("--warc-max-size", "0", says="--warc-max-size "
                                              "would do nothing: it sizes --warc's files"),
    "--max-crawl-delay with --ignore-robots": refused(
        "--ignore-robots", "--max-crawl-delay", "1", says="--max-crawl-delay would do nothing: "
        "it caps robots.txt's Crawl-delay, which --ignore-robots does not read"),
    "--forget-gone without --recrawl": refused("--state", "st", "--forget-gone",
                                               says="--forget-gone forgets the pages a "
                                                    "--recrawl finds gone: give --recrawl too"),
    # the core's command line: run.py's bounds, run.py's words
    **{f"core --{flag} {value}": refused(f"--{flag}={value}", core=True, says=says)
       for flag, value, says in (
           ("delay", "nan", "--delay must be a finite number, got nan"),
           ("delay", "inf", "--delay must be a finite number"),
           ("delay", "-1", "--delay must be at least 0"),
           ("delay", "1e10", "--delay must be at most 86400"),
           ("timeout", "1e10", "--timeout must be at most 86400, got 10000000000.0"),
           ("timeout", "0", "--timeout must be greater than 0"),
           ("timeout", "nan", "--timeout must be a finite number"),
           ("timeout", "-inf", "--timeout must be a finite number"),
           ("threads", "1000000", "--threads must be at most 1024, got 1000000"),
           ("threads", "0", "--threads must be at least 1"),
           ("threads", "-3", "--threads must be at least 1"),
           ("max-pages", "0", "--max-pages must be at least 1"),
           ("max-pages", "-1", "--max-pages must be at least 1"),
           ("max-pages", str(10**13), "--max-pages must be at most 1000000000000"),
           ("threads", "1e3", "argument --threads: invalid int value: '1e3'"))},
}


@pytest.fixture(scope="module")
def option_results(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    return ran_each(OPTIONS, tmp_path_factory.mktemp("options"))


@pytest.mark.parametrize("name", list(OPTIONS))
def test_an_option_that_would_do_nothing_is_refused(name, option_results):
    check(OPTIONS[name], option_results[name])


FAST = ["--delay", "0", "--quiet", "--retries", "0"]


def crawled(done: subprocess.CompletedProcess, out: Path) -> dict[str, dict]:
    import json

    assert "Traceback" not in done.stderr, done.stderr
    return {r["url"]: r for r in map(json.loads, out.read_text().splitlines())}


@pytest.mark.parametrize("domain", ["*.localhost", "LOCALHOST.", "localhost", "*.LocalHost"])
def test_allow_domain_in_any_spelling_matches_its_host(server, tmp_path, domain):
    """Seeded on 127.0.0.1, a link to localhost (the same server) is followed when allowed."""
    server.pages["/"] = Resource(f'<a href="{server.url("/x").replace("127.0.0.1", "localhost")}'
                                 f'">x</a>'.encode())
    server.pages["/x"] = Resource(b"<p>x</p>")
    done = launch(Setting([server.url("/"), "--allow-domain", domain, "--out", "o.jsonl", *FAST],
                          0, ""), tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert server.url("/x").replace("127.0.0.1", "localhost") in crawled(done, tmp_path / "o.jsonl")


@pytest.mark.parametrize("domain", ["bücher.de", "*.bücher.de", "BÜCHER.de", "xn--bcher-kva.de"])
def test_an_idn_allow_domain_matches_the_canonical_host(domain):
    """Canonical URLs hold punycode hosts; the domain is spelled as the core spells hosts."""
    from minicrawl import Options
    from minicrawl.scope import Scope

    scope = Scope(["http://example.org/"], Options(allow_domain=[domain]).allow_domain)
    assert scope.admits("http://xn--bcher-kva.de/")
    assert scope.admits("http://www.xn--bcher-kva.de/a")
    assert not scope.admits("http://xn--bcher-kva.de.evil.test/")
    assert not scope.admits("http://buecher.de/")


@pytest.mark.parametrize("robots", [None, b"Sitemap: /missing.xml\n"])
def test_a_404_sitemap_does_not_spend_the_host_cap(server, tmp_path, robots):
    """--sitemaps with --max-pages-per-host 1: the sitemap request (404) is not a page; the
    seed is fetched (it was refused: max_pages_per_host reached, nothing crawled, exit 0)."""
    server.pages["/"] = Resource(b'<a href="/a">a</a>')
    server.pages["/a"] = Resource(b"<p>a</p>")
    if robots is not None:
        server.pages["/robots.txt"] = Resource(robots, 200, {"Content-Type": "text/plain"})
    done = launch(Setting([server.url("/"), "--sitemaps", "--max-pages-per-host", "1", "--out",
                           "o.jsonl", *FAST], 0, ""), tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("\n") == 1 and "HTTP 404" in done.stderr  # the sitemap, told
    pages = {u: r for u, r in crawled(done, tmp_path / "o.jsonl").items()
             if not r.get("sitemap")}
    assert pages[server.url("/")]["status"] == 200
    assert [r.path for r in server.requests if r.path in ("/", "/a")] == ["/"]  # the cap: 1


PATHOLOGICAL = "(a|a)*$"  # re: 2**40 steps on the links below, the GIL held all along


def pathological_site(server: LocalSite, links: int = 300) -> None:
    server.pages["/"] = Resource(b"".join(b'<a href="/%s%d!">x</a>' % (b"a" * 40, i)
                                          for i in range(links)) + b'<a href="/ok">ok</a>')
    server.pages["/ok"] = Resource(b"<p>ok</p>")


def test_a_pathological_include_is_bounded_and_told_once(server, tmp_path):
    """Measured: before, the crawl hung with Ctrl-C ignored (killed after 20 s); now 301 such
    links take under 2 s (0.25 s for the first, 1 ms each after)."""
    import time

    pathological_site(server)
    start = time.monotonic()
    done = launch(Setting([server.url("/"), "--include", PATHOLOGICAL, "--out", "o.jsonl",
                           "--ignore-robots", *FAST], 0, ""), tmp_path, timeout=60)
    took = time.monotonic() - start
    assert done.returncode == 0 and done.stderr.count("\n") == 1, done.stderr
    assert f"--include {PATHOLOGICAL!r} took over 0.25 s on" in done.stderr
    assert "simplify the pattern" in done.stderr
    assert set(crawled(done, tmp_path / "o.jsonl")) == {server.url("/"), server.url("/ok")}
    assert took < 20, took


def test_ctrl_c_stops_a_crawl_matching_a_pathological_exclude(server, tmp_path):
    import signal
    import time

    pathological_site(server, links=1000)  # 1 ms each once the first took 0.25 s
    proc = subprocess.Popen([sys.executable, str(ROOT / "run.py"), server.url("/"), "--exclude",
                             "(a|a)*!$", "--ignore-robots", *FAST], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=environment({}),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 30
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.5)  # matching the page's links now
    proc.send_signal(signal.SIGINT)
    start = time.monotonic()
    _, err = proc.communicate(timeout=30)
    assert time.monotonic() - start < 10 and proc.returncode == 130, err  # measured: 0.7 s
    assert "Traceback" not in err and "interrupted" in err


def test_recrawl_of_an_interrupted_crawl_says_it_resumes_it_first(server, tmp_path):
    """--recrawl finds the crawl interrupted (URLs still in its journal): it resumes it and
    says so in one line, that it is not a recrawl yet; a recrawl interrupted resumes as one."""
    server.pages["/"] = Resource(b'<a href="/a">a</a><a href="/b">b</a>')
    server.pages["/a"] = server.pages["/b"] = Resource(b"<p>leaf</p>")

    def run_py(*args: str) -> subprocess.CompletedProcess:
        return launch(Setting([server.url("/"), "--state", "st", "--threads", "1",
                               "--ignore-robots", *FAST, *args], 0, ""), tmp_path)

    first = run_py("--max-pages", "1")  # stops with /a and /b in the journal
    assert first.returncode == 0, first.stderr
    resumed = run_py("--recrawl")
    assert resumed.returncode == 0 and resumed.stderr.count("\n") == 1, resumed.stderr
    assert ("WARNING --recrawl: the crawl in st was interrupted with 2 URLs still to do; "
            "resuming it first, not recrawling — run --recrawl again once it is complete"
            ) in resumed.stderr
    assert sorted(r.path for r in server.requests) == ["/", "/a", "/b"]
    recrawl = run_py("--recrawl", "--max-pages", "1")  # a recrawl, interrupted in turn
    assert recrawl.returncode == 0 and recrawl.stderr == "", recrawl.stderr
    again = run_py()
    assert again.stderr == "WARNING resuming the recrawl in st: 2 URLs still to do\n"
    assert len(server.requests) == 6
    done = run_py()
    assert "complete" in done.stderr and len(server.requests) == 6


# -- the library APIs --------------------------------------------------------------------------


def core_crawler(*args: object, **kwargs: object) -> object:
    from minicrawl.core.crawler import Crawler as CoreCrawler

    return CoreCrawler(*args, **kwargs)  # type: ignore[arg-type]


def bloom(*args: object, **kwargs: object) -> object:
    from minicrawl import BloomFilter

    return BloomFilter(*args, **kwargs)  # type: ignore[arg-type]


def counting(*args: object, **kwargs: object) -> object:
    from minicrawl.visited import CountingBloomFilter

    return CountingBloomFilter(*args, **kwargs)  # type: ignore[arg-type]


def filled(kind: str) -> object:
    from minicrawl import ExactVisited
    from minicrawl.visited import ScalableBloomFilter

    return {"bloom": lambda: bloom(100), "counting": lambda: counting(100, 0.01),
            "scalable": lambda: ScalableBloomFilter(100), "exact": ExactVisited}[kind]()


API: dict[str, tuple[object, type[Exception], str]] = {
    # the core's Crawler: each argument named, as the library user wrote it
    "core seeds a str": (lambda: core_crawler(SEED), TypeError,
                         "seeds must be a list of URLs, got str 'http://127.0.0.1:9/' (one URL: "
                         "put it in a list)"),
    "core seeds bytes": (lambda: core_crawler(b"http://x/"), TypeError,
                         "seeds must be a list of URLs, got bytes"),
    "core seeds None": (lambda: core_crawler(None), TypeError,
                        "seeds must be a list of URLs, got NoneType"),
    "core seeds a number": (lambda: core_crawler(5), TypeError, "seeds must be a list of URLs"),
    "core a seed None": (lambda: core_crawler([None]), TypeError,
                         "seeds[0] must be a str (a URL), got NoneType None"),
    "core a seed bytes": (lambda: core_crawler([SEED, b"http://x/"]), TypeError,
                          "seeds[1] must be a str (a URL), got bytes"),
    "core threads a str": (lambda: core_crawler([SEED], threads="4"), TypeError,
                           "threads must be an int, got str '4'"),
    "core threads a float": (lambda: core_crawler([SEED], threads=2.5), TypeError,
                             "threads must be an int, got float"),
    "core threads True": (lambda: core_crawler([SEED], threads=True), TypeError,
                          "threads must be an int, got bool"),
    "core threads 0": (lambda: core_crawler([SEED], threads=0), ValueError,
                       "threads must be at least 1, got 0"),
    "core threads a million": (lambda: core_crawler([SEED], threads=10**6), ValueError,
                               "threads must be at most 1024, got 1000000"),
    "core max_pages -1": (lambda: core_crawler([SEED], max_pages=-1), ValueError,
                          "max_pages must be at least 1, got -1"),
    "core max_pages 0": (lambda: core_crawler([SEED], max_pages=0), ValueError,
                         "max_pages must be at least 1, got 0"),
    "core max_pages a str": (lambda: core_crawler([SEED], max_pages="10"), TypeError,
                             "max_pages must be an int, got str"),
    "core delay nan": (lambda: core_crawler([SEED], delay=float("nan")), ValueError,
                       "delay must be a finite number, got nan"),
    "core delay -1": (lambda: core_crawler([SEED], delay=-1), ValueError,
                      "delay must be at least 0, got -1"),
    "core delay a str": (lambda: core_crawler([SEED], delay="0.5"), TypeError,
                         "delay must be a number, got str"),
    # Bloom filters: a size that cannot be had says the size asked
    "BloomFilter 10**12": (lambda: bloom(capacity=10**12), MemoryError,
                           "BloomFilter(capacity=1,000,000,000,000, error_rate=0.01) needs "
                           "1,127.1 GiB (9,681,526,738,736 bits), more than this machine's"),
    "BloomFilter 10**11 at 0.5": (lambda: bloom(capacity=10**11, error_rate=0.5), MemoryError,
                                  "needs 37.4 GiB"),
    "BloomFilter bits 2**50": (lambda: bloom(bits=2**50), MemoryError,
                               "needs 131,072.0 GiB (1,125,899,906,842,624 bits)"),
    "CountingBloomFilter 10**10": (lambda: counting(capacity=10**10, error_rate=0.01),
                                   MemoryError, "needs 90.2 GiB (96,815,267,388 counters)"),
    # a str is one URL, not a list of them
    **{f"{kind} {method}('abc')": (
        lambda kind=kind, method=method: getattr(filled(kind), method)("abc"), TypeError,
        "urls must be a list of URLs, got a str (one URL: use add, or put it in a list)")
       for kind in ("bloom", "counting", "scalable", "exact")
       for method in ("add_many", *{"bloom": ("add_new", "contains_many"), "counting": (),
                                    "scalable": ("add_new", "contains_many"),
                                    "exact": ("add_new",)}[kind])},
    "add_many(b'abc')": (lambda: filled("bloom").add_many(b"abc"), TypeError, "got a bytes"),
}


@pytest.mark.parametrize("name", list(API))
def test_the_library_names_the_wrong_argument(name):
    call, kind, says = API[name]
    with pytest.raises(kind) as info:
        call()
    assert says in str(info.value), str(info.value)
    assert "\n" not in str(info.value)


def test_a_list_of_urls_is_still_a_list_of_urls():
    f = filled("bloom")
    assert f.add_many(("http://a/", "http://b/")) == [True, True]
    assert f.add_many(iter(["http://c/"])) == [True]
    assert f.add_new(["http://a/", "http://d/"]) == ["http://d/"]


def test_an_observer_that_raises_stops_the_core_crawl_and_run_raises_it(server):
    """Before: the worker threads died one by one, run() returned a Summary as if all went well.
    Now the first failure stops the crawl (the pages in flight finish) and run() raises it, with
    the observer's own traceback, once every worker has ended."""
    import threading

    from minicrawl.core.crawler import Crawler as CoreCrawler

    server.pages["/"] = Resource(b"".join(b'<a href="/%d">x</a>' % i for i in range(50)))
    for i in range(50):
        server.pages[f"/{i}"] = Resource(b"<p>leaf</p>")
    told = []

    class Broken:
        def on_page(self, page: object) -> None:
            told.append(page)
            if len(told) == 3:
                raise KeyError("the observer's own bug")

    crawler = CoreCrawler([server.url("/")], threads=4, observers=[Broken()])
    with pytest.raises(KeyError, match="the observer's own bug") as info:
        crawler.run()
    assert "on_page" in {frame.name for frame in info.traceback}  # its own frame
    for thread in threading.enumerate():  # every worker ended (each said so, then returns)
        if thread.name.startswith("worker-"):
            thread.join(5)
            assert not thread.is_alive()
    assert 3 <= crawler.summary.pages < 51  # stopped, not the whole site
    assert len(told) == crawler.summary.pages


def test_an_on_page_that_raises_is_told_once_per_kind_and_counted(server, caplog):
    from minicrawl import Crawler

    server.pages["/"] = Resource(b"".join(b'<a href="/%d">x</a>' % i for i in range(20)))
    for i in range(20):
        server.pages[f"/{i}"] = Resource(b"<p>leaf</p>")
    seen = []

    def on_page(page: object) -> None:
        seen.append(page)
        raise (ValueError("bad value") if len(seen) % 2 else KeyError("no key"))

    stats = Crawler(server.url("/"), on_page=on_page, delay=0, ignore_robots=True).run()
    assert len(seen) == 21 and stats["callback_errors"] == 21
    lines = [r for r in caplog.records if "on_page" in r.getMessage()]
    assert len(lines) == 2, [r.getMessage() for r in lines]  # one per kind
    assert all(r.exc_info is None for r in lines)  # no traceback
    assert {r.getMessage().split(": ", 2)[1] for r in lines} == {"ValueError", "KeyError"}


def test_one_crawler_runs_one_crawl_at_a_time(server, tmp_path):
    """run() from a second thread while the first runs is refused: two crawls into one --out."""
    import threading

    from minicrawl import Crawler
    from minicrawl.demo.site import Slow

    server.pages["/"] = Resource(b'<a href="/slow">s</a>')
    server.pages["/slow"] = Slow(Resource(b'<a href="/after">a</a>'), 2)  # then one more page
    server.pages["/after"] = Resource(b"<p>after</p>")
    crawler = Crawler(server.url("/"), delay=0, ignore_robots=True, out=str(tmp_path / "o"))
    first = threading.Thread(target=crawler.run)
    first.start()
    deadline = __import__("time").monotonic() + 10
    while not any(r.path == "/slow" for r in server.requests):
        assert __import__("time").monotonic() < deadline
        __import__("time").sleep(0.01)
    with pytest.raises(RuntimeError, match="this Crawler is running already"):
        crawler.run()
    with pytest.raises(RuntimeError, match="this Crawler is running already"):
        next(crawler.pages())  # refused too, and leaving it does not stop the crawl running
    first.join(30)
    assert not first.is_alive()
    lines = (tmp_path / "o").read_text().splitlines()
    assert len(lines) == 3  # one crawl's: /, /slow and /after (not stopped by the refusal)


# -- Redis URLs: query options and schemes, refused at once -------------------------------------


def test_redis_url_options_and_a_cluster_url_at_one_server_are_one_line_at_once(tmp_path):
    """``?client_name=a b`` was a 64-line traceback (Redis refused the name), ``?foo=`` and
    ``?readonly=`` too (redis-py's TypeError), ``?decode_responses=false`` silently changed the
    replies the crawl reads; ``redis+cluster://`` at one server was retried for --redis-retry
    (30 s) before "unreachable". --redis-retry 60 below: a refusal taken for an outage would
    show as a minute, not a second. ``rediss+cluster://`` at one TLS server is told to write
    ``rediss://`` (keeping TLS), not ``redis://``."""
    import time

    from redisserver import RedisServer
    from tlsca import make_ca

    (tmp_path / "tls").mkdir()
    ca = make_ca(tmp_path / "tls")
    with RedisServer(password=PASSWORD) as server, \
            RedisServer(password=PASSWORD, tls=(ca.cert, ca.key)) as tls_server:
        base = f"redis://:{PASSWORD}@127.0.0.1:{server.port}/0"
        cluster = f"redis+cluster://:{PASSWORD}@127.0.0.1:{server.port}"
        tls_cluster = f"rediss+cluster://:{PASSWORD}@127.0.0.1:{tls_server.port}" \
                      f"?ssl_ca_certs={ca.ca}"
        query: dict[str, tuple[str, str]] = {  # (query, what the line says)
            "client_name with a space": ("client_name=a%20b", "?client_name= with a space or "
                                                              "a special character"),
            "client_name with a newline": ("client_name=a%0Ab", "?client_name= with a space"),
            "client_name empty": ("client_name=", "has ?client_name= with no value"),
            "unknown option": ("foo=bar", "has ?foo=, an option minicrawl does not pass"),
            "readonly (a cluster client's)": ("readonly=1", "has ?readonly=, an option"),
            "TLS option without rediss": ("ssl_cert_reqs=none", "a TLS option: it needs "
                                                                "rediss://"),
            "decode_responses": ("decode_responses=false", "sets ?decode_responses=, which "
                                                           "minicrawl sets itself"),
            "protocol": ("protocol=3", "the shared crawl speaks RESP2"),
            "db in the query": ("db=3", "give the database as the path"),
            "socket_timeout not a number": ("socket_timeout=abc", "redis-py cannot read: "
                                            "Invalid value for 'socket_timeout'"),
            "socket_timeout negative": ("socket_timeout=-1",
                                        "?socket_timeout= must be greater than 0 (seconds)"),
            "socket_connect_timeout 0": ("socket_connect_timeout=0",
                                         "must be greater than 0 (seconds)"),
            "socket_timeout nan": ("socket_timeout=nan", "?socket_timeout= must be a finite"),
            "timeout huge": ("socket_timeout=1e10", "must be at most 86400 (seconds)"),
            "max_connections 0": ("max_connections=0", "?max_connections= must be at least 1"),
            "a password in the query too": (f"password={PASSWORD}&foo=1", "has ?foo="),
        }
        cases = {name: Setting([SEED, "--redis", f"{base}?{q}", "--redis-retry", "60"], 2, says,
                               PASSWORD) for name, (q, says) in query.items()}
        not_cluster = "is not a Redis Cluster (cluster mode is not enabled on it): for one " \
                      "server write redis://HOST:PORT/DB"
        cases.update({
            "redis+cluster:// at one server": Setting(
                [SEED, "--redis", cluster, "--redis-retry", "60"], 3, not_cluster, PASSWORD),
            "redis+cluster:// /0 at one server": Setting(
                [SEED, "--redis", cluster + "/0", "--redis-retry", "60"], 3, not_cluster,
                PASSWORD),
            "--status, redis+cluster:// at one server": Setting(
                ["--status", "--redis", cluster, "--redis-retry", "60"], 3, not_cluster,
                PASSWORD),
            "rediss+cluster:// at one TLS server": Setting(
                [SEED, "--redis", tls_cluster, "--redis-retry", "60"], 3,
                not_cluster.replace("write redis://", "write rediss://"), PASSWORD),
            "unknown scheme": Setting([SEED, "--redis", cluster.replace("redis+", "valkey+"),
                                       "--redis-retry", "60"], 2, "--redis must be a Redis URL",
                                      PASSWORD),
            "redis+sentinel://": Setting([SEED, "--redis", cluster.replace("cluster", "sentinel"),
                                          "--redis-retry", "60"], 2,
                                         "--redis must be a Redis URL", PASSWORD),
        })
        start = time.monotonic()
        results = ran_each(cases, tmp_path)
        took = time.monotonic() - start
        right = launch(Setting([SEED, "--redis", f"{base}?client_name=minicrawl-1&"
                                "socket_timeout=5&health_check_interval=0", "--quiet",
                                "--retries", "0"], 0, ""), tmp_path)
    for name, case in cases.items():
        check(case, results[name])
    # 21 processes, 4 at a time (~10 s; ~30 on a busy machine): one that waited for
    # --redis-retry 60 would make it a minute at least
    assert took < 55, took
    assert right.returncode == 0 and right.stderr == "", right.stderr  # options Redis takes


def test_redis_query_options_from_the_library_name_the_option():
    from minicrawl import Options

    with pytest.raises(ValueError, match=r"--redis has \?foo=, an option"):
        Options(redis="redis://127.0.0.1:6379/0?foo=1")
    with pytest.raises(ValueError) as info:
        Options(redis=f"redis://:{PASSWORD}@127.0.0.1:6379/0?client_name=a%20b")
    assert PASSWORD not in str(info.value) and "client_name" in str(info.value)


def test_the_table_counts_what_the_note_says():
    """README (and the note on issue 39) quote these counts: 61 + 11 + 45 + 31 rows here, 21
    Redis URLs and 22 crawls and calls in the tests above: 191 cases."""
    assert (len(HTTP), len(RIGHT), len(OPTIONS), len(API)) == (61, 11, 45, 31)
