"""``python run.py --demo`` and ``python -m minicrawl.demo`` as a newcomer runs them (README's
Quick start): a refused run keeps the one-line contract, ``--state`` resumes (a demo crawl's
state is marked so, with its port: the demo resumes only such a state, or one from before the
mark, and a run without ``--demo`` refuses it), ``--check-links`` stays offline, ``--quiet``
leaves stdout to the results, ``--help`` helps."""

from __future__ import annotations

import json
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from minicrawl.demo.site import LocalSite, Resource

ROOT = Path(__file__).resolve().parent.parent
DEMO_URLS = 343  # what the demo site has reachable from its seed, robots.txt allowing


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


def one_line(result: subprocess.CompletedProcess, says: str) -> None:
    """Refused as without --demo: exit 2, one stderr line, nothing of the demo's."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == "", result.stdout
    assert len(result.stderr.splitlines()) == 1 and says in result.stderr, result.stderr


def test_a_refused_demo_is_one_line_and_exit_2(tmp_path):
    one_line(run("--demo", "--report", "/nonexistent/r.html"), "--report")
    server = LocalSite().start()  # a state bound to another crawl: refused, as without --demo
    try:
        server.pages["/a"] = Resource(b"end")
        server.pages["/"] = Resource(b'<a href="/elsewhere">')
        state = tmp_path / "state"
        assert run(server.url("/a"), "--state", str(state), "--quiet").returncode == 0
        other = tmp_path / "other"  # the demo's seed, another site's pages
        assert run(server.url("/"), "--state", str(other), "--quiet").returncode == 0
        seed = server.url("/a")
    finally:
        server.stop()
    # no demo mark, and not a demo crawl from before the mark (its seed is not the demo's)
    one_line(run("--demo", "--state", str(state)), f"its crawl is not a demo crawl (seeds: "
             f"{seed}); give another --state dir, or run it without --demo")
    # the demo's seed (a demo crawl's from before the mark, by its seed), another site's pages
    one_line(run("--demo", "--state", str(other)), "not the demo's (it has /elsewhere)")
    for refused in (state, other):  # and left as they were: no mark
        assert demo_mark(refused) is None


def demo_mark(state: Path) -> str | None:
    """The state's demo mark (the port its demo crawl served the site on), or None."""
    with sqlite3.connect(state / "crawl.db") as db:
        row = db.execute("SELECT value FROM meta WHERE key = 'demo'").fetchone()
    return row[0] if row else None


def seed_port(state: Path) -> int:
    with sqlite3.connect(state / "crawl.db") as db:
        seeds = json.loads(db.execute("SELECT value FROM meta WHERE key = 'config'")
                           .fetchone()[0])["seeds"]
    return int(re.fullmatch(r"http://127\.0\.0\.1:(\d+)/", seeds[0])[1])


def recorded(state: Path) -> int:
    try:
        with sqlite3.connect(state / "crawl.db") as db:
            return db.execute("SELECT count(*) FROM pages").fetchone()[0]
    except sqlite3.Error:  # not created yet
        return 0


def test_demo_with_state_resumes_after_kill_9(tmp_path):
    """The demo's server took a new port each run, so a second run's seed was another and the
    state refused it: now it serves the site on the port the state's crawl used."""
    state = tmp_path / "state"
    first = subprocess.Popen([sys.executable, str(ROOT / "run.py"), "--demo", "--state",
                              str(state), "--delay", "0.02", "--per-host", "2"],
                             cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while recorded(state) < 30 and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert first.returncode == -signal.SIGKILL  # killed midway, not finished
    assert 0 < recorded(state) < DEMO_URLS
    # Marked a demo crawl's from its first commit, with its port (its seed's)
    port = seed_port(state)
    assert demo_mark(state) == str(port)
    # Without --demo nothing serves the site at its seed: the same seed is refused, naming
    # --demo, and the state is left as it was
    pages = recorded(state)
    one_line(run(f"http://127.0.0.1:{port}/", "--state", str(state), "--quiet"),
             f"holds a crawl of the demo site (on port {port}): resume it with --demo")
    assert recorded(state) == pages
    second = run("--demo", "--state", str(state))
    assert second.returncode == 0, second.stdout + second.stderr
    assert "resuming the crawl in" in second.stderr
    log = re.search(r"Server log: (\d+) requests for (\d+) paths; reachable (\d+), recorded by "
                    r"earlier runs (\d+), missed 0, fetched twice 0, unreachable fetched 0",
                    second.stdout)
    assert log, second.stdout
    requests, paths, reachable, earlier = map(int, log.groups())
    # the whole site crawled once: each URL fetched by one run only
    assert requests == paths and reachable == DEMO_URLS and requests + earlier == DEMO_URLS
    with sqlite3.connect(state / "crawl.db") as db:
        assert db.execute("SELECT count(*) FROM todo").fetchone()[0] == 0
    done = run("--demo", "--state", str(state), "--quiet")  # complete: nothing to do, exit 0
    assert done.returncode == 0 and "is complete" in done.stderr, done.stderr
    again = run("--demo", "--state", str(state), "--recrawl")  # each page once more
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"{DEMO_URLS} requests for {DEMO_URLS} paths" in again.stdout


def test_demo_state_whose_port_is_taken_is_one_line(tmp_path):
    state = tmp_path / "state"
    assert run("--demo", "--state", str(state), "--max-depth", "1", "--quiet").returncode == 0
    port = int(demo_mark(state))  # the port the demo's crawl served the site on
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        one_line(run("--demo", "--state", str(state), "--max-depth", "1"),
                 f"port {port}, which is in use now")


def test_a_demo_state_whose_config_is_too_deep_to_read_is_one_line(tmp_path):
    """A demo state whose meta config is nested past the JSON parser's depth: the demo cannot
    read its port, and the crawl refuses it as a corrupt state, not another port's."""
    state = tmp_path / "state"
    assert run("--demo", "--state", str(state), "--max-depth", "1", "--quiet").returncode == 0
    with sqlite3.connect(state / "crawl.db") as db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'config'", ("[" * 100_000,))
    one_line(run("--demo", "--state", str(state), "--max-depth", "1"),
             f"{state / 'crawl.db'}: corrupt meta table (RecursionError(")


def test_a_demo_state_from_before_the_mark_resumes_and_is_marked(tmp_path):
    """A demo crawl's state made before the demo mark (recognised by its seed, the demo's, and
    its pages, all the demo's) resumes on its port, and is marked from then on."""
    state = tmp_path / "state"
    capped = run("--demo", "--state", str(state), "--max-pages", "40", "--quiet")
    assert capped.returncode == 0, capped.stderr
    port = seed_port(state)
    with sqlite3.connect(state / "crawl.db") as db:  # as a minicrawl before the mark left it
        db.execute("DELETE FROM meta WHERE key = 'demo'")
    assert demo_mark(state) is None and 0 < recorded(state) < DEMO_URLS
    resumed = run("--demo", "--state", str(state))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "resuming the crawl in" in resumed.stderr
    assert re.search(r"recorded by earlier runs \d+, missed 0, fetched twice 0, unreachable "
                     r"fetched 0", resumed.stdout), resumed.stdout
    assert demo_mark(state) == str(port)
    with sqlite3.connect(state / "crawl.db") as db:  # complete
        assert db.execute("SELECT count(*) FROM todo").fetchone()[0] == 0
    one_line(run(f"http://127.0.0.1:{port}/", "--state", str(state)), "resume it with --demo")


def test_demo_check_links_needs_no_internet():
    """Its off-site links name .invalid hosts (never resolved, RFC 2606): the same list on every
    machine, none of it from the internet."""
    result = run("--demo", "--check-links", "--quiet")
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.startswith("Broken links: 31 URLs, linked 619 times from 295 pages")
    offsite = {m[1] for m in re.finditer(r"^ERR  https?://([^/:]+)", result.stdout, re.M)}
    assert offsite == {"offsite.invalid", "www.example.invalid"}, offsite
    assert "example.com" not in result.stdout


def test_demo_quiet_leaves_stdout_to_the_results():
    """--quiet: no banner, no server log (the demo's summary), stdout the results alone."""
    quiet = run("--demo", "--quiet", "--max-depth", "1")
    assert quiet.returncode == 0 and quiet.stdout == "", quiet.stdout
    listed = run("--demo", "--quiet", "--check-links", "--max-depth", "1")
    assert listed.stdout.startswith("Broken links:"), listed.stdout
    assert "Demo site at" not in listed.stdout and "Server log" not in listed.stdout
    records = run("--demo", "--out", "-", "--max-depth", "1")  # stdout is the records'
    assert records.returncode == 0, records.stderr
    assert [json.loads(line)["url"] for line in records.stdout.splitlines()]
    assert "Server log: " in records.stderr
    missed = run("--demo", "--quiet", "--visited", "bloom", "--expected-urls", "100",
                 "--error-rate", "0.01")  # what went wrong is a warning: on stderr
    assert missed.returncode == 1 and missed.stdout == ""
    assert re.search(r"^Missed: ", missed.stderr, re.M), missed.stderr


def test_demo_module_has_a_help():
    result = subprocess.run([sys.executable, "-m", "minicrawl.demo", "--help"],
                            capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert result.returncode == 0 and result.stdout.startswith("usage: python -m minicrawl.demo")
    assert "--port" in result.stdout


def test_demo_module_usage_errors_are_one_line_as_run_py_s():
    """``python -m minicrawl.demo`` said a usage error in two lines (the usage, then the error)
    where run.py says one; it uses run.py's parser now (minicrawl.errors.OneLineParser): one
    stderr line naming the fault and --help, exit status 2, a wrong option or a bad value
    (``run.py --demo`` with a wrong option: run.py's own line)."""
    one_line(run("--demo", "--bogus"), "minicrawl: error: unrecognized arguments: --bogus")
    for args, says in ((["--bogus"], "unrecognized arguments: --bogus"),
                       (["--po", "8"], "unrecognized arguments: --po 8"),  # no abbreviation
                       (["--port", "99999"], "--port must be 0 to 65535, got 99999")):
        result = subprocess.run([sys.executable, "-m", "minicrawl.demo", *args],
                                capture_output=True, text=True, timeout=30, cwd=ROOT)
        assert result.returncode == 2 and result.stdout == "", result.stdout + result.stderr
        assert result.stderr.splitlines() == [
            f"python -m minicrawl.demo: error: {says} (see python -m minicrawl.demo --help)"]
