"""Bad option values: a clear error naming the option, from the library and the command line.

The library raises ``ValueError`` when an :class:`Options` is made (so ``Crawler(seeds, **kw)``
too); the command line turns it into argparse's usage error (exit status 2, no traceback).
Nothing here needs a network: validation happens before any crawl starts.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from minicrawl import Crawler, Options
from minicrawl.cli.main import build_parser, main, options_from_args
from minicrawl.demo import DEMO_DEFAULTS
from minicrawl.options import CRAWL_NAME_RE, REDIS_SCHEMES, option_fields

# A test closes the ToDos, gates and connections it opens (tests/conftest.py's `closing`):
# a heartbeat left beating fails it (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("no_heartbeat_left_running")

ROOT = Path(__file__).resolve().parent.parent
SEED = "http://127.0.0.1:9/"  # never contacted: every case fails before the crawl

# (command-line arguments, the library's keywords for the same value, the expected message)
BAD = [
    (["--threads", "0"], {"threads": 0}, "--threads must be at least 1, got 0"),
    (["--timeout", "0"], {"timeout": 0.0}, "--timeout must be greater than 0, got 0.0"),
    (["--timeout", "nan"], {"timeout": float("nan")}, "--timeout must be a finite number"),
    (["--timeout", "inf"], {"timeout": float("inf")}, "--timeout must be a finite number"),
    (["--max-bytes", "0"], {"max_bytes": 0}, "--max-bytes must be at least 1, got 0"),
    (["--user-agent", " "], {"user_agent": " "}, "--user-agent must not be empty"),
    (["--user-agent", "bot\r\nX-Evil: 1"], {"user_agent": "bot\r\nX-Evil: 1"},
     "--user-agent must not contain control characters"),
    (["--user-agent", "bot€"], {"user_agent": "bot€"}, "--user-agent must be ISO-8859-1 text"),
    (["--expected-urls", "0"], {"expected_urls": 0}, "--expected-urls must be at least 1, got 0"),
    (["--error-rate", "2"], {"error_rate": 2.0},
     "--error-rate must be between 0 and 1 (exclusive), got 2.0"),
    (["--error-rate", "0"], {"error_rate": 0.0}, "--error-rate must be between 0 and 1"),
    (["--error-rate", "1"], {"error_rate": 1.0}, "--error-rate must be between 0 and 1"),
    (["--expected-urls", "1000000000000000", "--error-rate", "1e-300"],
     {"expected_urls": 10**15, "error_rate": 1e-300},
     "--expected-urls 1,000,000,000,000,000 at --error-rate 1e-300 needs a Visited filter of "),
    (["--expected-urls", "100000000000000"], {"expected_urls": 10**14},
     "--expected-urls 100,000,000,000,000 at the default rate (5e-16) needs a Visited filter "
     "of 7,569,372.5 GiB, more than this machine's"),
    (["--allow-domain", "https://example.org/"], {"allow_domain": ["https://example.org/"]},
     "--allow-domain must be a host name like example.org"),
    (["--allow-domain", "example.org:8080"], {"allow_domain": ["example.org:8080"]},
     "--allow-domain must be a host name like example.org"),
    (["--allow-domain", ""], {"allow_domain": [""]}, "--allow-domain must be a host name"),
    (["--include", "a("], {"include": ["a("]},
     "--include 'a(' is not a valid regular expression: missing ), unterminated subpattern"),
    (["--exclude", "[z-a]"], {"exclude": ["[z-a]"]},
     "--exclude '[z-a]' is not a valid regular expression: bad character range"),
    (["--max-depth", "-1"], {"max_depth": -1}, "--max-depth must be at least 0, got -1"),
    (["--max-pages", "0"], {"max_pages": 0}, "--max-pages must be at least 1, got 0"),
    (["--max-url-length", "10"], {"max_url_length": 10},
     "--max-url-length must be at least 16, got 10"),
    (["--max-repeated-segments", "-1"], {"max_repeated_segments": -1},
     "--max-repeated-segments must be at least 0, got -1"),
    (["--max-pages-per-host", "0"], {"max_pages_per_host": 0},
     "--max-pages-per-host must be at least 1, got 0"),
    (["--delay", "-0.5"], {"delay": -0.5}, "--delay must be at least 0, got -0.5"),
    (["--max-crawl-delay", "-1"], {"max_crawl_delay": -1.0},
     "--max-crawl-delay must be at least 0, got -1.0"),
    (["--per-host", "0"], {"per_host": 0}, "--per-host must be at least 1, got 0"),
    (["--retries", "-1"], {"retries": -1}, "--retries must be at least 0, got -1"),
    (["--retries", "5000"], {"retries": 5000}, "--retries must be at most 100, got 5000"),
    (["--retry-backoff", "-1"], {"retry_backoff": -1.0},
     "--retry-backoff must be at least 0, got -1.0"),
    (["--max-backoff", "-1"], {"max_backoff": -1.0}, "--max-backoff must be at least 0, got -1.0"),
    (["--out", ""], {"out": ""}, "--out must not be empty"),
    (["--state", ""], {"state": ""}, "--state must not be empty"),
    (["--redis", "http://127.0.0.1:6379/0"], {"redis": "http://127.0.0.1:6379/0"},
     "--redis must be a Redis URL"),
    (["--redis", "redis://127.0.0.1:1/0", "--visited", "exact"],
     {"redis": "redis://127.0.0.1:1/0", "visited": "exact"},
     "--visited exact does not work with --redis"),
    (["--crawl", "my crawl"], {"crawl": "my crawl"},
     "--crawl must be 1-100 letters, digits, '_', '.', ':' or '-', got 'my crawl'"),
    (["--crawl", "{x}"], {"crawl": "{x}"}, "--crawl must be 1-100 letters"),
    (["--visited-shards", "-1"], {"visited_shards": -1},
     "--visited-shards must be at least 0, got -1"),
    (["--visited-shards", "20000"], {"visited_shards": 20000},
     "--visited-shards must be at most 16384, got 20000"),
    (["--reclaim-after", "0"], {"reclaim_after": 0.0},
     "--reclaim-after must be greater than 0, got 0.0"),
    (["--redis-retry", "-1"], {"redis_retry": -1.0}, "--redis-retry must be at least 0, got -1.0"),
]
IDS = [" ".join(args) for args, _, _ in BAD]


@pytest.mark.parametrize(("args", "settings", "message"), BAD, ids=IDS)
def test_the_command_line_makes_a_bad_value_a_usage_error(args, settings, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([SEED, *args])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"error: {message}" in err
    assert err.count("\n") == 1  # one line, not argparse's usage block
    assert "Traceback" not in err


@pytest.mark.parametrize(("args", "settings", "message"), BAD, ids=IDS)
def test_the_library_raises_value_error_with_the_same_message(args, settings, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        Options(**settings)
    with pytest.raises(ValueError, match=re.escape(message)):
        Crawler([SEED], **settings)
    with pytest.raises(ValueError, match=re.escape(message)):
        Options().replace(**settings)


@pytest.mark.parametrize("args", [["--threads", "0"], ["--per-host", "0"],
                                  ["--error-rate", "2"], ["--include", "("]])
def test_run_py_exits_2_with_the_message_and_no_traceback(args):
    """As a user runs it: the three reported cases, and a bad regex."""
    result = subprocess.run([sys.executable, str(ROOT / "run.py"), SEED, *args],
                            capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 2, result.stderr
    assert re.search(rf"error: {re.escape(args[0])} ", result.stderr), result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""  # nothing crawled, no summary


# (the program after ``python``, a command line with an option cut short, what stays unread)
PREFIXES = [
    ([str(ROOT / "run.py"), SEED, "--check-link"], "--check-link"),  # --check-links
    ([str(ROOT / "run.py"), SEED, "--del", "0"], "--del 0"),  # --delay
    ([str(ROOT / "run.py"), "bloom", "measure", "--ha", "blake2b"], "--ha blake2b"),  # --hash
    (["-m", "minicrawl.core", SEED, "--thread", "2"], "--thread 2"),  # --threads
    (["-m", "minicrawl.demo", "--po", "0"], "--po 0"),  # --port
]


@pytest.mark.parametrize(("program", "unread"), PREFIXES, ids=[p[1] for p in PREFIXES])
def test_an_option_cut_short_is_a_usage_error_not_the_option_it_begins(program, unread):
    """argparse took any unambiguous prefix, so ``--check-link`` ran as ``--check-links``
    without a word (and a prefix that worked would break the day an option sharing it is
    added): each command a user runs refuses it, exit status 2, naming what it did not read."""
    result = subprocess.run([sys.executable, *program], capture_output=True, text=True,
                            timeout=60, cwd=ROOT)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"error: unrecognized arguments: {unread}" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""  # nothing crawled, served or measured


@pytest.mark.parametrize(("settings", "message"), [
    ({"threads": 2.5}, "--threads must be an integer, got 2.5"),
    ({"threads": True}, "--threads must be an integer, got True"),
    ({"threads": "4"}, "--threads must be an integer, got '4'"),
    ({"max_depth": 1.5}, "--max-depth must be an integer"),
    ({"delay": "1"}, "--delay must be a finite number, got '1'"),
    ({"ignore_robots": 1}, "--ignore-robots must be True or False, got 1"),
    ({"include": "abc"}, "--include must be a list of strings, got 'abc'"),
    ({"exclude": [1]}, "--exclude must be a list of strings"),
    ({"user_agent": None}, "--user-agent must be a string, got None"),
    ({"visited": "bitmap"}, "--visited must be one of auto, bloom, scalable, exact, got 'bitmap'"),
])
def test_the_library_refuses_values_of_the_wrong_type(settings, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        Options(**settings)


def test_the_defaults_and_the_demo_defaults_validate():
    options = Options()
    options.validate()
    assert options_from_args(build_parser().parse_args([SEED])) == options
    Options(**DEMO_DEFAULTS).validate()
    for f in option_fields():  # each field's own default
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        Options(**{f.name: default}).validate()


def test_values_at_the_bounds_are_accepted():
    Options(threads=1, timeout=0.001, max_bytes=1, expected_urls=1, error_rate=0.999,
            max_depth=0, max_pages=1, max_url_length=16, max_repeated_segments=0,
            max_pages_per_host=1, delay=0, max_crawl_delay=0, per_host=1, retries=0,
            retry_backoff=0, max_backoff=0, visited_shards=16384, reclaim_after=0.1,
            redis_retry=0, allow_domain=["Example.org.", "[::1]"], include=[r"/a/\d+"],
            exclude=[re.compile("x")], user_agent="bot/1.0 (é)", crawl="a.b:c-d_1",
            redis="redis+cluster://127.0.0.1:7000", out=str(ROOT / "x.jsonl"),
            state=Path("state"), trace="-")
    Options(max_depth=None, max_pages=None, max_pages_per_host=None, redis=None)


def test_the_redis_module_refuses_what_options_refuse():
    """One rule for crawl names and Redis URLs: options.py's, which redis_conn uses too."""
    from minicrawl.redis import conn as redis_conn

    for bad in ("a b", "x" * 101, "{tag}"):
        assert not CRAWL_NAME_RE.match(bad)
        with pytest.raises(ValueError):
            redis_conn.check_name(bad)
    assert redis_conn.check_name("a.b:c-d_1") == "a.b:c-d_1"
    with pytest.raises(ValueError, match="not a Redis URL"):
        redis_conn.connect("redisx://127.0.0.1:1")
    with pytest.raises(ValueError, match="must be a Redis URL"):
        Options(redis="redisx://127.0.0.1:1")
    assert "redis+cluster" in REDIS_SCHEMES


def test_compiled_patterns_only_for_include_and_exclude(tmp_path):
    """The library takes compiled regexes for include/exclude (and a state dir records their
    source); a host name cannot be one."""
    with pytest.raises(ValueError, match="--allow-domain must be a list of strings"):
        Options(allow_domain=[re.compile("example")])
    crawler = Crawler([SEED], include=[re.compile(r"^http://127\.0\.0\.1:9/")],
                      state=str(tmp_path / "state"))
    assert crawler.options.include[0].pattern.startswith("^http")
    crawler.state.close()


def test_an_exact_visited_is_not_sized_so_any_expected_urls_will_do():
    assert Options(visited="exact", expected_urls=10**15, error_rate=1e-300).visited == "exact"
