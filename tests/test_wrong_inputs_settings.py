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
from minicrawl.local.site import LocalSite, Resource

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
         "binary.pem": gzip.compress(b"\x30\x82" * 100)}
PROXY_PW = f"http://user:{PASSWORD}@127.0.0.1:99999"
HTTP: dict[str, Setting] = {
    "--ca-bundle not PEM": refused("--ca-bundle", "notpem.pem",
                                   says="--ca-bundle 'notpem.pem' is not a PEM file"),
    "--ca-bundle empty": refused("--ca-bundle", "empty.pem", says="is not a PEM file"),
    "--ca-bundle binary": refused("--ca-bundle", "binary.pem", says="is not a PEM file"),
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
           ("password", PROXY_PW, "'http://***@127.0.0.1:99999'", "is not a valid URL"),
           ("ftp", "ftp://127.0.0.1:21", "'ftp://127.0.0.1:21'", "must be http://HOST:PORT"),
           ("no host", "http://:3128", "'http://:3128'", "has no host"))
       for core in (False, True) if not core or kind in ("SOCKS", "port")},
    "socks4 proxy": refused(says="is a SOCKS proxy", env={"http_proxy": "socks4://127.0.0.1:1"}),
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
    "--proxy empty": refused("--proxy", "", says="--proxy '' must be http://HOST:PORT"),
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
    "an empty proxy variable": Setting([SEED], 0, "", env={"HTTP_PROXY": ""}),
    "--user-agent trailing space": Setting([SEED, "--user-agent", "bot/1.0 "], 0, ""),
    "the core, good CA": Setting([SEED], 0, "", core=True,
                                 env={"SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt"}),
}


def test_the_right_neighbours_still_crawl(tmp_path):
    for case in RIGHT.values():
        case.args += [] if case.core else ["--quiet", "--retries", "0", "--ignore-robots"]
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
    with pytest.raises(ValueError, match=r"--proxy 'http://\*\*\*@h:1' has a blank"):
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
