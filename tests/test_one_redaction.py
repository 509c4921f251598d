"""Issue 45, one redaction: the same secret — ``bob:s3cret@`` in a seed, a page's link, a proxy
and a Redis URL — through each output a user gets, the crawler run from outside the process
(``run.py``, ``python -m minicrawl.core``) against real local servers. ``s3cret`` appears
nowhere; where the URL is shown at all, it is shown one way: ``bob:***@`` (the user name kept,
the password ``***``). A WARC archive holds URLs as sent: no userinfo at all."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from forwardproxy import ForwardingProxy
from warcio.archiveiterator import ArchiveIterator

from minicrawl.demo.site import LocalSite, Resource

ROOT = Path(__file__).resolve().parent.parent
SECRET = "s3cret"
SHOWN = "bob:***@"
FAST = ["--delay", "0", "--ignore-robots", "--threads", "2", "--quiet"]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


def run(cwd: Path, *args: str, core: bool = False,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "minicrawl.core"] if core else [sys.executable,
                                                                       str(ROOT / "run.py")]
    base = {k: v for k, v in os.environ.items() if k.lower() not in PROXY_VARIABLES}
    return subprocess.run([*command, *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**base, "PYTHONPATH": str(ROOT), **(env or {})})


def warc_heads(paths: list[Path]) -> str:
    """The WARC records' headers and their HTTP heads (not the pages' bytes, which are the
    server's: a page's link with a password is archived as it came)."""
    heads = []
    for path in paths:
        with path.open("rb") as f:
            for record in ArchiveIterator(f):
                heads.append(record.rec_headers.to_str())
                if record.http_headers is not None:
                    heads.append(record.http_headers.to_str())
                elif record.rec_type == "warcinfo":
                    heads.append(record.content_stream().read().decode())
    return "".join(heads)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> Iterator[dict[str, str]]:
    """Each output a user gets, by name: its text."""
    cwd = tmp_path_factory.mktemp("redaction")
    with LocalSite() as site:
        proxy = ForwardingProxy()
        try:
            with_secret = f"http://bob:{SECRET}@127.0.0.1:{site.port}"
            site.pages["/"] = Resource(f'<a href="{with_secret}/x">x</a><a href="/y">y</a>'
                                       .encode())
            site.pages["/x"] = site.pages["/y"] = Resource(b"<p>leaf</p>")
            open_seed = site.url("/")
            proxy_url = proxy.url.replace("://", f"://bob:{SECRET}@")
            # a crawl through a proxy with a password, from a seed with one, to a link with one
            crawl = run(cwd, with_secret + "/", "--proxy", proxy_url, "--out", "o.jsonl",
                        "--trace", "t.txt", "--stats", "s.json", "--report", "r.html",
                        "--warc", "a.warc.gz", *FAST)
            assert crawl.returncode == 0, crawl.stderr
            # a proxy that is down: each page's error
            down = run(cwd, open_seed, "--proxy", f"http://bob:{SECRET}@127.0.0.1:"
                       f"{closed_port()}", "--retries", "0", "--out", "down.jsonl", *FAST)
            core = run(cwd, with_secret + "/", f"http://bob:{SECRET}@[::1/", "--threads", "2",
                       core=True)
            # the core through the environment's proxy, which is down: each page's error
            core_down = run(cwd, open_seed, core=True, env={
                "http_proxy": f"http://bob:{SECRET}@127.0.0.1:{closed_port()}"})
            # the environment's proxy refused (a blank in its password: typed, read to its @)
            core_refused = run(cwd, open_seed, core=True, env={
                "http_proxy": f"http://bob:{SECRET} x@127.0.0.1:3128"})
            assert core_refused.returncode == 2, core_refused.stderr
        finally:
            proxy.close()
    refused = run(cwd, open_seed, "--proxy", f"http://bob:{SECRET}@127.0.0.1", *FAST)
    assert refused.returncode == 2
    redis = run(cwd, open_seed, "--redis", f"redis://bob:{SECRET}@127.0.0.1:{closed_port()}/0",
                "--redis-retry", "0.5", *FAST)
    assert redis.returncode == 3
    bad_seed = run(cwd, open_seed, f"http://bob:{SECRET}@[::1/", *FAST)
    yield {
        "--out": (cwd / "o.jsonl").read_text(),
        "--trace": (cwd / "t.txt").read_text(),
        "--report": (cwd / "r.html").read_text(),
        "--stats": (cwd / "s.json").read_text(),
        "crawl's stderr": crawl.stderr + crawl.stdout,
        "--out, proxy down": (cwd / "down.jsonl").read_text(),
        "stderr, proxy down": down.stderr,
        "stderr, --proxy refused": refused.stderr,
        "stderr, --redis unreachable": redis.stderr,
        "stderr, a seed skipped": bad_seed.stderr,
        "core's lines": core.stdout + core.stderr,
        "core's lines, proxy down": core_down.stdout + core_down.stderr,
        "core's stderr, proxy refused": core_refused.stderr,
        "--warc": warc_heads(sorted(cwd.glob("a*.warc.gz"))),
    }


# How each output shows the URL with the secret (None: it shows none, e.g. --stats' numbers, a
# proxy error naming no URL; the seed's credentials are taken out of its URL as the crawl starts)
SHOWN_IN = {"--out": '"url": "http://bob:***@127.0.0.1:',  # the page's link
            "--trace": "EXTRACT http://bob:***@127.0.0.1:",
            "--report": "<td>http://bob:***@127.0.0.1:",  # the --proxy setting
            "core's lines": "http://bob:***@127.0.0.1:",  # the core keeps a seed's userinfo
            "stderr, --proxy refused": "--proxy 'http://bob:***@127.0.0.1' must be",
            "stderr, --redis unreachable": "Redis at redis://bob:***@127.0.0.1:",
            "stderr, a seed skipped": "'http://bob:***@[::1/' is not a valid",
            "core's stderr, proxy refused": "http_proxy='http://bob:***@127.0.0.1:3128' has a",
            "core's lines, proxy down": None,
            "--stats": None, "crawl's stderr": None, "--out, proxy down": None,
            "stderr, proxy down": None}


@pytest.mark.parametrize("name", list(SHOWN_IN))
def test_the_secret_is_shown_one_way_or_not_at_all(outputs, name):
    text = outputs[name]
    assert SECRET not in text, text[:500]
    if SHOWN_IN[name] is not None:
        assert SHOWN_IN[name] in text, text[:500]
    # no other policy: no ***@ without the user name before it
    assert text.count("***@") == text.count(SHOWN), text[:500]


def test_a_warc_holds_urls_as_sent_without_userinfo(outputs):
    warc = outputs["--warc"]
    assert SECRET not in warc and "bob" not in warc and "***" not in warc
    targets = [line for line in warc.splitlines() if line.startswith("WARC-Target-URI: ")]
    assert targets and all(t.startswith("WARC-Target-URI: http://127.0.0.1:") for t in targets)
    assert "description: minicrawl crawl of 1 seed(s): http://127.0.0.1:" in warc
    assert any(t.endswith("/x") for t in targets)  # the page's link with the secret: fetched


def test_the_core_skips_a_seed_with_the_secret_shown_one_way(outputs):
    assert "skipped seed 'http://bob:***@[::1/'" in outputs["core's lines"]
