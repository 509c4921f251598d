"""What users need from HTTP (issue 30), through run.py on requests, against real local servers:
cookies kept per crawl (a cookie wall passes), proxies (the environment's and --proxy), an
HTTPS site with its own CA (--ca-bundle, REQUESTS_CA_BUNDLE, SSL_CERT_FILE), a certificate
failure in one line naming the host, and br/zstd bodies decoded or recorded as undecodable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from forwardproxy import ForwardingProxy
from tlsca import make_ca

from minicrawl.demo.site import LocalSite, Request, Resource

ROOT = Path(__file__).resolve().parent.parent
# The machine's own (this one sets REQUESTS_CA_BUNDLE): each test names the CA it means.
CA_VARIABLES = {"REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"}


def run_py(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args, "--delay", "0",
                           "--quiet"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**{k: v for k, v in os.environ.items() if k not in CA_VARIABLES},
                               **(env or {})})


def records(out: Path) -> dict[str, dict]:
    return {r["url"]: r for r in map(json.loads, out.read_text().splitlines())}


# -- cookies ---------------------------------------------------------------------------------


def cookie_wall(server: LocalSite) -> None:
    """Every page wants the cookie ``wall=passed``: without it, a 302 back to the same URL that
    sets it (as consent and bot walls do); with it, the page, linking to five more."""
    def page(body: bytes):  # noqa: ANN202
        def answer(request: Request) -> Resource:
            if "wall=passed" in request.headers.get("cookie", ""):
                return Resource(body)
            return Resource(b"", 302, {"Location": request.path,
                                       "Set-Cookie": "wall=passed; Path=/"})
        return answer

    server.pages["/"] = page(b"".join(b'<a href="/p%d">p</a>' % i for i in range(5)))
    for i in range(5):
        server.pages[f"/p{i}"] = page(b"<p>behind the wall</p>")


def test_a_cookie_wall_is_passed_and_its_cookie_goes_with_every_worker(server, tmp_path):
    cookie_wall(server)
    done = run_py(server.url("/"), "--threads", "4", "--out", str(tmp_path / "o.jsonl"))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    got = records(tmp_path / "o.jsonl")
    assert {url: (r["status"], r["error"]) for url, r in got.items()} == {
        server.url(p): (200, None) for p in ["/", *(f"/p{i}" for i in range(5))]}
    counts = server.fetch_counts()
    # The wall once (no cookie yet), then the page with it; every other page once, with it.
    assert counts["/"] == 2 and all(counts[f"/p{i}"] == 1 for i in range(5))
    asked = [r for r in server.requests if r.path != "/robots.txt"]
    assert [("cookie" in r.headers) for r in asked] == [False] + [True] * 6


def test_no_cookies_keeps_none_and_a_wall_is_a_redirect_loop(server, tmp_path):
    cookie_wall(server)
    done = run_py(server.url("/"), "--no-cookies", "--out", str(tmp_path / "o.jsonl"))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    got = records(tmp_path / "o.jsonl")
    assert list(got) == [server.url("/")] and "redirect loop" in got[server.url("/")]["error"]
    assert not any("cookie" in r.headers for r in server.requests)
    assert server.fetch_counts()["/"] == 1


def test_a_wall_whose_cookie_never_sticks_ends_after_the_redirect_bound(server, tmp_path):
    """A cookie the jar refuses (for another domain) would loop forever: the chain ends at the
    bound on redirects, each hop one request."""
    server.pages["/"] = Resource(b"", 302, {"Location": "/",
                                            "Set-Cookie": "wall=passed; Domain=example.org"})
    done = run_py(server.url("/"), "--out", str(tmp_path / "o.jsonl"))
    assert done.returncode == 0, done.stderr
    assert "more than 10 redirects" in records(tmp_path / "o.jsonl")[server.url("/")]["error"]
    assert server.fetch_counts()["/"] == 11


# -- proxies ---------------------------------------------------------------------------------


@pytest.fixture
def proxy():
    proxy = ForwardingProxy()
    yield proxy
    proxy.close()


def small_site(server: LocalSite) -> set[str]:
    server.pages["/"] = Resource(b'<a href="/a">a</a><a href="/b">b</a>')
    server.pages["/a"] = server.pages["/b"] = Resource(b"<p>leaf</p>")
    return {server.url(p) for p in ("/", "/a", "/b")}


def test_a_crawl_goes_through_the_proxy_the_environment_names(server, proxy, tmp_path):
    urls = small_site(server)
    done = run_py(server.url("/"), "--out", str(tmp_path / "o.jsonl"),
                  env={"http_proxy": proxy.url})
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert {u for u, r in records(tmp_path / "o.jsonl").items() if r["status"] == 200} == urls
    # Every request went through the proxy, in the absolute form, robots.txt included.
    assert sorted(proxy.request_lines) == sorted(
        f"GET {u} HTTP/1.1" for u in [*urls, server.url("/robots.txt")])


def test_no_proxy_sends_the_crawl_direct(server, proxy, tmp_path):
    urls = small_site(server)
    done = run_py(server.url("/"), "--out", str(tmp_path / "o.jsonl"),
                  env={"HTTP_PROXY": proxy.url, "NO_PROXY": "127.0.0.1"})
    assert done.returncode == 0, done.stderr
    assert {u for u, r in records(tmp_path / "o.jsonl").items() if r["status"] == 200} == urls
    assert proxy.request_lines == []


def test_proxy_option_wins_over_the_environment_and_its_password_is_not_shown(
        server, proxy, tmp_path):
    urls = small_site(server)
    with_password = proxy.url.replace("://", "://crawler:s3cret-pw@")
    done = run_py(server.url("/"), "--out", str(tmp_path / "o.jsonl"), "--proxy", with_password,
                  "--stats", str(tmp_path / "stats.json"),
                  env={"http_proxy": "http://127.0.0.1:9", "no_proxy": "127.0.0.1"})
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert {u for u, r in records(tmp_path / "o.jsonl").items() if r["status"] == 200} == urls
    assert len(proxy.request_lines) == 4
    assert all(auth and auth.startswith("Basic ") for auth in proxy.proxy_auth)
    for path in tmp_path.iterdir():
        assert "s3cret-pw" not in path.read_text(), path
    assert "s3cret-pw" not in done.stderr + done.stdout


def test_the_workers_read_the_environments_proxies_once_per_origin(server, monkeypatch):
    """Eight workers on one host, each fetching from it: the environment's proxies for the
    origin are read once for the crawl, not once a worker (~0.16 ms each: at ×64 on 8 hosts 512
    reads instead of 8, issue 49). The reads are counted on the real lookup."""
    import minicrawl.http.proxies
    from minicrawl import Crawler
    from minicrawl.demo.site import Slow

    reads: list[str] = []
    lookup = minicrawl.http.proxies.get_environ_proxies

    def counted(url: str, no_proxy: str | None = None) -> dict[str, str]:
        reads.append(url)
        return lookup(url, no_proxy)

    monkeypatch.setattr(minicrawl.http.proxies, "get_environ_proxies", counted)
    slow = Slow(Resource(b"<p>leaf</p>"), 0.05)  # slow answers: every worker gets one
    server.pages["/"] = Resource("".join(f'<a href="/p/{n}">p</a>' for n in range(40)).encode())
    for n in range(40):
        server.pages[f"/p/{n}"] = slow
    Crawler([server.url("/")], threads=8, delay=0, per_host=8, ignore_robots=True).run()
    assert set(server.fetch_counts().values()) == {1} and slow.peak >= 4, slow.peak
    assert reads == [server.url("/").rstrip("/")]


def test_an_https_crawl_goes_through_the_https_proxy_in_a_tunnel(https_site, proxy, tmp_path):
    """https_proxy: the proxy sees only CONNECT lines (the pages travel in TLS through it), and
    the certificate is still checked against the site's CA, end to end."""
    site, ca = https_site
    done = run_py(site.url("/"), "--out", str(tmp_path / "o.jsonl"), "--ca-bundle", str(ca.ca),
                  env={"https_proxy": proxy.url})
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    got = records(tmp_path / "o.jsonl")
    assert {u: r["status"] for u, r in got.items()} == {site.url("/"): 200, site.url("/a"): 200}
    authority = site.origin.removeprefix("https://")
    assert proxy.request_lines  # one tunnel or more (http.client asks in HTTP/1.0), nothing else
    assert all(line.startswith(f"CONNECT {authority} HTTP/1.") for line in proxy.request_lines)


@pytest.mark.parametrize("proxy_url, problem", [
    ("127.0.0.1:3128", "must be http://HOST:PORT"),
    ("socks5://127.0.0.1:1080", "is a SOCKS proxy, which needs PySocks"),  # not installed
    ("http://127.0.0.1:99999", "not a valid URL"),
])
def test_a_wrong_proxy_option_is_one_line_and_exit_2(proxy_url, problem):
    done = run_py("http://127.0.0.1:1/", "--proxy", proxy_url)
    assert done.returncode == 2 and problem in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


# -- certificates ----------------------------------------------------------------------------


@pytest.fixture
def https_site(tmp_path, request):
    ca = make_ca(tmp_path, self_signed=getattr(request, "param", False))
    site = LocalSite(tls=ca.server_context()).start()
    site.pages["/"] = Resource(b'<a href="/a">a</a>')
    site.pages["/a"] = Resource(b"<p>secure</p>")
    yield site, ca
    site.stop()


@pytest.mark.parametrize("how", ["--ca-bundle", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"])
def test_an_https_site_with_its_own_ca_is_crawled_given_the_ca(https_site, tmp_path, how):
    site, ca = https_site
    flags, env = (["--ca-bundle", str(ca.ca)], {}) if how == "--ca-bundle" else ([],
                                                                              {how: str(ca.ca)})
    done = run_py(site.url("/"), "--out", str(tmp_path / "o.jsonl"), *flags, env=env)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    got = records(tmp_path / "o.jsonl")
    assert {u: r["status"] for u, r in got.items()} == {site.url("/"): 200, site.url("/a"): 200}


@pytest.mark.parametrize("https_site, problem", [
    (False, "unable to get local issuer certificate"), (True, "self-signed certificate")],
    indirect=["https_site"], ids=["own-ca", "self-signed"])
def test_a_certificate_no_ca_vouches_for_fails_in_one_line_naming_host_and_problem(
        https_site, problem, tmp_path):
    site, _ = https_site
    done = run_py(site.url("/"), "--out", str(tmp_path / "o.jsonl"), "--retries", "0")
    assert "Traceback" not in done.stderr
    error = records(tmp_path / "o.jsonl")[site.url("/")]["error"]  # robots.txt's, first
    assert error == ("robots.txt unreachable: SSLError: 127.0.0.1: [SSL: CERTIFICATE_VERIFY_FAILED]"
                     f" certificate verify failed: {problem}")


def test_a_missing_ca_bundle_is_one_line_and_exit_2(tmp_path):
    done = run_py("http://127.0.0.1:1/", "--ca-bundle", str(tmp_path / "nope.pem"))
    assert done.returncode == 2 and "--ca-bundle" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


# -- br and zstd -----------------------------------------------------------------------------

LINKS = b'<html><body><a href="/a">a</a><a href="/b">b</a></body></html>'


def encoded_site(server: LocalSite, coding: str) -> None:
    """``/`` sent with ``coding`` whatever the request asked for (as misconfigured servers do)."""
    if coding == "br":
        import brotli
        body = brotli.compress(LINKS)
    else:
        from backports import zstd  # the compression extra, as urllib3 finds it before 3.14
        body = zstd.compress(LINKS)
    server.pages["/"] = Resource(body, 200, {"Content-Type": "text/html",
                                             "Content-Encoding": coding})
    server.pages["/a"] = server.pages["/b"] = Resource(b"<p>leaf</p>")


@pytest.mark.parametrize("coding", ["br", "zstd"])
def test_br_and_zstd_are_decoded_with_the_compression_extra(server, tmp_path, coding):
    encoded_site(server, coding)
    done = run_py(server.url("/"), "--out", str(tmp_path / "o.jsonl"))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    got = records(tmp_path / "o.jsonl")
    assert {u: (r["status"], r["error"]) for u, r in got.items()} == {
        server.url(p): (200, None) for p in ("/", "/a", "/b")}
    asked = next(r for r in server.requests if r.path == "/").headers["accept-encoding"]
    assert coding in asked.split(", ")


WITHOUT_THE_EXTRA = """
import runpy, sys
for name in ("brotli", "brotlicffi", "backports.zstd", "compression.zstd", "zstandard"):
    sys.modules[name] = None  # as if not installed
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.parametrize("coding", ["br", "zstd"])
def test_without_the_extra_such_a_body_is_a_decode_error_never_html(server, tmp_path, coding):
    encoded_site(server, coding)
    out = tmp_path / "o.jsonl"
    done = subprocess.run([sys.executable, "-c", WITHOUT_THE_EXTRA, str(ROOT / "run.py"),
                           server.url("/"), "--out", str(out), "--delay", "0", "--quiet"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    page = records(out)[server.url("/")]
    assert page["error"] == f"DecodeError: Content-Encoding '{coding}' is not undone here"
    assert page["links"] == 0 and set(server.fetch_counts()) == {"/"}
    asked = next(r for r in server.requests if r.path == "/").headers["accept-encoding"]
    assert asked == "gzip, deflate"


# -- open files ------------------------------------------------------------------------------


def test_open_files_stay_bounded_while_crawling_many_hosts(loopback_hosts, tmp_path):
    """120 hosts, 4 workers: each worker keeps connections to its 10 most recent hosts, so the
    process never holds anything like one socket per host (sampled from /proc, outside it;
    about 45 here, and near 300 with the pools unbounded)."""
    sites = loopback_hosts(120, 2)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(site.url("/") + "\n" for site in sites))
    env = {k: v for k, v in os.environ.items() if k not in CA_VARIABLES}
    crawl = subprocess.Popen([sys.executable, str(ROOT / "run.py"), str(seeds), "--delay", "0",
                              "--quiet", "--threads", "4",
                              "--out", str(tmp_path / "o.jsonl")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             cwd=ROOT, env=env)
    fds = Path(f"/proc/{crawl.pid}/fd")
    most = 0
    while crawl.poll() is None:
        try:
            most = max(most, len(list(fds.iterdir())))
        except (FileNotFoundError, ProcessLookupError):
            break
        time.sleep(0.005)
    assert crawl.wait(120) == 0, crawl.stderr.read()
    assert sum(1 for _ in (tmp_path / "o.jsonl").open()) == 360
    assert 0 < most <= 4 * 10 + 30, most  # 4 workers × 10 pools, and the files of the crawl
