"""Benchmark of the shared crawl's Redis parts (run by hand: ``python bench/bench_redis.py``).

Starts its own redis-server on loopback (no persistence) and measures, with one client:

1. add-or-check URLs/s for four ways of testing and setting a URL's k = 8 bits:
   per-bit GETBIT/SETBIT round trips (the usual recipe), one BITFIELD per URL, pipelined
   BITFIELDs in batches of 100, and the Lua batch RedisBloomVisited uses (batches of 100);
2. duplicates when 4 processes add the same 50 URLs at once with each method (racy = > 0);
3. Redis memory for 10 M URLs at p = 0.001: the Bloom bitmaps vs a SET of SHA-1 fingerprints
   (what scrapy-redis keeps), the SET extrapolated from 1 M inserted;
4. crawl pages/s with 1, 2 and 3 processes (4 threads each) on a generated site, served from
   the benchmark process as fast as it can, and with 50 ms per answer (a remote site);
5. the Lua batch against a local 3-node Redis Cluster.
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing as mp
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minicrawl.demo import generate_site  # noqa: E402
from minicrawl.demo.site import LocalSite  # noqa: E402
from minicrawl.redis.conn import SharedRedis  # noqa: E402
from minicrawl.redis.visited import RedisBloomVisited  # noqa: E402
from tests.redisserver import RedisCluster, RedisServer  # noqa: E402

K = 8


def urls_for(n: int, tag: str) -> list[str]:
    return [f"https://example.org/{tag}/section{i % 97}/page{i}.html" for i in range(n)]


def per_bit(visited: RedisBloomVisited, client, urls: list[str]) -> list[bool]:
    """The recipe that races: read each bit, then set each bit, one round trip each."""
    shard, offsets = visited.locate(urls)
    out = []
    for s, offs in zip(shard.tolist(), offsets.tolist(), strict=True):
        key = visited.shard_key(s)
        seen = all(client.getbit(key, o) for o in offs)
        if not seen:
            for o in offs:
                client.setbit(key, o, 1)
        out.append(not seen)
    return out


def bitfield_ops(offs: list[int]) -> list:
    ops: list = []
    for o in offs:
        ops += ["SET", "u1", o, 1]
    return ops


def one_bitfield(visited: RedisBloomVisited, client, urls: list[str]) -> list[bool]:
    shard, offsets = visited.locate(urls)
    return [0 in client.execute_command("BITFIELD", visited.shard_key(s), *bitfield_ops(offs))
            for s, offs in zip(shard.tolist(), offsets.tolist(), strict=True)]


def pipelined_bitfield(visited: RedisBloomVisited, client, urls: list[str]) -> list[bool]:
    shard, offsets = visited.locate(urls)
    pipe = client.pipeline(transaction=False)
    for s, offs in zip(shard.tolist(), offsets.tolist(), strict=True):
        pipe.execute_command("BITFIELD", visited.shard_key(s), *bitfield_ops(offs))
    return [0 in old for old in pipe.execute()]


def lua_batch(visited: RedisBloomVisited, client, urls: list[str]) -> list[bool]:
    return visited.add_many(urls)


METHODS = {"per-bit GETBIT/SETBIT": (per_bit, 1), "one BITFIELD per URL": (one_bitfield, 1),
           "pipelined BITFIELD x100": (pipelined_bitfield, 100), "Lua batch x100": (lua_batch, 100)}


def make_visited(url: str, name: str, shards: int = 16) -> RedisBloomVisited:
    return RedisBloomVisited(SharedRedis(url, name), capacity=1_000_000, error_rate=0.001,
                             shards=shards)


def throughput(url: str, n_urls: dict[str, int], only: str | None = None) -> dict[str, float]:
    out = {}
    for method, (fn, batch) in METHODS.items():
        if only and method != only:
            continue
        visited = make_visited(url, "bench-" + uuid.uuid4().hex[:6])
        client = visited._shared.client
        urls = urls_for(n_urls[method], method.split()[0])
        start = time.perf_counter()
        for i in range(0, len(urls), batch):
            fn(visited, client, urls[i:i + batch])
        out[method] = len(urls) / (time.perf_counter() - start)
    return out


def _racer(url: str, name: str, method: str, barrier, results) -> None:
    visited = make_visited(url, name)
    fn, _ = METHODS[method]
    urls = urls_for(50, "race")
    barrier.wait()
    results.put(sum(fn(visited, visited._shared.client, urls)))


def duplicates(url: str, rounds: int = 5) -> dict[str, tuple[int, int]]:
    """(answers "new" in total, duplicates) over ``rounds`` races of 4 processes x 50 URLs."""
    ctx = mp.get_context("spawn")
    out = {}
    for method in METHODS:
        new = 0
        for _ in range(rounds):
            name = "race-" + uuid.uuid4().hex[:6]
            make_visited(url, name)
            barrier, results = ctx.Barrier(4), ctx.Queue()
            procs = [ctx.Process(target=_racer, args=(url, name, method, barrier, results))
                     for _ in range(4)]
            for p in procs:
                p.start()
            new += sum(results.get() for _ in procs)
            for p in procs:
                p.join()
        out[method] = (new, new - 50 * rounds)
    return out


def memory(url: str, server: RedisServer, inserted: int = 1_000_000) -> dict[str, float]:
    client = server.client()
    client.flushall()
    base = client.info("memory")["used_memory"]
    visited = RedisBloomVisited(SharedRedis(url, "mem"), capacity=10_000_000,
                                error_rate=0.001, shards=16)
    urls = urls_for(inserted, "mem")
    for i in range(0, len(urls), 1000):
        visited.add_many(urls[i:i + 1000])
    bloom = client.info("memory")["used_memory"] - base
    client.flushall()
    base = client.info("memory")["used_memory"]
    pipe = client.pipeline(transaction=False)
    for i, u in enumerate(urls):
        pipe.sadd("dupefilter", hashlib.sha1(u.encode()).hexdigest())
        if i % 5000 == 4999:
            pipe.execute()
    pipe.execute()
    sha_set = client.info("memory")["used_memory"] - base
    client.flushall()
    return {"bloom_bytes_1M": bloom, "bloom_bitmap_bytes_10M": visited.nbytes,
            "sha1_set_bytes_1M": sha_set, "sha1_set_bytes_10M_extrapolated": sha_set * 10}


def crawl(url: str, processes: int, pages: int = 2000, latency: float = 0.0) -> float:
    with LocalSite() as server:
        site = generate_site(server.origin, pages=pages)
        if latency:  # a slow site: each answer takes `latency` seconds, as over a network
            server.pages.update({path: (lambda _req, r=res: (time.sleep(latency), r)[1])
                                 for path, res in site.pages.items()})
        else:
            server.pages.update(site.pages)
        name = "crawl-" + uuid.uuid4().hex[:6]
        args = [sys.executable, "run.py", server.url("/"), "--redis", url, "--crawl", name,
                "--threads", "4", "--quiet", "--delay", "0", "--per-host", "64",
                "--expected-urls", "100000"]
        start = time.perf_counter()
        procs = [subprocess.Popen(args, cwd=Path(__file__).resolve().parent.parent)
                 for _ in range(processes)]
        for p in procs:
            p.wait()
        elapsed = time.perf_counter() - start
        counts = server.fetch_counts()
        assert set(counts) == set(site.reachable()) and max(counts.values()) == 1
        return len(counts) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    args = parser.parse_args()
    scale = 0.2 if args.quick else 1.0
    n_urls = {"per-bit GETBIT/SETBIT": int(3000 * scale), "one BITFIELD per URL":
              int(20000 * scale), "pipelined BITFIELD x100": int(100_000 * scale),
              "Lua batch x100": int(200_000 * scale)}
    with RedisServer() as server:
        version = server.client().info("server")["redis_version"]
        print(f"redis-server {version} on loopback, one client, k = {K}, 16 shards")
        print("\n1. add-or-check throughput (URLs/s)")
        for method, rate in throughput(server.url, n_urls).items():
            print(f"   {method:<26} {rate:>10,.0f}")
        print("\n2. 4 processes add the same 50 URLs at once (5 rounds: 250 'new' is right)")
        for method, (new, dup) in duplicates(server.url).items():
            print(f"   {method:<26} new {new:>4}   duplicates {dup}")
        print("\n3. Redis memory (INFO used_memory)")
        mem = memory(server.url, server, int(1_000_000 * scale))
        for name, value in mem.items():
            print(f"   {name:<34} {value / 1e6:>9.1f} MB")
        print("\n4. crawl of a generated site served from this process, 4 threads per process")
        for pages, latency in ((2000, 0.0), (1000, 0.05)):
            print(f"   {pages:,} pages, {latency * 1000:.0f} ms per answer:")
            for processes in (1, 2, 3):
                rate = crawl(server.url, processes, pages, latency)
                print(f"     {processes} process(es): {rate:>7.0f} pages/s")
    print("\n5. the Lua batch x100 against a local 3-node Redis Cluster")
    with RedisCluster() as cluster:
        rate = throughput(cluster.url, n_urls, only="Lua batch x100")["Lua batch x100"]
        print(f"   {'Lua batch x100':<26} {rate:>10,.0f} URLs/s")


if __name__ == "__main__":
    main()
