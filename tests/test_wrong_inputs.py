"""Wrong inputs, as a table: every one gets one clear line, the right exit status, no traceback.

Each command-line case runs ``python run.py …`` as a user would (a subprocess, in a directory
holding the files the cases name) and checks: the exit status (2 usage, 3 a service, 1 an output
that failed at the end), that stderr is exactly one line, that the line says what it should
(once) and names the flag or argument, that no ``Traceback`` and no password appears, and that a
usage error crawled nothing (empty stdout). The cases run in parallel processes, so the table
costs about what its slowest few cases cost. Library cases check the exception type and message.

Nothing here contacts a server unless it says so: SEED (port 9, discard) is refused at once, and
every check under test happens before the crawl would fetch it.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from redisserver import RedisServer, free_port
from tlsca import make_ca

from minicrawl import BloomFilter, Crawler, ExactVisited, Options
from minicrawl.demo.site import LocalSite, Resource, hang
from minicrawl.visited import CountingBloomFilter, ScalableBloomFilter

ROOT = Path(__file__).resolve().parent.parent
SEED = "http://127.0.0.1:9/"
PASSWORD = "s3cret-Pa55"  # must never appear in any output
KEY_PASSWORD = "k3y-Pa55phrase"  # a TLS client key's (?ssl_password=): neither
BOM = b"\xef\xbb\xbf"


@dataclass
class Case:
    args: list[str]
    code: int
    says: str  # appears exactly once in the one stderr line
    hidden: str | None = None  # must appear nowhere (a password)


def usage(*args: str, says: str, hidden: str | None = None) -> Case:
    return Case(list(args), 2, says, hidden)


def crawl(*args: str, says: str, hidden: str | None = None) -> Case:
    """A crawl option that is wrong: SEED plus the option."""
    return Case([SEED, *args], 2, says, hidden)


# -- numbers: too small, too large, not a number, not finite, empty -------------------------
# (flag, value, what the line says)
NUMBERS = [
    ("threads", "0", "--threads must be at least 1, got 0"),
    ("threads", "-1", "--threads must be at least 1"),
    ("threads", "100000", "--threads must be at most 1024, got 100000"),
    ("threads", "1e3", "argument --threads: invalid int value: '1e3'"),
    ("threads", "", "argument --threads: invalid int value: ''"),
    ("threads", "four", "argument --threads: invalid int value"),
    ("threads", "2.5", "argument --threads: invalid int value"),
    ("threads", "9" * 5000, "argument --threads: invalid int value"),
    ("timeout", "0", "--timeout must be greater than 0"),
    ("timeout", "-1", "--timeout must be greater than 0"),
    ("timeout", "1e10", "--timeout must be at most 86400, got 10000000000.0"),
    ("timeout", "nan", "--timeout must be a finite number"),
    ("timeout", "inf", "--timeout must be a finite number"),
    ("timeout", "-inf", "--timeout must be a finite number"),
    ("timeout", "", "argument --timeout: invalid float value"),
    ("timeout", "10s", "argument --timeout: invalid float value"),
    ("max-bytes", "0", "--max-bytes must be at least 1"),
    ("max-bytes", str(2**31), "--max-bytes must be at most 1073741824"),
    ("expected-urls", "0", "--expected-urls must be at least 1"),
    ("expected-urls", "-5", "--expected-urls must be at least 1"),
    ("expected-urls", str(10**20), "needs a Visited filter of"),
    ("error-rate", "0", "--error-rate must be between 0 and 1"),
    ("error-rate", "1", "--error-rate must be between 0 and 1"),
    ("error-rate", "2", "--error-rate must be between 0 and 1"),
    ("error-rate", "-0.1", "--error-rate must be between 0 and 1"),
    ("error-rate", "nan", "--error-rate must be a finite number"),
    ("max-depth", "-1", "--max-depth must be at least 0"),
    ("max-depth", str(10**13), "--max-depth must be at most 1000000000000"),
    ("max-pages", "0", "--max-pages must be at least 1"),
    ("max-pages", str(10**13), "--max-pages must be at most 1000000000000"),
    ("max-url-length", "10", "--max-url-length must be at least 16"),
    ("max-url-length", str(10**8), "--max-url-length must be at most 2097152"),
    ("max-repeated-segments", "-1", "--max-repeated-segments must be at least 0"),
    ("max-repeated-segments", str(10**13), "--max-repeated-segments must be at most"),
    ("max-pages-per-host", "0", "--max-pages-per-host must be at least 1"),
    ("max-pages-per-host", str(10**13), "--max-pages-per-host must be at most"),
    ("delay", "-1", "--delay must be at least 0"),
    ("delay", "1e10", "--delay must be at most 86400"),
    ("delay", "nan", "--delay must be a finite number"),
    ("delay", "inf", "--delay must be a finite number"),
    ("delay", "1e400", "--delay must be a finite number"),
    ("max-crawl-delay", "-1", "--max-crawl-delay must be at least 0"),
    ("max-crawl-delay", "1e6", "--max-crawl-delay must be at most 86400"),
    ("per-host", "0", "--per-host must be at least 1"),
    ("per-host", "5000", "--per-host must be at most 1024"),
    ("retries", "-1", "--retries must be at least 0"),
    ("retries", "101", "--retries must be at most 100"),
    ("retries", "1e9", "argument --retries: invalid int value"),
    ("retry-backoff", "-1", "--retry-backoff must be at least 0"),
    ("retry-backoff", "1e10", "--retry-backoff must be at most 86400"),
    ("max-backoff", "-1", "--max-backoff must be at least 0"),
    ("max-backoff", "1e10", "--max-backoff must be at most 86400"),
    ("visited-shards", "-1", "--visited-shards must be at least 0"),
    ("visited-shards", "20000", "--visited-shards must be at most 16384"),
    ("reclaim-after", "0", "--reclaim-after must be greater than 0"),
    ("reclaim-after", "1e9", "--reclaim-after must be at most 86400"),
    ("redis-retry", "-1", "--redis-retry must be at least 0"),
    ("redis-retry", "1e9", "--redis-retry must be at most 86400"),
]
CASES: dict[str, Case] = {f"--{flag} {value[:12]!r}": crawl(f"--{flag}={value}", says=says)
                          for flag, value, says in NUMBERS}

CASES.update({
    # -- other options
    "unknown option": crawl("--treads", "4", says="unrecognized arguments: --treads 4"),
    "an option as a seed": usage("--threads", "4", says="give seed URLs or seed files"),
    "missing value": crawl("--threads", says="--threads: expected one argument"),
    "bad choice": crawl("--visited", "bitmap", says="invalid choice: 'bitmap'"),
    "empty user agent": crawl("--user-agent", " ", says="--user-agent must not be empty"),
    "user agent with a newline": crawl("--user-agent", "bot\nX: 1", says="control characters"),
    "bad include regex": crawl("--include", "(", says="--include '(' is not a valid regular"),
    "bad exclude regex": crawl("--exclude", "[z-a]", says="--exclude '[z-a]' is not a valid"),
    "allow-domain URL": crawl("--allow-domain", "http://x.org/", says="--allow-domain must be"),
    "crawl name": crawl("--crawl", "a b", says="--crawl must be 1-100 letters"),
    "empty --out": crawl("--out", "", says="--out must not be empty"),
    "--trace URL": Case(["--trace", SEED], 2, "--trace took"),
    "--status without --redis": usage("--status", says="--status reads a shared crawl"),
    "no seeds": usage(says="give seed URLs or seed files"),
    "--recrawl without --state": crawl("--recrawl", says="--recrawl and --forget-gone need"),
    # -- Redis URLs wrong before any connection (the password never shown)
    "--redis http": crawl("--redis", f"http://:{PASSWORD}@127.0.0.1:6379/0",
                          says="--redis must be a Redis URL", hidden=PASSWORD),
    "--redis port": crawl("--redis", f"redis://:{PASSWORD}@127.0.0.1:99999/0",
                          says="Port out of range"),
    "--redis no host": crawl("--redis", f"redis://:{PASSWORD}@/0", says="--redis has no host"),
    "--redis db": crawl("--redis", f"redis://:{PASSWORD}@127.0.0.1:6379/abc",
                        says="must end in a database number"),
    "--redis cluster db": crawl("--redis", f"redis+cluster://:{PASSWORD}@127.0.0.1:7000/3",
                                says="a Redis Cluster has only database 0"),
    "--redis ipv6": crawl("--redis", f"redis://:{PASSWORD}@[::1/0", says="Invalid IPv6 URL"),
    "--redis with --state": crawl("--redis", "redis://127.0.0.1:1/0", "--state", "st",
                                  says="--state keeps the crawl of one process"),
    # -- output paths: tried before the crawl as the crawl will write them
    **{f"--{flag} {name}": crawl(f"--{flag}", path, says=says)
       for flag in ("out", "trace", "stats", "report")
       for name, path, says in (
           ("missing folder", "nope/x.out", "folder 'nope' does not exist"),
           ("a directory", "adir", "'adir' is a directory; give a file name"),
           ("root", "/", "'/' is a directory"),
           ("/dev/full", "/dev/full", "No space left on device"),
           ("read-only folder", "/sys/x.out", f"--{flag} '/sys/x.out': cannot write"),
           ("under a file", "afile/x.out", "Not a directory"))},
    **{f"--{flag} {name}": crawl(f"--{flag}", path, says=says)
       for flag in ("state", "save-pages")
       for name, path, says in (
           ("/dev/null", "/dev/null", "'/dev/null' is not a directory"),
           ("a file", "afile", "'afile' is not a directory"),
           ("read-only folder", "/sys/x", f"--{flag} '/sys/x': cannot write"),
           ("under a file", "afile/x", "cannot write: Not a directory"))},
    "--out and --stats the same file": crawl("--out", "same.json", "--stats", "./same.json",
                                             says="--out and --stats both name"),
    "--state and --save-pages the same dir": crawl("--state", "d", "--save-pages", "d",
                                                   says="--state and --save-pages both name"),
    # -- seeds
    "missing seed file": usage("nope.txt", says="nope.txt: no such seed file"),
    "missing seed path": usage("./seeds/none", says="./seeds/none: no such seed file"),
    "empty seed file": usage("empty.txt", says="empty.txt: no seed URL in this file"),
    "comments only": usage("comments.txt", says="comments.txt: no seed URL in this file"),
    "directory as seed": usage("adir", says="adir: cannot read seed file: Is a directory"),
    "host without scheme": usage("example.org", says="write https://example.org"),
    "empty seed": usage("", says="'' is not a valid http(s) URL"),
    "ftp seed": usage("ftp://example.org/", says="(not http(s))"),
    "mailto seed": usage("mailto:a@example.org", says="(not http(s))"),
    "bad IPv6 seed": usage("http://[::1/", says="(invalid host or port)"),
    "space in host": usage("http://exa mple.org/", says="(invalid host or port)"),
    "bad IPv4 seed": usage("http://192.168.0.257/", says="(invalid host or port)"),
    "huge IPv4 seed": usage("http://4294967296/", says="(invalid host or port)"),
    "bad punycode seed": usage("http://xn--te\u0161la.example/", says="(invalid host or port)"),
    "seed with a password": usage(f"https://user:{PASSWORD}@[::1/", says="user:***@",
                                  hidden=PASSWORD),
    "bad seed lines told once": usage("bad.txt", says="bad.txt:2: 'ftp://x.org/'"),
    "binary seed file": usage("binary.bin", says="binary.bin: holds binary data"),
    "BOM then a bad line": usage("bom-bad.txt", says="bom-bad.txt:1: 'not a url'"),
    "no host": usage("http://", says="(invalid host or port)"),
    "only a port": usage("http://:80/", says="(invalid host or port)"),
    "user, no host": usage("http://u@/", says="(invalid host or port)"),
    "port too large": usage("https://example.org:99999/", says="(invalid host or port)"),
    "port not a number": usage("http://example.org:abc/", says="(invalid host or port)"),
    "javascript seed": usage("javascript:alert(1)", says="(not http(s))"),
    "data seed": usage("data:text/html,x", says="(not http(s))"),
    "file seed": usage("file:///etc/passwd", says="(not http(s))"),
    "joiner in host": usage("http://a\u200db.example/", says="(invalid host or port)"),
    "number-like domain": usage("http://foo.09/", says="(invalid host or port)"),
    "five-part IPv4": usage("http://1.2.3.4.5/", says="(invalid host or port)"),
    "escaped NUL in host": usage("http://ex%00ample.org/", says="(invalid host or port)"),
    "bracket in host": usage("http://exa<mple.org/", says="(invalid host or port)"),
    "absolute path": usage("/relative/path", says="/relative/path: no such seed file"),
    "unexpanded tilde": usage("~/seeds.txt", says="~/seeds.txt: no such seed file"),
    "seed too long": usage("http://example.org/" + "a" * 3000, says="(too long)"),
    "include *": crawl("--include", "*", says="--include '*' is not a valid regular"),
    "allow-domain with port": crawl("--allow-domain", "example.org:8080",
                                    says="--allow-domain must be a host name"),
    "allow-domain empty": crawl("--allow-domain", "", says="--allow-domain must be a host"),
    "crawl name braces": crawl("--crawl", "{x}", says="--crawl must be 1-100"),
    "crawl name empty": crawl("--crawl", "", says="--crawl must be 1-100"),
    "crawl name too long": crawl("--crawl", "x" * 101, says="--crawl must be 1-100"),
    "user agent not latin-1": crawl("--user-agent", "bot\u20ac", says="ISO-8859-1"),
    "empty --stats": crawl("--stats", "", says="--stats must not be empty"),
    "empty --trace": crawl("--trace=", says="--trace must not be empty"),
    "empty --state": crawl("--state", "", says="--state must not be empty"),
    "empty --save-pages": crawl("--save-pages", "", says="--save-pages must not be empty"),
    "empty --redis": crawl("--redis", "", says="--redis must be a Redis URL"),
    "--redis db too large": crawl("--redis", f"redis://:{PASSWORD}@127.0.0.1:6379/2147483648",
                                  says="database number must be at most", hidden=PASSWORD),
    "--redis with --visited exact": crawl("--redis", "redis://127.0.0.1:1/0", "--visited",
                                          "exact", says="--visited exact does not work"),
    "--forget-gone without --state": crawl("--forget-gone", says="need --state DIR"),
    "--demo, bad value": usage("--demo", "--threads", "0", says="--threads must be at least 1"),
    "--status, bad --redis": usage("--status", "--redis", "redis://h/x",
                                   says="must end in a database number"),
    # -- minicrawl bloom
    **{f"bloom {' '.join(args)}": Case(["bloom", *args], 2, says) for args, says in (
        (("size", "--n", "0", "--p", "0.1"), "--n: must be at least 1"),
        (("size", "--n", "-1", "--p", "0.1"), "--n: must be at least 1"),
        (("size", "--n", "nan", "--p", "0.1"), "--n: not an integer"),
        (("size", "--n", "inf", "--p", "0.1"), "--n: not an integer"),
        (("size", "--n", "1e300", "--p", "0.1"), "--n: must be at most"),
        (("size", "--n", "ten", "--p", "0.1"), "--n: not an integer"),
        (("size", "--n", "10", "--p", "0"), "--p: must be between 0 and 1 (exclusive), got 0.0"),
        (("size", "--n", "10", "--p", "1"), "--p: must be between 0 and 1 (exclusive), got 1.0"),
        (("size", "--n", "10", "--p", "nan"), "--p: must be a finite number, got nan"),
        (("size", "--n", "10", "--p=-inf"), "--p: must be a finite number, got -inf"),
        (("size", "--n", "10", "--p", "abc"), "--p: not a number"),
        (("size", "--n", "1.5", "--p", "0.1"), "--n: not an integer"),
        (("measure", "--ratio", "abc"), "--ratio: not a number"),
        (("measure", "--ratio=-inf"), "--ratio: must be a finite number"),
        (("measure", "--n", "2.5"), "--n: not an integer"),
        (("plot", "/nope/dir/x.png"), "folder '/nope/dir' does not exist"),
        (("plot", "afile/x.png"), "Not a directory"),
        (("size", "--n", "10", "--p", "0.1", "--k", "0"), "--k: must be at least 1"),
        (("size", "--n", "10", "--p", "0.1", "--k", "65"), "--k: must be at most 64"),
        (("size", "--p", "0.1"), "the following arguments are required: --n"),
        (("measure", "--n", "0"), "--n: must be at least 1"),
        (("measure", "--n", "-5"), "--n: must be at least 1"),
        (("measure", "--n", "1e9"), "--n: must be at most 5000000, got 1000000000"),
        (("measure", "--n", "nan"), "--n: not an integer"),
        (("measure", "--ratio", "0"), "--ratio: must be greater than 0, got 0.0"),
        (("measure", "--ratio", "-1"), "--ratio: must be greater than 0, got -1.0"),
        (("measure", "--ratio", "nan"), "--ratio: must be a finite number"),
        (("measure", "--ratio", "inf"), "--ratio: must be a finite number"),
        (("measure", "--ratio", "1e300"), "--ratio: must be at most 1000, got 1e+300"),
        (("measure", "--k", "0"), "--k: must be at least 1"),
        (("measure", "--k", "100"), "--k: must be at most 64"),
        (("measure", "--seed", "-1"), "--seed: must be at least 0"),
        (("measure", "--hash", "md5"), "invalid choice: 'md5'"),
        (("plot", "nope/x.png"), "folder 'nope' does not exist"),
        (("plot", "adir"), "'adir' is a directory"),
        (("plot", "/dev/full"), "No space left on device"),
        (("plot", "/sys/x.png"), "'/sys/x.png': cannot write"),
        (("plot",), "the following arguments are required: file"),
        (("table", "5"), "unrecognized arguments: 5"),
        (("sizee",), "invalid choice: 'sizee'"),
        ((), "the following arguments are required: COMMAND"),
    )},
})


def prepare(directory: Path) -> None:
    """The files and folders the cases name, in the directory they run in."""
    (directory / "adir").mkdir()
    (directory / "afile").write_text("a file\n")
    (directory / "empty.txt").write_bytes(b"")
    (directory / "comments.txt").write_text("# only\n\n   # comments\n")
    (directory / "bad.txt").write_text("not a url\nftp://x.org/\n")
    (directory / "binary.bin").write_bytes(bytes(range(256)))
    (directory / "bom-bad.txt").write_bytes(BOM + b"not a url\n")


def run(args: list[str], cwd: Path, timeout: float = 60, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], cwd=cwd, timeout=timeout,
                          capture_output=True, text=True, **kwargs)


def run_all(cases: dict[str, Case], cwd: Path) -> dict[str, subprocess.CompletedProcess]:
    # Each case is its own process; four at a time keep both cores busy while others start.
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(run, case.args, cwd) for name, case in cases.items()}
        return {name: future.result() for name, future in futures.items()}


def check(case: Case, done: subprocess.CompletedProcess) -> None:
    err = done.stderr
    assert done.returncode == case.code, err
    assert "Traceback" not in err
    assert err.endswith("\n") and err.count("\n") == 1, f"not one line: {err!r}"
    assert err.count(case.says) == 1, err
    if case.code in (2, 3):
        assert done.stdout == "", done.stdout  # nothing crawled, no summary
    assert PASSWORD not in err + done.stdout  # in any case, with a password or not
    if case.hidden:
        assert case.hidden not in err + done.stdout


@pytest.fixture(scope="module")
def cli_results(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    directory = tmp_path_factory.mktemp("wrong-inputs")
    prepare(directory)
    results = run_all(CASES, directory)
    leftovers = {p.name for p in directory.iterdir()} - {
        "adir", "afile", "empty.txt", "comments.txt", "bad.txt", "binary.bin", "bom-bad.txt"}
    assert not leftovers, f"a refused command left files behind: {leftovers}"
    return results


@pytest.mark.parametrize("name", list(CASES))
def test_the_command_line_answers_a_wrong_input_in_one_line(name, cli_results):
    check(CASES[name], cli_results[name])


def test_the_table_is_large():
    assert len(CASES) >= 200  # the note on issue 14 quotes this count


# -- the library -----------------------------------------------------------------------------

LIBRARY: dict[str, tuple[Callable[[], object], type[Exception], str]] = {
    "seeds None": (lambda: Crawler(None), TypeError, "seeds must be a URL, a seed file"),
    "seeds a number": (lambda: Crawler(42), TypeError, "got int"),
    "seeds bytes": (lambda: Crawler(b"http://x/"), TypeError, "got bytes"),
    "a seed a number": (lambda: Crawler([SEED, 7]), TypeError, "seeds must be strings"),
    "a seed None": (lambda: Crawler([None]), TypeError, "got NoneType"),
    "a seed bytes": (lambda: Crawler([b"http://x/"]), TypeError, "got bytes"),
    "seeds a dict": (lambda: Crawler({SEED: 1}), TypeError, "got dict"),
    "options a dict": (lambda: Crawler(SEED, options={"threads": 2}), TypeError,
                       "options must be an Options"),
    "options a string": (lambda: Crawler(SEED, options="threads=2"), TypeError,
                         "options must be an Options"),
    "unknown setting": (lambda: Crawler(SEED, thread=2), TypeError, "thread"),
    "threads a string": (lambda: Options(threads="4"), ValueError, "--threads must be an int"),
    "threads None": (lambda: Options(threads=None), ValueError, "--threads must be an integer"),
    "delay huge int": (lambda: Options(delay=10**400), ValueError, "--delay must be a finite"),
    "max_pages 5000 digits": (lambda: Options(max_pages=10**5000), ValueError,
                              "about 5001 digits"),
    "timeout huge": (lambda: Crawler(SEED, timeout=1e10), ValueError, "--timeout must be at most"),
    "threads huge": (lambda: Crawler(SEED, threads=10**6), ValueError, "--threads must be at most"),
    "redis password in message": (
        lambda: Options(redis=f"http://:{PASSWORD}@h/"), ValueError, "http://:***@h/"),
    "no valid seed": (lambda: Crawler(["ftp://x/"]), ValueError, "no valid seed URL"),
    "stats a directory": (lambda: Crawler(SEED, stats="/"), ValueError, "--stats '/' is a dir"),
    "capacity a string": (lambda: BloomFilter(capacity="1000"), TypeError,
                          "capacity must be an int, got str"),
    "capacity a float": (lambda: BloomFilter(capacity=1.5), TypeError, "capacity must be an int"),
    "capacity True": (lambda: BloomFilter(capacity=True), TypeError, "got bool"),
    "capacity zero": (lambda: BloomFilter(capacity=0), ValueError,
                      "capacity must be greater than 0, got 0"),
    "error_rate a string": (lambda: BloomFilter(100, "0.1"), TypeError, "error_rate must be a"),
    "error_rate nan": (lambda: BloomFilter(100, float("nan")), ValueError,
                       "error_rate must be a finite number"),
    "bits a string": (lambda: BloomFilter(bits="8"), TypeError, "bits must be an int"),
    "bits 0": (lambda: BloomFilter(bits=0), ValueError, "bits must be greater than 0, got 0"),
    "add None": (lambda: BloomFilter(100).add(None), TypeError, "url must be a str, got None"),
    "add a number": (lambda: BloomFilter(100).add(5), TypeError, "got int"),
    "add bytes": (lambda: BloomFilter(100).add(b"x"), TypeError, "got bytes"),
    "add_many with None": (lambda: BloomFilter(100).add_many(["a", None]), TypeError, "None"),
    "large batch with None": (lambda: BloomFilter(100).add_many(["a"] * 1000 + [None]),
                              TypeError, "url must be a str"),
    "counting add None": (lambda: CountingBloomFilter(100, 0.01).add(None), TypeError, "a str"),
    "scalable add None": (lambda: ScalableBloomFilter(100).add(None), TypeError, "a str"),
    "exact add None": (lambda: ExactVisited().add(None), TypeError, "url must be a str"),
    "exact add_many number": (lambda: ExactVisited().add_many([1]), TypeError, "got int"),
}


@pytest.mark.parametrize("name", list(LIBRARY))
def test_the_library_names_the_wrong_argument(name):
    call, kind, says = LIBRARY[name]
    with pytest.raises(kind) as info:
        call()
    assert says in str(info.value)
    assert PASSWORD not in str(info.value)


def test_a_lone_surrogate_does_not_crash_and_normal_hashes_are_unchanged():
    """In a child process, should a hash's C code ever kill the interpreter on one: every hash
    path (the core's, single, small and NumPy batch, each filter) takes a lone surrogate, and a
    valid URL hashes as its UTF-8, the surrogate as its three bytes (the core's positions)."""
    code = r"""
from hashlib import blake2b
from minicrawl import BloomFilter
from minicrawl.visited import CountingBloomFilter, ScalableBloomFilter
from minicrawl.core.visited import BloomVisited, positions
bad = ["\ud800", "http://x/\udfff", "caf\u00e9\ud83d"]
f = BloomFilter(10_000, 0.01)
assert [f.add(u) for u in bad] == [True, True, True] and all(u in f for u in bad)
assert f.add_many(bad * 50)[:3] == [False, False, False]  # the NumPy batch path
assert f.contains_many(bad * 50) == [True] * 150
for f in (CountingBloomFilter(1000, 0.01), ScalableBloomFilter(1000)):
    assert f.add("\ud800") and not f.add("\ud800")
assert BloomVisited(1000, 0.01).add_new(bad + bad) == bad
for url in ("http://example.org/", "http://b\u00fccher.de/caf\u00e9", "\ud800"):
    digest = blake2b(url.encode("utf-8", "surrogatepass"), digest_size=64, salt=b"minicrawl")
    words = [int.from_bytes(digest.digest()[i:i + 8], "little") for i in range(0, 64, 8)]
    assert positions(url, 1_000_003) == [w % 1_000_003 for w in words]
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "ok\n", (done.returncode, done.stderr)


# -- Redis: refusals fail at once with their cause, the password never shown -----------------


@pytest.fixture(scope="module")
def redis_servers():
    with RedisServer(password=PASSWORD) as locked, RedisServer() as open_:
        yield locked, open_


def test_redis_refusals_fail_at_once_with_their_cause(redis_servers, tmp_path):
    locked, open_ = redis_servers
    host = f"127.0.0.1:{locked.port}"
    # --redis-retry 60: a refusal treated as an outage would be retried past the timeout.
    cases = {
        "no password": Case([f"redis://{host}/0"], 3, "needs a password"),
        "wrong password": Case([f"redis://:{PASSWORD}x@{host}/0"], 3, "wrong password",
                               hidden=PASSWORD),
        "wrong user": Case([f"redis://bob:{PASSWORD}@{host}/0"], 3, "wrong password",
                           hidden=PASSWORD),
        "database out of range": Case([f"redis://:{PASSWORD}@{host}/99"], 3,
                                      "has no such database", hidden=PASSWORD),
        "database out of range, no password": Case([f"redis://127.0.0.1:{open_.port}/16"], 3,
                                                   "has no such database"),
    }
    for case in cases.values():
        case.args = [SEED, "--redis", case.args[0], "--redis-retry", "60", "--quiet"]
    status = Case(["--redis", f"redis://:{PASSWORD}x@{host}/0", "--status", "--redis-retry",
                   "60"], 3, "wrong password", hidden=PASSWORD)
    cases["--status, wrong password"] = status
    results = run_all(cases, tmp_path)
    for name, case in cases.items():
        check(case, results[name])
        assert "redis://" in results[name].stderr, name  # it says which Redis


def refused_at_once(cases: dict[str, Case], tmp_path) -> dict:
    """Run the rediss:// ``cases`` (each given --redis-retry 60: an outage would be retried
    past run()'s 60 s), check each, and that each line names the Redis; their results."""
    for case in cases.values():
        case.args += ["--redis-retry", "60", *(["--quiet"] if case.args[0] == SEED else [])]
    results = run_all(cases, tmp_path)
    for name, case in cases.items():
        check(case, results[name])
        assert results[name].stderr.startswith("minicrawl: Redis at rediss"), name
    return results


def test_rediss_at_a_server_without_tls_fails_at_once_in_one_line(redis_servers, tmp_path):
    """``rediss://`` at a plain redis-server: the server reads the TLS hello as the start of a
    command and waits for its end, so every handshake times out (redis-py's socket timeout,
    10 s) and was retried as an outage for --redis-retry, then "unreachable". It never succeeds:
    one line naming the URL (no password) after the first handshake, exit 3, as a refusal."""
    locked, open_ = redis_servers
    plain = "speaks Redis without TLS: a TLS handshake (rediss://) with it never succeeds; " \
            "write redis://"
    url = f"rediss://:{PASSWORD}@127.0.0.1:{locked.port}/0"
    cases = {
        "rediss://, a password": Case([SEED, "--redis", url], 3, plain, hidden=PASSWORD),
        "rediss://, no password": Case([SEED, "--redis", f"rediss://127.0.0.1:{open_.port}/0"],
                                       3, plain),
        "rediss+cluster://": Case([SEED, "--redis", f"rediss+cluster://127.0.0.1:{open_.port}"],
                                  3, "write redis+cluster://"),
        "--status, rediss://": Case(["--status", "--redis", url], 3, plain, hidden=PASSWORD),
    }
    results = refused_at_once(cases, tmp_path)
    assert f"rediss://:***@127.0.0.1:{locked.port}/0 speaks" in results["--status, rediss://"].stderr


def test_rediss_at_a_port_that_is_no_redis_is_still_an_outage(server, tmp_path):
    """The TLS handshake fails at an HTTP server too, but it does not answer a PING as Redis
    does: not said to be a Redis without TLS, retried for --redis-retry as before."""
    url = f"rediss://:{PASSWORD}@127.0.0.1:{server.port}/0"
    done = run([SEED, "--redis", url, "--redis-retry", "0.5", "--quiet"], tmp_path)
    assert done.returncode == 3 and "Traceback" not in done.stderr and PASSWORD not in done.stderr
    assert "unreachable for" in done.stderr and "without TLS" not in done.stderr, done.stderr


@pytest.fixture(scope="module")
def tls_redis_servers(tmp_path_factory):
    """Three TLS-only redis-servers with a password: one whose certificate (for 127.0.0.1) a
    CA of the test's own signed, one self-signed, one whose certificate expired; and their
    certificate files."""
    own = make_ca(tmp_path_factory.mktemp("own-ca"))
    alone = make_ca(tmp_path_factory.mktemp("self-signed"), self_signed=True)
    old = make_ca(tmp_path_factory.mktemp("expired"), expired=True)
    with RedisServer(password=PASSWORD, tls=(own.cert, own.key)) as signed, \
            RedisServer(password=PASSWORD, tls=(alone.cert, alone.key)) as self_signed, \
            RedisServer(password=PASSWORD, tls=(old.cert, old.key)) as expired:
        yield (signed, own), (self_signed, alone), (expired, old)


def test_rediss_at_a_certificate_that_does_not_verify_fails_at_once_in_one_line(
        tls_redis_servers, tmp_path):
    """A TLS Redis whose certificate does not verify (self-signed, a CA the client does not
    trust, issued for another host name, a CA given that did not sign it) was retried as an
    outage for --redis-retry, then "unreachable ... CERTIFICATE_VERIFY_FAILED". No retry makes
    it verify: one line naming the URL (no password), ssl's reason and what to change, exit 3."""
    (signed, own), (self_signed, alone), (expired, old) = tls_redis_servers
    said = "has a TLS certificate that could not be verified"
    give = "give the CA certificate that signed it (for a self-signed server, its own " \
           "certificate) in --redis as ?ssl_ca_certs=/path/to/ca.pem"
    cases = {
        "self-signed": Case([SEED, "--redis", self_signed.url], 3,
                            f"{said} (self-signed certificate): {give}", hidden=PASSWORD),
        # ?ssl_password= (a client key's passphrase) is a secret too; the message shows the URL
        "a CA not trusted": Case([SEED, "--redis", f"{signed.url}?ssl_password={KEY_PASSWORD}"],
                                 3, give, hidden=KEY_PASSWORD),
        "another CA given": Case(
            [SEED, "--redis", f"{signed.url}?ssl_ca_certs={alone.ca}"], 3,
            "the CA certificates its ?ssl_ca_certs= names did not sign it", hidden=PASSWORD),
        "host name mismatch": Case(
            [SEED, "--redis", f"{signed.url.replace('127.0.0.1', 'localhost')}"
                              f"?ssl_ca_certs={own.ca}"], 3,
            f"{said} (Hostname mismatch, certificate is not valid for 'localhost'): write the "
            f"host name (or address) the certificate was issued for in --redis", hidden=PASSWORD),
        "rediss+cluster://": Case(
            [SEED, "--redis", signed.url.replace("rediss", "rediss+cluster").removesuffix("/0")],
            3, give, hidden=PASSWORD),
        "expired": Case(  # the CA given: no change to --redis helps
            [SEED, "--redis", f"{expired.url}?ssl_ca_certs={old.ca}"], 3,
            f"{said} (certificate has expired): the server's certificate must be fixed (or "
            f"renewed) on the server", hidden=PASSWORD),
        "--status": Case(["--status", "--redis", self_signed.url], 3, said, hidden=PASSWORD),
    }
    results = refused_at_once(cases, tmp_path)
    assert f"rediss://:***@127.0.0.1:{self_signed.port}/0 has" in results["--status"].stderr


def test_a_ca_file_in_the_rediss_url_that_is_none_is_one_line_before_connecting(
        tls_redis_servers, tmp_path):
    """?ssl_ca_certs= naming no file, a file of no certificates, or a directory: redis-py reads
    it at each connection, and each failed ("Error 2 connecting to HOST:PORT. No such file or
    directory", naming no file) and was retried as an outage for --redis-retry. Refused before
    connecting as --ca-bundle is (a usage error, exit 2), naming the file."""
    (signed, _), *_ = tls_redis_servers
    (tmp_path / "notes.txt").write_text("no certificate here\n")
    (tmp_path / "cas").mkdir()
    cases = {
        "missing": Case([SEED, "--redis", f"{signed.url}?ssl_ca_certs=nope.pem"], 2,
                        "--redis ?ssl_ca_certs='nope.pem' is no such file; give a PEM file of "
                        "CA certificates", hidden=PASSWORD),
        "no certificate": Case([SEED, "--redis", f"{signed.url}?ssl_ca_certs=notes.txt"], 2,
                               "--redis ?ssl_ca_certs='notes.txt' is not a PEM file of CA "
                               "certificates (no certificate in it)", hidden=PASSWORD),
        "a directory": Case([SEED, "--redis", f"{signed.url}?ssl_ca_certs=cas"], 2,
                            "?ssl_ca_certs='cas' is a directory: give a PEM file of CA "
                            "certificates, or the directory as ?ssl_ca_path=", hidden=PASSWORD),
        "--status, missing": Case(["--status", "--redis", f"{signed.url}?ssl_ca_certs=nope.pem"],
                                  2, "?ssl_ca_certs='nope.pem' is no such file", hidden=PASSWORD),
    }
    for case in cases.values():  # an outage would be retried past run()'s 60 s
        case.args += ["--redis-retry", "60"]
    results = run_all(cases, tmp_path)
    for name, case in cases.items():
        check(case, results[name])


def test_a_client_certificate_in_the_rediss_url_that_cannot_load_is_one_line_before_connecting(
        tls_redis_servers, tmp_path):
    """?ssl_certfile= / ?ssl_keyfile= (a TLS client certificate) missing, or a key that is not
    the certificate's, or none: redis-py loads them at each connection, and each failed and was
    retried as an outage. Refused before connecting (exit 2), naming the files."""
    (signed, own), (_, alone), _ = tls_redis_servers
    url = signed.url + "?"
    cases = {
        "key without certificate": Case(
            [SEED, "--redis", f"{url}ssl_keyfile={own.key}"], 2,
            "has ?ssl_keyfile= without ?ssl_certfile=: give the certificate the key is for"),
        "certificate missing": Case([SEED, "--redis", f"{url}ssl_certfile=nope.pem"], 2,
                                    "?ssl_certfile='nope.pem' is no such file"),
        "key missing": Case([SEED, "--redis", f"{url}ssl_certfile={own.cert}&ssl_keyfile=nope"],
                            2, "?ssl_keyfile='nope' is no such file"),
        "another certificate's key": Case(
            [SEED, "--redis", f"{url}ssl_certfile={own.cert}&ssl_keyfile={alone.key}"], 2,
            "cannot be loaded as a TLS client certificate and its private key "
            "(KEY_VALUES_MISMATCH)"),
        "no key": Case([SEED, "--redis", f"{url}ssl_certfile={own.cert}"], 2,
                       "cannot be loaded as a TLS client certificate and its private key"),
    }
    for case in cases.values():  # an outage would be retried past run()'s 60 s
        case.hidden = PASSWORD
        case.args += ["--redis-retry", "60"]
    results = run_all(cases, tmp_path)
    for name, case in cases.items():
        check(case, results[name])


@pytest.mark.parametrize("which", ["CA-signed", "self-signed", "client-certificate"])
def test_rediss_with_the_ca_given_in_the_url_crawls(tls_redis_servers, server, tmp_path, which):
    """The control: the same servers, given the CA that signed the certificate (a self-signed
    server's own certificate) in ?ssl_ca_certs=, are a crawl like any other: verification is
    refused only when it fails; a client certificate and key that load are let through."""
    redis_server, ca = tls_redis_servers[which == "self-signed"]
    client = f"&ssl_certfile={ca.cert}&ssl_keyfile={ca.key}" if which == "client-certificate" \
        else ""
    server.pages["/"] = Resource(b'<a href="/a">a</a>')
    server.pages["/a"] = Resource(b"<p>leaf</p>")
    out = tmp_path / "out.jsonl"
    done = run([server.url("/"), "--redis", f"{redis_server.url}?ssl_ca_certs={ca.ca}{client}",
                "--crawl", f"tls-{which}", "--quiet", "--out", str(out), "--redis-retry", "5"],
               tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert sorted(json.loads(line)["status"] for line in out.read_text().splitlines()) == \
        [200, 200]


@pytest.mark.timeout(90)
def test_redis_killed_mid_crawl_is_one_line_not_tracebacks(tmp_path):
    from minicrawl.demo import generate_site

    with LocalSite() as server, RedisServer(password=PASSWORD) as lost:
        server.pages.update(generate_site(server.origin, pages=3000).pages)
        out = tmp_path / "out.jsonl"
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / "run.py"), server.url("/"), "--redis", lost.url,
             "--redis-retry", "1", "--delay", "0", "--ignore-robots", "--threads", "8",
             "--out", str(out), "--quiet"],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while len(server.requests) < 100 and time.monotonic() < deadline:
            time.sleep(0.01)
        lost.stop()
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    assert "Traceback" not in err and PASSWORD not in err
    lines = err.splitlines()
    assert len(lines) <= 3, err  # the outage told once (not once per worker), then the end
    assert lines[-1].startswith("minicrawl: Redis at redis://:***@127.0.0.1") and \
        "unreachable" in lines[-1]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records and not any("internal error" in (r["error"] or "") for r in records)


# -- a full disk, a failing output at the end ----------------------------------------------


def small_site(server: LocalSite, pages: int = 60) -> None:
    for n in range(pages):
        links = "".join(f'<a href="/p{m}">{m}</a>' for m in (n + 1, n + 2))
        server.pages["/" if n == 0 else f"/p{n}"] = Resource(f"<p>{'x' * 200}</p>{links}".encode())


def limited(max_bytes: int) -> Callable[[], None]:
    """A child whose files cannot grow past ``max_bytes``: writes then fail as on a full disk
    (EFBIG instead of ENOSPC; SIGXFSZ ignored, so the write returns the error)."""
    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))
    return limit


CRAWL_FAST = ["--delay", "0", "--ignore-robots", "--threads", "2"]


@pytest.mark.parametrize(("flag", "limit"), [("--out", 2000), ("--trace", 2000),
                                            ("--save-pages", 100)])  # 100: each saved page
def test_a_full_disk_under_a_crawl_output_is_one_line(server, tmp_path, flag, limit):
    small_site(server)
    done = run([server.url("/"), flag, "big.file", *CRAWL_FAST], tmp_path,
               preexec_fn=limited(limit))
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert f"{flag} 'big.file': cannot write: File too large" in done.stderr
    assert "Crawl finished" in done.stdout  # the summary is still printed


def test_a_file_size_limit_is_told_not_a_kill(server, tmp_path):
    """`ulimit -f` as a user sets it, SIGXFSZ not ignored by the test: CPython ignores it at
    start-up, so run.py is not killed; the write past the limit fails and is told in one line."""
    small_site(server)
    done = run([server.url("/"), "--out", "big.file", *CRAWL_FAST], tmp_path,
               preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000)))
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "--out 'big.file': cannot write: File too large" in done.stderr


def test_a_stats_file_that_fails_at_the_end_keeps_the_summary(server, tmp_path):
    small_site(server, pages=5)
    done = run([server.url("/"), "--stats", "stats.json", *CRAWL_FAST], tmp_path,
               preexec_fn=limited(200))  # the check's empty probe fits, the stats do not
    assert done.returncode == 1, done.stderr
    assert done.stderr == "ERROR --stats 'stats.json': cannot write: File too large\n"
    assert "Crawl finished" in done.stdout


def test_dev_null_is_a_fine_output(server, tmp_path):
    small_site(server, pages=3)
    done = run([server.url("/"), "--out", "/dev/null", "--stats", "/dev/null", "--trace",
                "/dev/null", *CRAWL_FAST], tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr


# -- Ctrl-C twice, seeds that are right after all --------------------------------------------


def test_a_second_ctrl_c_stops_waiting_and_still_prints_the_stats(server, tmp_path):
    slow = hang(20)  # ends when the site stops
    server.pages["/"] = Resource(b"".join(b'<a href="/s%d">s</a>' % i for i in range(8)))
    for i in range(8):
        server.pages[f"/s{i}"] = slow
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "run.py"), server.url("/"), "--stats", "stats.json",
         *CRAWL_FAST], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 30
    while sum(r.path.startswith("/s") for r in server.requests) < 2 \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=15)  # not the 20 s the pages in flight would take
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert "interrupted again: 2 pages in flight are not recorded" in err
    assert "Crawl finished (interrupted)" in out
    assert json.loads((tmp_path / "stats.json").read_text())["interrupted"] == 1


def test_a_seed_file_with_a_bom_keeps_its_first_seed(server, tmp_path):
    server.pages["/"] = Resource(b"<p>home</p>")
    seeds = tmp_path / "seeds.txt"
    seeds.write_bytes(BOM + server.url("/").encode() + b"\r\n# done\r\n")
    done = run([str(seeds), "--stats", "stats.json", *CRAWL_FAST], tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert json.loads((tmp_path / "stats.json").read_text())["pages"] == 1


def test_each_rejected_seed_is_told_once_when_others_are_good(server, tmp_path):
    server.pages["/"] = Resource(b"<p>home</p>")
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"{server.url('/')}\nnot a url\nhttps://u:{PASSWORD}@[::1/\n")
    done = run([str(seeds), "missing.txt", *CRAWL_FAST, "--quiet"], tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 3 and "Traceback" not in done.stderr, done.stderr
    assert sum("seeds.txt:2: 'not a url'" in line for line in lines) == 1
    assert sum("seeds.txt:3:" in line for line in lines) == 1
    assert sum("missing.txt: no such seed file" in line for line in lines) == 1
    assert PASSWORD not in done.stderr


def test_thread_start_up_is_bounded(server, tmp_path):
    """The most workers the bounds allow start and end promptly on a small site."""
    small_site(server, pages=5)
    done = run([server.url("/"), "--threads", "1024", "--delay", "0", "--ignore-robots",
                "--quiet"], tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_a_free_port_for_an_unreachable_redis_still_reports_its_cause(tmp_path):
    """Unreachable (nothing listens) is an outage: retried for --redis-retry, then one error
    line after one warning; the password never shown."""
    url = f"redis://:{PASSWORD}@127.0.0.1:{free_port()}/0"
    done = run([SEED, "--redis", url, "--redis-retry", "0.5", "--quiet"], tmp_path)
    assert done.returncode == 3
    assert "Traceback" not in done.stderr and PASSWORD not in done.stderr
    assert done.stderr.splitlines()[-1].startswith("minicrawl: Redis at redis://:***@")
    assert os.path.exists(ROOT / "run.py")


def test_a_seed_password_is_never_printed(server, tmp_path):
    """The crawl uses it (basic auth); the trace, the warnings and the summary do not show it."""
    server.pages["/"] = Resource(b'<a href="/gone">x</a>')
    seed = server.url("/").replace("http://", f"http://user:{PASSWORD}@")
    done = run([seed, "http://[::1/", "--trace", "-", *CRAWL_FAST], tmp_path)
    assert done.returncode == 0, done.stderr
    assert PASSWORD not in done.stdout + done.stderr
    # The credentials are the origin's, sent with each request: no URL of the crawl holds them.
    assert f"SEED http://127.0.0.1:{server.port}/ → TODO" in done.stdout
    assert server.requests[0].headers.get("authorization", "").startswith("Basic ")


def test_every_number_has_bounds_and_the_help_says_them():
    from minicrawl.cli.main import build_parser
    from minicrawl.options import option_fields

    helps = {a.dest: a.help or "" for a in build_parser()._actions}
    numeric = [f for f in option_fields() if str(f.type).split(" ")[0] in ("int", "float")]
    assert len(numeric) >= 15
    for f in numeric:
        if f.name in ("error_rate", "expected_urls"):  # bounded by (0, 1) and by memory
            continue
        assert "high" in f.metadata, f.name
        high = f"{int(f.metadata['high']):,}"
        assert f" to {high})" in helps[f.name] or f"at most {high})" in helps[f.name], \
            (f.name, helps[f.name])


def test_a_system_that_refuses_threads_gets_fewer_workers_not_a_crash(monkeypatch, caplog):
    """Thread start-up is bounded by the system too: a refused thread (its limit reached) is a
    warning, and the workers that did start finish the crawl's loop."""
    import functools
    import threading

    from minicrawl.workers import Workers

    started = []
    real_start = threading.Thread.start

    def start(self):
        if self.name.startswith("worker-") and len(started) >= 3:
            raise RuntimeError("can't start new thread")
        started.append(self.name)
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    ran = []
    workers = Workers(8)
    workers.run([functools.partial(ran.append, n) for n in range(1, 9)],
                on_interrupt=lambda: None, grace=1)
    assert sorted(ran) == [1, 2, 3]
    assert "could start only 3 of 8 workers" in caplog.text
