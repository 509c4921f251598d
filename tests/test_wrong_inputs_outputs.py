"""Issue 39, outputs and secrets: nothing a user types overwrites their files, and no password is
written anywhere.

A table of command lines, each run as a user would (a subprocess of ``run.py`` or
``python -m minicrawl.core``, in a directory of its own holding the user's files: two seed
files, notes, a CA bundle, an earlier ``--out``), against real local servers: one open, one that
asks for Basic authentication. Each row checks, with the harness of the earlier rounds
(``tests/test_wrong_inputs.py``: ``Case``/``check``) for its refusals:

* the exit status (2 refused up front, 1 a failure during the crawl, 0 done) and stderr: no
  traceback, one line for an error (naming what it says once), at most the lines the row allows;
* the files left behind: every file the user had is byte-for-byte unchanged (but an earlier
  output the row overwrites), and nothing new but the outputs the row names;
* no password anywhere: stdout, stderr and every file left behind (gzip members inflated),
  neither as written nor as the Basic ``Authorization`` value it is sent as.
"""

from __future__ import annotations

import base64
import fnmatch
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

import certifi
import pytest
from test_wrong_inputs import ROOT, Case, check, limited  # the harness of the earlier rounds
from tlsca import make_ca

from minicrawl.demo.site import LocalSite, Request, Resource

USER = "crawler"
# Passwords as a URL's userinfo may hold them: ' " : ; and @ percent-encoded (%40), or raw.
# Each is made of runs of 5+ letters and digits, so a leak of any part of it is found (a run of
# 5 is not met by chance in a WARC or a Bloom filter).
PASSWORDS = {
    "plain": "Xq7Lf9Zv2Bn",
    "quote": "Xq7Lf'Zv9Bn",
    "at sign": "Xq7Lf%40Zv9Bn",
    "colon": "Xq7Lf:Zv9Bn",
    "double quote": "Xq7Lf%22Zv9Bn",
    "semicolon and raw @": "Xq7Lf;Zv9Bn@Kp3Hd",
}
SECRET_RUNS = ("Xq7Lf", "Zv9Bn", "Kp3Hd", "Lf9Zv2Bn")


def basic(password: str) -> str:
    """The Authorization value a client sends for ``USER:password`` (as written in a URL)."""
    return "Basic " + base64.b64encode(f"{USER}:{unquote(password)}".encode()).decode()


def needles() -> list[bytes]:
    """What must appear nowhere: each run of every password, and each Basic credential."""
    found = [run.encode() for run in SECRET_RUNS]
    for password in PASSWORDS.values():
        found.append(basic(password).split()[1].encode())
    return found


@dataclass
class Row:
    """One command line and what it must leave behind."""

    # {url}: the open site's root; {locked:NAME}: the locked site, with PASSWORDS[NAME]
    args: list[str]
    code: int
    says: str | None = None  # in stderr, once; None: stderr is empty (but ``lines`` allows)
    # names (fnmatch patterns) the row may leave; those without a wildcard must exist
    creates: tuple[str, ...] = ()
    changes: tuple[str, ...] = ()  # the user's files the row may change (an earlier --out)
    # pipe, full (/dev/full), closed (the reader takes a line and leaves: | head -1), file:NAME
    stdout: str = "pipe"
    core: bool = False  # python -m minicrawl.core, not run.py
    env: dict[str, str] = field(default_factory=dict)
    lines: int = 0  # stderr lines allowed besides ``says``'s (a summary sent to stderr)
    fsize: int | None = None  # a full disk: files cannot grow past this many bytes
    then: Callable[[Path, subprocess.CompletedProcess], None] | None = None  # more checks


FAST = ["--delay", "0", "--ignore-robots", "--threads", "2"]
QUIET = [*FAST, "--quiet"]
# A TLS Redis URL naming prepare()'s tls/ files (port 1: a refused row never connects)
REDISS = ("rediss://127.0.0.1:1/0?ssl_ca_certs=tls/ca.pem&ssl_certfile=tls/site.pem"
          "&ssl_keyfile=tls/site-key.pem")


def refused(*args: str, says: str, **kw: object) -> Row:
    """Refused up front: exit 2, one line, nothing created, nothing fetched."""
    return Row(list(args), 2, says, **kw)


def crawl(*args: str, code: int = 0, **kw: object) -> Row:
    """A crawl of the open site, quiet (no summary)."""
    return Row(["{url}", *args, *QUIET], code, **kw)


# -- checks a row adds ------------------------------------------------------------------------

def json_lines(name: str | None = None, at_least: int = 2) -> Callable:
    """The file ``name`` (or stdout) is JSON lines only, one per page: no summary mixed in."""
    def verify(cwd: Path, done: subprocess.CompletedProcess) -> None:
        text = (cwd / name).read_text() if name else done.stdout
        records = [json.loads(line) for line in text.splitlines()]
        assert len(records) >= at_least and all("url" in r for r in records), text[:300]
    return verify


def stats_json(cwd: Path, done: subprocess.CompletedProcess) -> None:
    assert json.loads(done.stdout)["pages"] >= 2


def pages_with_credentials(name: str) -> Callable:
    """The locked site was crawled past its seed (the credentials sent with every request to
    its origin, robots.txt too), and no record's URL holds them."""
    def verify(cwd: Path, done: subprocess.CompletedProcess) -> None:
        records = [json.loads(line) for line in (cwd / name).read_text().splitlines()]
        assert len(records) >= 3 and all(r["status"] == 200 for r in records), records[:2]
        assert not any("@" in r["url"] for r in records), records[0]["url"]
    return verify


def warc_clean(name: str) -> Callable:
    """Every WARC-Target-URI without userinfo; no request record carries Authorization."""
    def verify(cwd: Path, done: subprocess.CompletedProcess) -> None:
        from warcio.archiveiterator import ArchiveIterator

        kinds = set()
        with open(cwd / name, "rb") as f:
            for record in ArchiveIterator(f):
                kinds.add(record.rec_type)
                uri = record.rec_headers.get_header("WARC-Target-URI") or ""
                assert "@" not in uri, uri
                if record.rec_type == "request":
                    assert record.http_headers.get_header("Authorization") is None
        assert {"warcinfo", "request", "response"} <= kinds
    return verify


def no_state(cwd: Path, done: subprocess.CompletedProcess) -> None:
    assert not (cwd / "st").exists()


# -- the table ---------------------------------------------------------------------------------

ROWS: dict[str, Row] = {
    # -- an output naming an input: refused before anything is written
    **{f"--{flag} naming the seed file": refused("s1.txt", f"--{flag}", "s1.txt", *FAST,
                                                 says=f"--{flag} 's1.txt' is the seed file")
       for flag in ("out", "stats", "trace", "report")},
    "--out naming the seed file differently": refused(
        "./s1.txt", "--out", "s1.txt", *FAST, says="--out 's1.txt' is the seed file './s1.txt'"),
    "--out through a symlink to the seed file": refused(
        "s1.txt", "--out", "link.txt", *FAST, says="--out 'link.txt' is the seed file"),
    "--out a hard link of the seed file": refused(
        "s1.txt", "--out", "hard.txt", *FAST, says="--out 'hard.txt' is the seed file"),
    "--out naming the second seed file": refused(
        "s1.txt", "s2.txt", "--out", "s2.txt", *FAST, says="is the seed file 's2.txt'"),
    "--warc rolled-over name naming the seed file": refused(
        "seeds-00000.warc.gz", "--warc", "seeds.warc.gz", *FAST,
        says="--warc 'seeds.warc.gz' is the seed file 'seeds-00000.warc.gz'"),
    "--out naming --ca-bundle": refused(
        "{url}", "--ca-bundle", "ca.pem", "--out", "ca.pem", *FAST,
        says="--out 'ca.pem' is --ca-bundle 'ca.pem'"),
    "--stats naming SSL_CERT_FILE": refused(
        "{url}", "--stats", "ca.pem", *FAST, env={"SSL_CERT_FILE": "ca.pem"},
        says="--stats 'ca.pem' is SSL_CERT_FILE 'ca.pem'"),
    "--report naming REQUESTS_CA_BUNDLE": refused(
        "{url}", "--report", "ca.pem", *FAST, env={"REQUESTS_CA_BUNDLE": "ca.pem"},
        says="--report 'ca.pem' is REQUESTS_CA_BUNDLE"),
    # -- the files a --redis URL names (a TLS client's CA, certificate and key): inputs too
    "--out naming --redis ?ssl_keyfile=": refused(
        "{url}", "--out", "tls/site-key.pem", "--redis", REDISS, *FAST,
        says="--out 'tls/site-key.pem' is --redis ?ssl_keyfile='tls/site-key.pem'"),
    "--stats naming --redis ?ssl_certfile=, differently": refused(
        "{url}", "--stats", "./tls/site.pem", "--redis", REDISS, *FAST,
        says="--stats './tls/site.pem' is --redis ?ssl_certfile='tls/site.pem'"),
    "--report naming --redis ?ssl_ca_certs=": refused(
        "{url}", "--report", "tls/ca.pem", "--redis", REDISS, *FAST,
        says="--report 'tls/ca.pem' is --redis ?ssl_ca_certs='tls/ca.pem'"),
    # redis:// takes no TLS files: refused as such before the outputs are looked at
    "--out naming ?ssl_keyfile= of a redis:// URL": refused(
        "{url}", "--out", "tls/site-key.pem", "--redis", "redis" + REDISS[6:], *FAST,
        says="a TLS option: it needs rediss://"),
    # -- argparse took the first seed file as --trace's FILE; other files that are no output
    "--trace s1.txt s2.txt": refused(
        "--trace", "s1.txt", "s2.txt", *FAST,
        says="--trace 's1.txt' exists and is not a trace"),
    "--trace s1.txt s2.txt names the mistake": refused(
        "--trace", "s1.txt", "s2.txt", *FAST, says="put --trace after the seeds"),
    "--out an existing text file": refused(
        "{url}", "--out", "notes.txt", *FAST, says="--out 'notes.txt' exists and is not a JSON"),
    "--stats an existing text file": refused(
        "{url}", "--stats", "notes.txt", *FAST, says="--stats 'notes.txt' exists and is not a"),
    "--report an existing text file": refused(
        "{url}", "--report", "notes.txt", *FAST, says="is not a HTML report"),
    "--trace an existing JSON file": refused(
        "{url}", "--trace", "old.jsonl", *FAST, says="--trace 'old.jsonl' exists and is not"),
    "--warc an existing rolled-over file that is no WARC": refused(
        "{url}", "--warc", "arc.warc.gz", *FAST, says="--warc 'arc-00001.warc.gz' exists and "
        "is not a WARC file"),
    "--warc-max-size 0, an existing file that is no WARC": refused(
        "{url}", "--warc", "arc-00001.warc.gz", "--warc-max-size", "0", *FAST,
        says="is not a WARC file"),
    "bloom plot over a seed file": refused("bloom", "plot", "s1.txt",
                                           says="'s1.txt' exists and is not a PNG image"),
    "bloom plot over notes": refused("bloom", "plot", "notes.txt", says="is not a PNG image"),
    # -- two outputs, one file
    "--out X --warc X": refused("{url}", "--out", "x.warc.gz", "--warc", "x.warc.gz", *FAST,
                                says="--out and --warc both name 'x.warc.gz'"),
    "--out X --warc X, one file": refused(
        "{url}", "--out", "x.warc.gz", "--warc", "x.warc.gz", "--warc-max-size", "0", *FAST,
        says="both name 'x.warc.gz'"),
    "--out a WARC's rolled-over name": refused(
        "{url}", "--out", "x-00000.warc.gz", "--warc", "x.warc.gz", *FAST,
        says="--out 'x-00000.warc.gz' is a file name --warc 'x.warc.gz' rolls over to"),
    "--stats a WARC's later name": refused(
        "{url}", "--stats", "x-00042.warc.gz", "--warc", "x.warc.gz", *FAST,
        says="--stats 'x-00042.warc.gz' is a file name --warc"),
    "--trace and --report one file": refused(
        "{url}", "--trace", "t.txt", "--report", "./t.txt", *FAST,
        says="--trace and --report both name"),
    "--out inside --state": refused("{url}", "--state", "st", "--out", "st/out.jsonl", *FAST,
                                    says="--out 'st/out.jsonl' is inside --state 'st'"),
    "--stats the state's database": refused(
        "{url}", "--state", "st", "--stats", "st/crawl.db", *FAST, says="is inside --state"),
    "--save-pages inside --state": refused(
        "{url}", "--state", "st", "--save-pages", "st/pages", *FAST,
        says="--save-pages 'st/pages' is inside --state 'st'"),
    # -- standard output: "-" for --out, --stats, --trace; one output at a time
    "--out - --stats -": refused("{url}", "--out", "-", "--stats", "-", *FAST,
                                 says="--out and --stats both write to standard output"),
    "--out - --trace": refused("{url}", "--out", "-", *FAST, "--trace",
                               says="--out and --trace both write to standard output"),
    "--out /dev/stdout --stats -": refused(
        "{url}", "--out", "/dev/stdout", "--stats", "-", *FAST, says="both write to standard"),
    "--report -": refused("{url}", "--report", "-", *FAST,
                          says="--report '-': standard output cannot take it; give a file"),
    "--state -": refused("{url}", "--state", "-", *FAST, says="--state '-': standard output "
                         "cannot take it; give a directory"),
    "--save-pages -": refused("{url}", "--save-pages", "-", *FAST, says="--save-pages '-':"),
    "--out -": crawl("--out", "-", then=json_lines()),
    "--out - with the summary": Row(["{url}", "--out", "-", *FAST], 0, says="Crawl finished",
                                    lines=40, then=json_lines()),
    "--stats -": crawl("--stats", "-", then=stats_json),
    "--out ./- is a file": crawl("--out", "./-", creates=("-",), then=json_lines("-")),
    "--out /dev/stdout into a file": Row(
        ["{url}", "--out", "/dev/stdout", *FAST], 0, says="Crawl finished", lines=40,
        stdout="file:o.txt", creates=("o.txt",), then=json_lines("o.txt")),
    "--out naming the file stdout goes to": Row(
        ["{url}", "--out", "o.txt", *FAST], 0, says="Crawl finished", lines=40,
        stdout="file:o.txt", creates=("o.txt",), then=json_lines("o.txt")),
    "--trace /dev/stdout into a file": crawl("--trace", "/dev/stdout", stdout="file:o.txt",
                                             creates=("o.txt",)),
    "an earlier --out is overwritten": crawl("--out", "old.jsonl", changes=("old.jsonl",),
                                             then=json_lines("old.jsonl")),
    "an earlier --stats is overwritten": crawl("--stats", "old-stats.json",
                                               changes=("old-stats.json",)),
    "an earlier trace is overwritten": crawl("--trace", "old-trace.txt",
                                             changes=("old-trace.txt",)),
    "an earlier report is overwritten": crawl("--report", "old.html", changes=("old.html",)),
    "an empty file is a fine --out": crawl("--out", "empty.txt", changes=("empty.txt",),
                                           then=json_lines("empty.txt")),
    # -- standard output that cannot be written: a closed pipe is the reader's choice (exit 0,
    # nothing said); a full device is a failure (exit 1, one line)
    "summary into a closed pipe": Row(["{url}", *FAST], 0, stdout="closed"),
    "--out - into a closed pipe": crawl("--out", "-", stdout="closed"),
    "--trace - into a closed pipe": crawl("--trace", "-", stdout="closed"),
    "--help into a closed pipe": Row(["--help"], 0, stdout="closed"),
    "summary into /dev/full": Row(["{url}", *FAST], 1, stdout="full",
                                  says="minicrawl: cannot write standard output: No space left"),
    "--out - into /dev/full": crawl("--out", "-", stdout="full", code=1,
                                    says="--out standard output: cannot write: No space left"),
    "--trace - into /dev/full": crawl("--trace", "-", stdout="full", code=1,
                                      says="--trace standard output: cannot write"),
    "--stats - into /dev/full": crawl("--stats", "-", stdout="full", code=1,
                                      says="--stats standard output: cannot write"),
    "--version into /dev/full": Row(["--version"], 1, stdout="full",
                                    says="cannot write standard output"),
    "--help into /dev/full": Row(["--help"], 1, stdout="full",
                                 says="cannot write standard output"),
    "usage error, stdout full": refused("{url}", "--threads", "0", stdout="full",
                                        says="--threads must be at least 1"),
    "the core into a closed pipe": Row(["{url}", "--threads", "2"], 0, core=True,
                                       stdout="closed", says="pages, 0 errors"),
    "the core into /dev/full": Row(["{url}", "--threads", "2"], 1, core=True, stdout="full",
                                   says="cannot write standard output: No space left"),
    # --help fails at its write when stdout is unbuffered (argparse passed over it: exit 0),
    # else at the flush at exit (Python's "Exception ignored" and exit 120): each way one line
    "the core's --help into /dev/full": Row(["--help"], 1, core=True, stdout="full",
                                            says="cannot write standard output: No space left"),
    "the core's --help into /dev/full, buffered": Row(
        ["--help"], 1, core=True, stdout="full", env={"PYTHONUNBUFFERED": ""},
        says="cannot write standard output: No space left"),
    "the core's --help into a closed pipe": Row(["--help"], 0, core=True, stdout="closed"),
    "--help into /dev/full, buffered": Row(["--help"], 1, stdout="full",
                                           env={"PYTHONUNBUFFERED": ""},
                                           says="cannot write standard output"),
    # -- a full disk under --state: a failure during the crawl (1), told once
    "a full disk under --state": Row(["{url}", "--state", "st", *QUIET], 1, fsize=100_000,
                                     says="cannot write st/crawl.db", creates=("st", "st/*")),
    "a full disk as the state opens": Row(["{url}", "--state", "st", *QUIET], 1, fsize=30_000,
                                          says="minicrawl: cannot write st/crawl.db: disk I/O"),
    # -- refused up front: no --state directory left bound to the refused configuration
    "refused --out, no state left": refused("s1.txt", "--state", "st", "--out", "s1.txt", *FAST,
                                            says="is the seed file", then=no_state),
    "refused --trace, no state left": refused("--trace", "s1.txt", "s2.txt", "--state", "st",
                                              *FAST, says="is not a trace", then=no_state),
    "refused --redis, no state left": refused(
        "{url}", "--state", "st", "--redis", "redis://127.0.0.1:1/0", *FAST,
        says="--state keeps the crawl of one process", then=no_state),
    "--recrawl without --state, no WARC left": refused(
        "{url}", "--recrawl", "--warc", "y.warc.gz", *FAST, says="--recrawl and --forget-gone"),
    "a state that is another crawl's, untouched": Row(
        ["s2.txt", "--state", "other", "--warc", "z.warc.gz", *FAST], 2,
        says="belongs to a crawl with another configuration",
        changes=("other/lock",)),  # its lock names the process that last held it
}

# -- secrets: a seed's password in every output, in each spelling a URL allows ---------------
ALL_OUTPUTS = ["--out", "o.jsonl", "--trace", "t.txt", "--stats", "s.json", "--warc",
               "a.warc.gz", "--report", "r.html", "--save-pages", "pages"]
ALL_CREATED = ("o.jsonl", "t.txt", "s.json", "a-00000.warc.gz", "r.html", "pages", "pages/*")
for name in PASSWORDS:
    ROWS[f"password ({name}) in every output"] = Row(
        [f"{{locked:{name}}}", *ALL_OUTPUTS, *QUIET], 0, creates=ALL_CREATED,
        then=pages_with_credentials("o.jsonl"))
    ROWS[f"password ({name}) in the trace on stdout"] = Row(
        [f"{{locked:{name}}}", "--trace", "-", *FAST], 0)
    ROWS[f"password ({name}) of a skipped seed"] = Row(
        ["{url}", f"http://{USER}:{PASSWORDS[name]}@[::1/", *QUIET], 0,
        says="is not a valid http(s) URL")
    ROWS[f"password ({name}) in the core's lines"] = Row(
        [f"{{locked:{name}}}", "--threads", "2"], 0, core=True, says="pages, 0 errors")
    ROWS[f"password ({name}) of the core's skipped seed"] = Row(
        ["{url}", f"ftp://{USER}:{PASSWORDS[name]}@example.org/", "--threads", "2"], 0,
        core=True, says="skipped seed", lines=1)
ROWS.update({
    "password in the WARC": Row(["{locked:quote}", "--warc", "w.warc.gz", *QUIET], 0,
                                creates=("w-00000.warc.gz",), then=warc_clean("w-00000.warc.gz")),
    "password in one WARC file": Row(
        ["{locked:at sign}", "--warc", "w.warc.gz", "--warc-max-size", "0", *QUIET], 0,
        creates=("w.warc.gz",), then=warc_clean("w.warc.gz")),
    "password with --state": Row(["{locked:semicolon and raw @}", "--state", "st", "--out",
                                  "o.jsonl", *QUIET], 0, creates=("st", "st/*", "o.jsonl"),
                                 then=pages_with_credentials("o.jsonl")),
    "password with --state and robots.txt": Row(
        ["{locked:colon}", "--state", "st", "--out", "o.jsonl", "--delay", "0", "--quiet"], 0,
        creates=("st", "st/*", "o.jsonl"), then=pages_with_credentials("o.jsonl")),
    "password with --sitemaps": Row(  # 404, not 401: the sitemap was asked with credentials
        ["{locked:plain}", "--sitemaps", "--out", "o.jsonl", *QUIET], 0, creates=("o.jsonl",),
        says="/sitemap.xml: HTTP 404"),
    "password in a seed file": Row(["locked.txt", "--out", "o.jsonl", "--trace", "-", *FAST], 0,
                                   creates=("o.jsonl",), then=pages_with_credentials("o.jsonl")),
    "password in a seed file's later line": Row(
        ["locked-later.txt", "--out", "o.jsonl", "--trace", "-", *FAST], 0,
        creates=("o.jsonl",), then=pages_with_credentials("o.jsonl")),
    "--redis ?password= refused": refused(
        "{url}", "--redis", "redis://127.0.0.1:6379/x?password=Xq7Lf'Zv9Bn",
        says="must end in a database number"),
    "--redis password with a quote refused": refused(
        "{url}", "--redis", "redis://:Xq7Lf'Zv9Bn@127.0.0.1:6379/x",
        says="must end in a database number"),
    "--redis without a scheme refused": refused(
        "{url}", "--redis", ":Xq7Lf'Zv9Bn@127.0.0.1:6379/0", says="--redis must be a Redis URL"),
    "--proxy without a scheme refused": refused(
        "{url}", "--proxy", "crawler:Xq7Lf'Zv9Bn@127.0.0.1:3128", says="--proxy"),
    "--proxy without a port refused": refused(
        "{url}", "--proxy", "http://crawler:Xq7Lf@Zv9Bn@127.0.0.1", says="--proxy"),
    "--proxy with a port out of range refused": refused(
        "{url}", "--proxy", "http://crawler:Xq7Lf@Zv9Bn@127.0.0.1:99999", says="--proxy"),
    "a proxy's password in every output": Row(
        ["{url}", "--proxy", "http://crawler:Xq7Lf'Zv9Bn@127.0.0.1:9", "--retries", "0",
         *ALL_OUTPUTS, *QUIET], 0, creates=(*ALL_CREATED[:-2], "pages*")),  # maybe no pages/
    "--out naming a seed file that holds a password": refused(
        "locked.txt", "--out", "locked.txt", *FAST, says="is the seed file 'locked.txt'"),
})


# -- running a row ------------------------------------------------------------------------------

def prepare(directory: Path, url: str, locked: str) -> None:
    """The user's files: what every row must leave as they were (made once, then copied)."""
    (directory / "s1.txt").write_text(url + "\n")
    (directory / "s2.txt").write_text(f"# more seeds\n{url}p3\n")
    (directory / "seeds-00000.warc.gz").write_text(url + "\n")  # a seed file, oddly named
    (directory / "locked.txt").write_text(locked.format(password=PASSWORDS["quote"]) + "\n")
    # A seed file's first seed is read as the crawl is made, the rest while it runs (streamed)
    (directory / "locked-later.txt").write_text(
        url + "\n" + locked.format(password=PASSWORDS["quote"]) + "\n")
    (directory / "notes.txt").write_text("my notes: keep them\n")
    (directory / "old.jsonl").write_text('{"url": "http://example.org/", "seq": null}\n')
    (directory / "arc-00001.warc.gz").write_text("not an archive\n")
    (directory / "old-stats.json").write_text('{\n  "pages": 1\n}')  # earlier outputs
    (directory / "old-trace.txt").write_text(f"SEED {url} → TODO (depth 0)\n")
    (directory / "old.html").write_text("<!DOCTYPE html>\n<html><body>old</body></html>\n")
    (directory / "empty.txt").write_bytes(b"")
    shutil.copy(certifi.where(), directory / "ca.pem")
    (directory / "link.txt").symlink_to("s1.txt")
    os.link(directory / "s1.txt", directory / "hard.txt")
    (directory / "adir").mkdir()
    (directory / "tls").mkdir()  # a CA, a certificate and its key (a --redis TLS client's)
    make_ca(directory / "tls")
    other = directory / "other"  # the state of another crawl (other seeds)
    subprocess.run([sys.executable, str(ROOT / "run.py"), "s1.txt", "--state", str(other),
                    "--max-pages", "1", *QUIET], cwd=directory, check=True, timeout=60,
                   capture_output=True)


def snapshot(directory: Path) -> dict[str, bytes | None]:
    """Every path under ``directory``: a file's bytes (a symlink's target), None for a folder."""
    found: dict[str, bytes | None] = {}
    for path in sorted(directory.rglob("*")):
        name = path.relative_to(directory).as_posix()
        found[name] = (os.readlink(path).encode() if path.is_symlink()
                       else None if path.is_dir() else path.read_bytes())
    return found


def execute(row: Row, cwd: Path, urls: dict[str, str]) -> subprocess.CompletedProcess:
    args = [urls[a[1:-1]] if a.startswith("{") and a.endswith("}") else a for a in row.args]
    command = ([sys.executable, "-m", "minicrawl.core"] if row.core
               else [sys.executable, str(ROOT / "run.py")])
    env = {**os.environ, "PYTHONPATH": str(ROOT), **row.env}
    preexec = limited(row.fsize) if row.fsize else None
    if row.stdout == "closed":  # the reader takes one line and leaves: `| head -1`
        proc = subprocess.Popen([*command, *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, preexec_fn=preexec)
        first = proc.stdout.readline() if proc.stdout else b""
        proc.stdout.close()  # type: ignore[union-attr]
        err = proc.stderr.read() if proc.stderr else b""
        proc.wait(timeout=60)
        return subprocess.CompletedProcess(args, proc.returncode, first.decode(), err.decode())
    target = ("/dev/full" if row.stdout == "full"
              else cwd / row.stdout[5:] if row.stdout.startswith("file:") else None)
    with open(target, "wb") if target else _nothing() as out:
        done = subprocess.run([*command, *args], cwd=cwd, env=env, timeout=60,
                              stdout=out if target else subprocess.PIPE, stderr=subprocess.PIPE,
                              preexec_fn=preexec)
    stdout = (done.stdout or b"").decode()
    if row.stdout.startswith("file:"):
        stdout = (cwd / row.stdout[5:]).read_text()
    return subprocess.CompletedProcess(args, done.returncode, stdout, done.stderr.decode())


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def readable(name: str, data: bytes) -> bytes:
    """A file's bytes as they would be read: gzip members inflated."""
    if name.endswith(".gz") and data[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(data)
        except (OSError, EOFError):
            return data
    return data


def check_row(row: Row, done: subprocess.CompletedProcess, before: dict[str, bytes | None],
              after: dict[str, bytes | None], cwd: Path) -> None:
    err = done.stderr
    assert "Traceback" not in err and "Exception ignored" not in err, err
    if row.code != 0 and row.says:
        check(Case(done.args, row.code, row.says), done)  # one line, says it once
    else:
        assert done.returncode == row.code, err
        allowed = row.lines + (1 if row.says else 0)
        assert err.count("\n") <= allowed, f"more than {allowed} lines: {err!r}"
        if row.says:
            assert err.count(row.says) == 1, err
    # the user's files: unchanged (but those the row may change), and nothing new but outputs
    for name, data in before.items():
        assert name in after, f"{name} was removed"
        if name not in row.changes:
            assert after[name] == data, f"{name} was changed"
    new = set(after) - set(before)
    for name in new:
        assert any(fnmatch.fnmatch(name, pattern) for pattern in row.creates), \
            f"left behind: {name}"
    for pattern in row.creates:
        if not any(c in pattern for c in "*?["):
            assert pattern in after, f"{pattern} was not written"
    # no password anywhere: what was printed, and every file the run wrote
    written = [err.encode(), done.stdout.encode()] + [
        readable(name, data) for name, data in after.items()
        if data is not None and (name in new or name in row.changes)]
    for needle in needles():
        for text in written:
            assert needle not in text, f"{needle!r} written: {text[:200]!r}"
    if row.then is not None:  # the row's own checks of what it wrote
        row.then(cwd, done)


# -- the servers ------------------------------------------------------------------------------

def small_site(pages: int = 6) -> dict[str, Resource]:
    site = {}
    for n in range(pages):
        links = "".join(f'<a href="p{m}">{m}</a>' for m in (n + 1, n + 2) if m < pages)
        site["/" if n == 0 else f"/p{n}"] = Resource(f"<p>page {n}</p>{links}".encode())
    return site


def locked_site(pages: int = 6) -> Callable[[Request], Resource]:
    """Pages that ask for Basic authentication with one of PASSWORDS."""
    keys = {basic(p) for p in PASSWORDS.values()}
    site = small_site(pages)

    def answer(request: Request) -> Resource:
        if request.headers.get("authorization") not in keys:
            return Resource(b"who?", 401, {"WWW-Authenticate": 'Basic realm="minicrawl"'})
        page = site.get(request.path.partition("?")[0])
        return page if isinstance(page, Resource) else Resource(b"", 404)
    return answer


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[LocalSite, LocalSite]]:
    with LocalSite(small_site()) as open_site, LocalSite() as locked:
        answer = locked_site()
        locked.resolve = answer  # type: ignore[method-assign]  # every path asks
        yield open_site, locked


@pytest.fixture(scope="module")
def results(servers, tmp_path_factory) -> dict[str, tuple]:
    open_site, locked = servers
    urls = {"url": open_site.url("/")}
    template = locked.url("/").replace("http://", f"http://{USER}:{{password}}@")
    urls.update({f"locked:{name}": template.format(password=password)
                 for name, password in PASSWORDS.items()})

    prepared = tmp_path_factory.mktemp("prepared")
    prepare(prepared, urls["url"], template)

    def one(name: str) -> tuple:
        cwd = tmp_path_factory.mktemp("case") / "files"
        shutil.copytree(prepared, cwd, symlinks=True, ignore=shutil.ignore_patterns("hard.txt"))
        os.link(cwd / "s1.txt", cwd / "hard.txt")
        before = snapshot(cwd)
        done = execute(ROWS[name], cwd, urls)
        return done, before, snapshot(cwd), cwd

    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(one, name) for name in ROWS}
        return {name: future.result() for name, future in futures.items()}


@pytest.mark.parametrize("name", list(ROWS))
def test_outputs_and_secrets(name, results):
    check_row(ROWS[name], *results[name])


def test_the_table_covers_the_cases():
    assert len(ROWS) >= 100  # the note on issue 39 quotes this count


# -- beyond the table ------------------------------------------------------------------------

def test_sigterm_while_the_report_is_drawn_leaves_no_empty_report_and_writes_stats(tmp_path):
    """The trace is closed before the report is drawn: once it is on disk (10 pages' trace
    fits its buffer), the report is being drawn (matplotlib takes a second). SIGTERM then: no
    0-byte report, the stats and every --out line written."""
    with LocalSite(small_site(10)) as site:
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / "run.py"), site.url("/"), "--report", "r.html",
             "--stats", "s.json", "--trace", "t.txt", "--out", "o.jsonl", *QUIET],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
        deadline = time.monotonic() + 30
        while not (tmp_path / "t.txt").stat().st_size if (tmp_path / "t.txt").exists() else True:
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.005)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.count("\n") <= 1, err
    report = tmp_path / "r.html"
    assert not report.exists() or report.read_text().startswith("<!DOCTYPE html")
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    stats = json.loads((tmp_path / "s.json").read_text())
    assert stats["pages"] == 10 and stats["interrupted"] == 1
    assert len((tmp_path / "o.jsonl").read_text().splitlines()) == 10


@pytest.mark.parametrize("flag", ["out", "stats", "trace", "report"])
def test_the_library_refuses_an_output_naming_a_seed_file(tmp_path, flag):
    from minicrawl import Crawler
    from minicrawl.cli.outpaths import OutputPathError

    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://127.0.0.1:9/\n")
    with pytest.raises(OutputPathError, match=f"--{flag} .* is the seed file"):
        Crawler(str(seeds), **{flag: str(seeds)})
    assert seeds.read_text() == "http://127.0.0.1:9/\n"


def test_redaction_knows_what_userinfo_can_hold():
    from minicrawl.redact import redact, wire_url

    for password in PASSWORDS.values():
        url = f"http://{USER}:{password}@127.0.0.1:8080/a?b=1"
        bare = f"{USER}:{password}@127.0.0.1:8080"  # a --proxy given without its scheme
        for text in (url, repr(url), json.dumps({"url": url}), f"seed {url!r}: bad",
                     f"<{url}>", bare, f"--proxy {bare!r} has no scheme"):
            shown = redact(text)
            assert not any(run in shown for run in SECRET_RUNS), (text, shown)
            assert f"{USER}:***@127.0.0.1:8080" in shown, shown
        for typed in (url, bare, url.replace(password, password + " /x")):  # a value as given
            shown = redact(typed, typed=True)
            assert not any(run in shown for run in SECRET_RUNS), (typed, shown)
            assert f"{USER}:***@127.0.0.1:8080" in shown, shown
        assert wire_url(url) == "http://127.0.0.1:8080/a?b=1"  # not redaction: no userinfo
    assert redact("redis://h:6379/0?password=Xq7Lf'Zv9Bn&db=1") == \
        "redis://h:6379/0?password=***&db=1"
    assert redact("rediss://h:6379/0?ssl_certfile=c.pem&ssl_password=Xq7Lf'Zv9Bn") == \
        "rediss://h:6379/0?ssl_certfile=c.pem&ssl_password=***"
    assert redact("redis://:PASSWORD@host:6379/0") == "redis://:PASSWORD@host:6379/0"  # a hint
    kept = ["http://user@host/", "mailto:someone@example.org", "EXTRACT mailto:a@b.org from x",
            "http://host/p@th", "no url at all"]
    assert [redact(text) for text in kept] == kept
    assert [redact(text, typed=True) for text in kept[:2]] == kept[:2]  # a seed as typed
