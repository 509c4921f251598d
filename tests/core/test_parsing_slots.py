"""The core's parsing slot: one worker at a time has libxml2 parse a page, however many workers
fetch, walk trees and resolve links (tests/core/test_shape.py counts the lines; bench/README.md
says why)."""

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import minicrawl.core.links as links_module
import minicrawl.html.walk as walk_module
from minicrawl import Crawler as RunPyCrawler
from minicrawl.core.crawler import Crawler
from minicrawl.demo.site import LocalSite, Resource


def crawl_counting(slots: int | None, monkeypatch, runpy: bool = False) -> tuple[int, int]:
    """A crawl of 40 linked pages by 8 workers with ``slots`` parsing slots (None: the crawl's
    own), by the core or by run.py's crawler: (pages, the most workers that were parsing at
    once, in the slot: its parser asked for, libxml2 about to parse)."""
    inside, most, lock = [0], [0], threading.Lock()
    tree_parser = walk_module._tree_parser

    def counting():
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        try:
            time.sleep(0.01)  # long enough for the other workers to arrive
            return tree_parser()
        finally:
            with lock:
                inside[0] -= 1

    monkeypatch.setattr(walk_module, "_tree_parser", counting)
    with LocalSite() as site:
        for n in range(40):
            links = "".join(f'<a href="/p{m}">{m}</a>' for m in range(1, 40))
            site.pages["/" if n == 0 else f"/p{n}"] = Resource(f"<p>{n}</p>{links}".encode())
        if runpy:  # politeness off: all 8 at work (--per-host 1 would keep them apart)
            stats = RunPyCrawler([site.url("/")], threads=8, delay=0, per_host=64,
                                 ignore_robots=True).run()
            return stats["pages"], most[0]
        crawler = Crawler([site.url("/")], threads=8)
        if slots is not None:
            crawler.parsing = threading.BoundedSemaphore(slots)
        summary = crawler.run()
    return summary.pages, most[0]


def test_no_more_workers_parse_at_once_than_there_are_slots(monkeypatch):
    assert crawl_counting(1, monkeypatch) == (40, 1)
    pages, most = crawl_counting(8, monkeypatch)  # the same crawl, unlimited: they do overlap
    assert pages == 40 and most > 1


def test_a_crawl_has_one_parsing_slot(monkeypatch):
    # One, not one per core: Python's code runs on one core at a time (the GIL), lxml builds the
    # tree beside it on a second; a second parser only added switches (bench/README.md, issue 37)
    crawler = Crawler(["http://127.0.0.1:9/"], threads=16)
    assert crawler.parsing.acquire(blocking=False)
    assert not crawler.parsing.acquire(blocking=False)
    assert crawl_counting(None, monkeypatch) == (40, 1)  # the crawl's own: one at a time


def test_run_py_crawls_with_the_core_crawlers_parsing_slot(monkeypatch):
    assert crawl_counting(None, monkeypatch, runpy=True) == (40, 1)


def test_extract_links_has_no_gate_of_its_own(monkeypatch):
    # The one limit is the crawl's slot: extract_links lets any number of threads parse at once
    # (a second gate inside it, as many as cores, cost every page a Python semaphore)
    n = (os.cpu_count() or 2) + 1
    met = threading.Barrier(n, timeout=30)
    tree_parser = walk_module._tree_parser

    def meeting():
        met.wait()  # BrokenBarrierError unless all n threads are parsing at once
        return tree_parser()

    monkeypatch.setattr(walk_module, "_tree_parser", meeting)
    with ThreadPoolExecutor(n) as pool:
        found = list(pool.map(lambda _: links_module.extract_links(b'<a href="/x">x</a>').hrefs,
                              range(n)))
    assert found == [["/x"]] * n


def test_the_slot_is_held_by_the_parse_not_by_the_walk(monkeypatch):
    # One worker: the slot is held while libxml2 parses and free while the tree is walked (and
    # the links resolved), so another worker may parse its page meanwhile
    held: dict[str, set[bool]] = {"parse": set(), "walk": set()}
    tree_parser, walked = walk_module._tree_parser, walk_module.Walk.walked
    with LocalSite() as site:
        site.pages["/"] = Resource(b'<a href="/a">a</a>')
        site.pages["/a"] = Resource(b"<p>a</p>")
        crawler = Crawler([site.url("/")], threads=1)

        def parsing():
            held["parse"].add(crawler.parsing.locked())
            return tree_parser()

        def walking(self, top):
            held["walk"].add(crawler.parsing.locked())
            return walked(self, top)

        monkeypatch.setattr(walk_module, "_tree_parser", parsing)
        monkeypatch.setattr(walk_module.Walk, "walked", walking)
        assert crawler.run().pages == 2
    assert held == {"parse": {True}, "walk": {False}}
