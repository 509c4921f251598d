"""Canonicalization speed: ``canonicalize(href, base)`` for 100k typical links, ROUNDS times.

    python bench/bench_urls.py [ROUNDS]

The links are what pages hold: relative paths, ``../`` and ``?query`` forms, absolute URLs on a
few hundred hosts (ASCII, as nearly all are; 1 in 200 an IDN, 1 in 500 an IPv4 literal), some
with ports and fragments. Each round clears the host cache first, so the per-host work (IDNA,
IPv4) is paid again. Prints the seconds per round and the rate. Run it from a checkout's root:
it imports that checkout's ``minicrawl``. Compare two checkouts in the same run (the baseline
and the change), as bench/README.md says.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))

from minicrawl.urls import BadURL, _canonical_netloc, canonicalize  # noqa: E402

N = 100_000


def links(n: int = N, seed: int = 5) -> list[tuple[str, str]]:
    """(href, base) pairs, the same for the same seed."""
    rng = random.Random(seed)
    hosts = [f"www.site{i}.example" for i in range(300)]
    hosts += ["b\u00fccher.example", "fa\u00df.example", "\u4f8b\u3048.jp"]
    words = ["news", "about", "products", "2024", "index.html", "a-long-article-title", "img"]
    out = []
    for j in range(n):
        host = hosts[rng.randrange(300)] if rng.random() > 0.005 else rng.choice(hosts[300:])
        if rng.random() < 0.002:
            host = f"10.0.{rng.randrange(256)}.{rng.randrange(256)}"
        base = f"https://{host}/{rng.choice(words)}/{rng.choice(words)}"
        path = "/".join(rng.choice(words) for _ in range(rng.randrange(1, 4)))
        kind = j % 8
        href = (f"/{path}", path, f"../{path}", f"?page={j % 50}", "#top",
                f"https://{host}/{path}?id={j}", f"http://{host}:8080/{path}",
                f"//{host}/{path}#x")[kind]
        out.append((href, base))
    return out


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    pairs = links()
    times = []
    for _ in range(rounds):
        _canonical_netloc.cache_clear()
        started = time.perf_counter()
        for href, base in pairs:
            try:
                canonicalize(href, base)
            except BadURL:
                pass
        times.append(time.perf_counter() - started)
    best = min(times)
    print(f"{len(pairs):,} links x {rounds} rounds: best {best:.3f} s/round, "
          f"median {sorted(times)[len(times) // 2]:.3f} s, {len(pairs) / best / 1e6:.2f} M links/s")


if __name__ == "__main__":
    main()
