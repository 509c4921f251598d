"""``python -m minicrawl.core`` from outside: what a user sees (stdout lines, stderr, exit status)
and what the server sees; and what the process loads."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

import pytest

from minicrawl.demo.site import LocalSite, Request, Resource, Slow, chain
from tests.core.test_shape import LEANS_ON

HEAVY = ("redis", "numpy", "rich", "warcio", "sqlite3", "mmh3", "protego", "matplotlib")


def core(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "minicrawl.core", *args], capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.parametrize("threads", ["1", "16"])
def test_crawls_the_demo_site_once_one_line_per_page(make_site, threads: str) -> None:
    server, site = make_site()
    done = core(server.url("/"), "--threads", threads)
    assert done.returncode == 0, done.stderr
    counts = server.fetch_counts(exclude=())
    assert set(counts) == set(site.reachable()) and max(counts.values()) == 1
    lines = done.stdout.splitlines()
    assert len(lines) == len(counts)
    assert {line.split()[1] for line in lines} == {server.origin.lower() + p for p in counts}
    status, url, links, new = lines[0].split()[:4]
    assert status == "200" and url == server.origin + "/" and int(links) >= int(new) > 0
    assert f"{len(counts)} pages, 0 errors" in done.stderr
    assert "Traceback" not in done.stderr


def test_max_pages_and_threads(server: LocalSite) -> None:
    server.pages.update(chain(50))
    done = core(server.url("/"), "--threads", "4", "--max-pages", "7")
    assert done.returncode == 0
    assert len(done.stdout.splitlines()) == 7 == len(server.requests)


def test_loads_only_the_design_packages(server: LocalSite) -> None:
    """The core's process loads the standard library, requests, lxml and bitarray — none of
    the wings' packages, only what the core leans on (test_shape's LEANS_ON; bs4 only for a
    page that declares no encoding and is not ASCII)."""
    server.pages.update(chain(3))
    show = ("import atexit, runpy, sys; atexit.register(lambda: print(' '.join(sys.modules), "
            "file=sys.stderr)); sys.argv = ['core', sys.argv[1]]; "
            "runpy.run_module('minicrawl.core', run_name='__main__', alter_sys=True)")
    done = subprocess.run([sys.executable, "-c", show, server.url("/")], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    loaded = set(done.stderr.split())
    assert {"requests", "lxml.etree", "bitarray", "minicrawl.core.worker"} <= loaded
    assert not {m for m in loaded if m.split(".")[0] in (*HEAVY, "bs4")}
    leaned = {m for name in LEANS_ON for m in loaded  # and the packages they are in
              if m == name or m.startswith(name + ".") or name.startswith(m + ".")}
    assert not {m for m in loaded if m.startswith("minicrawl.") and m not in leaned and not
                m.startswith("minicrawl.core") and m != "minicrawl.version"}


@pytest.mark.parametrize("args, message", [
    (["--threads", "0"], "--threads must be at least 1, got 0"),  # run.py's words and bounds
    (["--delay", "-1"], "--delay must be at least 0, got -1.0"),
    (["--max-pages", "x"], "--max-pages"),
    (["--max-bytes", "0"], "--max-bytes must be at least 1, got 0"),
    (["--max-bytes", str(2**30 + 1)], "--max-bytes must be at most 1073741824, got 1073741825"),
])
def test_wrong_options_one_line_exit_2(args: list[str], message: str) -> None:
    done = core("http://127.0.0.1:9/", *args)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == "" and done.stderr.count("\n") == 1  # one line, no usage


def test_no_usable_seed_exit_2() -> None:
    done = core("ftp://x.test/", "not-a-url")
    assert done.returncode == 2
    assert "skipped seed 'ftp://x.test/'" in done.stderr
    assert "no seed to crawl" in done.stderr and "Traceback" not in done.stderr


def test_a_seeds_password_is_sent_to_its_origin_and_never_shown(server: LocalSite) -> None:
    """``user:pw@`` in a seed is sent as Basic auth with every request to its origin, as run.py
    sends it (it was dropped: a 401 and nothing said); no line shows the password."""
    wanted = "Basic " + base64.b64encode(b"user:pw").decode()

    def locked(body: bytes) -> Callable[[Request], Resource]:
        return lambda request: Resource(body) if request.headers.get("authorization") == wanted \
            else Resource(b"who are you?", 401, {"WWW-Authenticate": 'Basic realm="x"'})

    server.pages.update({"/auth/": locked(b'<a href="/auth/next">next</a>'),
                         "/auth/next": locked(b"<p>in</p>")})
    done = core(f"http://user:pw@127.0.0.1:{server.port}/auth/")
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.splitlines()) == [f"200 {server.url('/auth/')} 1 1",
                                                f"200 {server.url('/auth/next')} 0 0"]
    assert [r.path for r in server.requests] == ["/auth/", "/auth/next"]
    assert "pw" not in done.stdout + done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])  # SIGTERM: as run.py's
def test_ctrl_c_or_sigterm_finishes_pages_in_flight_and_exits_130(server: LocalSite,
                                                                   sig: signal.Signals) -> None:
    slow = Slow(Resource(b'<a href="/next">n</a>'), 0.5)
    server.pages.update({"/": Resource(b"".join(b'<a href="/%d">x</a>' % n for n in range(50))),
                         **{f"/{n}": slow for n in range(50)}})
    proc = subprocess.Popen([sys.executable, "-m", "minicrawl.core", server.url("/"),
                             "--threads", "4"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 20
    while slow.busy < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "interrupted after" in err and "Traceback" not in err
    # every request the server answered is a line: the pages in flight were finished
    assert len(out.splitlines()) == len(server.requests) < 51


def test_a_reader_that_stops_reading_stops_the_crawl(server: LocalSite) -> None:
    """``| head -3``: the crawl stops soon after the pipe closes, quietly, exit 0 — no traceback
    from the workers, and not the whole site fetched."""
    server.pages.update(chain(400))
    proc = subprocess.Popen(f"{sys.executable} -m minicrawl.core {server.url('/')} --threads 2 "
                            "| head -3", shell=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and len(out.splitlines()) == 3
    assert "Traceback" not in err and "Error" not in err, err
    assert len(server.requests) < 200
