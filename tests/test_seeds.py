"""Seed files are read lazily (issue 38, point 2): the crawl starts while a million-line file is
still being read, repeats are told apart by Visited, the crawl does not end before the file does,
bad lines are told with ``file:line``, and the scope waits for the seeds' hosts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from minicrawl import Crawler
from minicrawl.core.interfaces import Item
from minicrawl.demo.site import LocalSite, Request, Resource
from minicrawl.frontier.todo import ToDo
from minicrawl.scope import Scope
from minicrawl.seeds import SeedFeed

ROOT = Path(__file__).resolve().parent.parent
FLAGS = ("--quiet", "--ignore-robots", "--delay", "0")


class AnyPage(LocalSite):
    """Answers every ``/p…`` path with a page without links (a million seeds need no dict);
    ``on_first`` is called with the first request."""

    def __init__(self, on_first=None) -> None:
        super().__init__()
        self.on_first = on_first
        self._first = threading.Lock()

    def resolve(self, request: Request) -> Resource:
        """A small page for any /p path, the pages dict for the rest."""
        if self.on_first is not None and self._first.acquire(blocking=False):
            self.on_first(request)
        if request.path.startswith("/p"):
            return Resource(b"<html><body>end</body></html>")
        return super().resolve(request)


def crawl(args: list[str], on_start=None, timeout: float = 120) -> tuple[int, str, int]:
    """run.py with ``args``: (exit status, stderr, its peak RSS in kB). The peak is the child's
    own VmHWM, read from /proc while it runs (it starts anew at exec): wait4's ru_maxrss would
    count the RSS of the pytest process it was forked from (700 MB late in a full suite)."""
    peak = [0]

    def watch(pid: int) -> None:
        while True:
            try:
                with open(f"/proc/{pid}/status") as f:
                    hwm = next((int(line.split()[1]) for line in f if line.startswith("VmHWM")),
                               None)
            except (OSError, ValueError):
                return
            if hwm is None:  # a zombie: its memory is gone
                return
            peak[0] = max(peak[0], hwm)
            time.sleep(0.02)

    with open(os.devnull, "wb") as out, subprocess.Popen(
            [sys.executable, str(ROOT / "run.py"), *args], stdout=out,
            stderr=subprocess.PIPE, cwd=ROOT) as proc:
        if on_start is not None:
            on_start(proc)
        watcher = threading.Thread(target=watch, args=(proc.pid,), daemon=True)
        watcher.start()
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            err = proc.stderr.read().decode()  # type: ignore[union-attr]
            watcher.join()
            proc.wait()
        finally:
            timer.cancel()
        return proc.returncode, err, peak[0]


def holds_open(pid: int, path: Path) -> bool:
    """Whether process ``pid`` has ``path`` open (read from /proc, outside it)."""
    fds = Path(f"/proc/{pid}/fd")
    for fd in fds.iterdir():
        try:
            if os.readlink(fd) == str(path):
                return True
        except OSError:
            continue
    return False


def test_a_million_seeds_start_while_the_file_is_read(tmp_path):
    """The first request reaches the server while the crawler still has the file open (it was
    reading all of it, and comparing, first: nothing in 120 s); RSS stays small; bad lines are
    told with file:line as they are reached."""
    seeds = tmp_path / "seeds.txt"
    seen: dict[str, bool] = {}
    proc: list[subprocess.Popen] = []

    def first(_: Request) -> None:
        seen["file open"] = holds_open(proc[0].pid, seeds)

    with AnyPage(on_first=first) as server:
        with open(seeds, "w") as f:
            f.write(f"{server.url('/p0')}\nnot a url\n")
            f.writelines(f"{server.url(f'/p{i}')}\n" for i in range(1, 1_000_000))
        code, err, rss_kb = crawl([str(seeds), "--max-pages", "200", "--threads", "4", *FLAGS],
                                  on_start=proc.append)
        assert code == 0, err
        assert seen == {"file open": True}
        assert len(server.requests) == 200
    assert f"{seeds}:2: 'not a url' is not a valid http(s) URL" in err
    assert rss_kb < 250 * 1024, rss_kb


def test_the_crawl_does_not_end_before_the_seed_file(tmp_path):
    """3,000 seeds, each repeated once and one bad line far down: every seed is fetched once.
    The first seed is in ToDo before the workers start and the rest comes while they work, so
    without the feeder counted busy the crawl ended with the first chunk."""
    with AnyPage() as server:
        seeds = tmp_path / "seeds.txt"
        lines = [server.url(f"/p{i}") for i in range(3000)]
        lines = lines + lines[:1500] + ["ftp://x.org/"] + lines[1500:]
        seeds.write_text("\n".join(lines) + "\n")
        stats = tmp_path / "stats.json"
        code, err, _ = crawl([str(seeds), "--threads", "4", "--stats", str(stats), *FLAGS])
        assert code == 0, err
        counts = server.fetch_counts()
        assert len(counts) == 3000 and set(counts.values()) == {1}
        assert json.loads(stats.read_text())["seeds"] == 3000
    assert f"{seeds}:4501: 'ftp://x.org/'" in err and err.count("is not a valid") == 1


def test_a_link_to_a_seed_host_not_read_yet_waits_for_the_pass():
    """Until the pass over the seed files has ended, a host not known yet is not refused."""
    scope = Scope(["http://a.test/"], more_seeds=True)
    answers: list[bool] = []
    asking = threading.Thread(target=lambda: answers.append(scope.admits("http://b.test/x")))
    asking.start()
    asking.join(0.2)
    assert answers == []  # waiting
    scope.learned(["https://b.test"])  # its host by either scheme
    asking.join(5)
    assert answers == [True]
    assert scope.admits("http://a.test/y") and not scope.admits("http://c.test/")


def test_links_to_a_host_seeded_far_down_the_file_are_followed(tmp_path):
    """The first seed's page links to localhost, a host whose only seed is the file's last line
    (500,000 lines down, read a second or so after that page): the link is taken as in scope,
    as when the seeds were all read first (the trace says what was decided)."""
    with AnyPage() as server:
        server.pages["/start"] = Resource(
            f'<a href="http://localhost:{server.port}/linked">x</a>'.encode())
        seeds = tmp_path / "seeds.txt"
        with open(seeds, "w") as f:
            f.write(f"{server.url('/start')}\n")
            f.writelines(f"{server.url(f'/p{i}')}\n" for i in range(500_000))
            f.write(f"http://localhost:{server.port}/p-last\n")
        trace = tmp_path / "trace.txt"
        code, err, _ = crawl([str(seeds), "--max-pages", "50", "--threads", "2",
                              "--trace", str(trace), *FLAGS])
        assert code == 0, err
        linked = f"http://localhost:{server.port}/linked"
    lines = trace.read_text().splitlines()
    at = next(n for n, line in enumerate(lines) if linked in line)
    assert "VISITED? no → TODO" in lines[at + 1], lines[at: at + 2]


def test_a_crawl_stopped_mid_file_resumes_with_state_and_fetches_each_seed_once(tmp_path):
    """--state: a crawl capped while its file was still being read, run again, fetches the
    seeds it had not (those journaled and those never read) and none twice."""
    with AnyPage() as server:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("".join(f"{server.url(f'/p{i}')}\n" for i in range(5000)))
        state = str(tmp_path / "state")
        code, err, _ = crawl([str(seeds), "--state", state, "--max-pages", "100", "--threads",
                              "4", *FLAGS])
        assert code == 0, err
        assert len(server.fetch_counts()) == 100
        code, err, _ = crawl([str(seeds), "--state", state, "--threads", "4", *FLAGS])
        assert code == 0, err
        counts = server.fetch_counts()
        assert len(counts) == 5000 and set(counts.values()) == {1}


def test_the_feed_keeps_a_bounded_lead_and_every_seed_is_fetched(tmp_path):
    """With at most 100 seeds waiting in ToDo, 2,000 seeds are all fetched once, and ToDo never
    held more than the lead (a million seeds put at once held 700 MB)."""
    with AnyPage() as server:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("".join(f"{server.url(f'/p{i}')}\n" for i in range(2000)))
        crawler = Crawler(str(seeds), threads=4, delay=0, ignore_robots=True)
        assert crawler._feed is not None
        crawler._feed.lead = 100
        most = [0]

        def on_page(_) -> None:
            most[0] = max(most[0], len(crawler.todo))

        crawler.on_page = on_page
        crawler.run()
        counts = server.fetch_counts()
        assert len(counts) == 2000 and set(counts.values()) == {1}
    assert most[0] <= 100 + 1000  # the lead, and the chunk that may pass it


class Flaky(AnyPage):
    """AnyPage whose paths in ``failing`` answer 503 twice, then 200; at each request it notes
    how many seeds the crawl has queued (``queued()``) and not yet requested: its lead, seen
    from outside (plus the few taken and not yet asked for)."""

    def __init__(self, failing: set[str]) -> None:
        super().__init__()
        self.failing = failing
        self.queued = lambda: 0
        self.tries: Counter[str] = Counter()
        self.most_ahead = 0
        self._tries = threading.Lock()

    def resolve(self, request: Request) -> Resource:
        """503 for a failing path's first two requests; the lead noted."""
        with self._tries:
            self.tries[request.path] += 1
            tries = self.tries[request.path]
            self.most_ahead = max(self.most_ahead, self.queued() - len(self.tries))
        if request.path in self.failing and tries <= 2:
            return Resource(b"busy", status=503)
        return super().resolve(request)


def test_retried_seeds_do_not_push_the_feed_past_its_lead(tmp_path):
    """5,000 seeds, the first 1,000 answering 503 twice before 200: each is retried twice, and
    the crawl reads no further ahead of its requests than the lead and a chunk. A retry taken
    from ToDo was counted as a seed taken again, so the feeder read ~2,000 seeds past its lead."""
    failing = {f"/p{i}" for i in range(1000)}
    with Flaky(failing) as server:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("".join(f"{server.url(f'/p{i}')}\n" for i in range(5000)))
        crawler = Crawler(str(seeds), threads=4, delay=0, ignore_robots=True, retries=2,
                          retry_backoff=0.01)
        assert crawler._feed is not None
        crawler._feed.lead = 100
        server.queued = lambda: crawler.stats["seeds"]
        crawler.run()
        counts = server.fetch_counts()
        assert len(counts) == 5000
        assert {path: n for path, n in counts.items() if n != 1} == dict.fromkeys(failing, 3)
    # the lead, the chunk that may pass it, and the seeds taken but not yet requested (4 threads)
    assert server.most_ahead <= 100 + 1000 + 4, server.most_ahead


def test_a_seed_counts_against_the_lead_until_its_first_take_only():
    """The feed over run.py's ToDo, a lead of 3: a seed retried, given back unfetched and taken
    again, is counted once; a depth-0 item never fed (a resumed crawl's) not at all. The feeder
    finds room only when fewer than 3 fed seeds wait (it read on past its lead before)."""
    feed = SeedFeed(ToDo(), lead=3)

    def room_now() -> bool:
        waiting = threading.Thread(target=feed.room, daemon=True)
        waiting.start()
        waiting.join(0.2)
        return not waiting.is_alive()

    def fed(urls: list[str]) -> None:
        items = [Item(url) for url in urls]
        feed.entering(items)
        feed.todo.put_many(items)
        feed.fed()

    fed(["http://a.test/1", "http://a.test/2", "http://a.test/3"])
    assert not room_now()
    seed = feed.take()
    assert seed == Item("http://a.test/1")
    feed.todo.put_back(seed)  # politeness said WAIT: the same item, in its turn, when done
    feed.done(seed)
    assert feed.take() == seed
    feed.todo.put(Item(seed.url, attempt=1))  # a 503: retried (at the tail of its host's line)
    feed.done(seed)
    assert [feed.take() for _ in range(3)] == [
        Item("http://a.test/2"), Item("http://a.test/3"), Item(seed.url, attempt=1)]
    feed.todo.put(Item("http://b.test/resumed"))  # from a --state journal: never fed
    assert feed.take() == Item("http://b.test/resumed")
    assert room_now()  # no fed seed waits
    fed(["http://a.test/4", "http://a.test/5", "http://a.test/6", "http://a.test/7"])
    assert not room_now()  # 4 wait (the old count said 1: three takes too many, one unfed)
    assert feed.take() == Item("http://a.test/4")
    assert not room_now()  # 3
    assert feed.take() == Item("http://a.test/5")
    assert room_now()  # 2
    feed.finish()
