"""robots.txt parsers against Google's reference cases, and the cost of one ``can_fetch``.

    python bench/robots_cases.py [--repeat N]

Agreement: every ``allowed`` case of ``tests/data/robotstxt/cases.json`` (RFC 9309 ones and
Google-only ones counted apart) through each parser that is installed: minicrawl's
(``parse_robots(body, token).can_fetch(url)``, what RobotsGate asks), protego alone as minicrawl
asked it before (body decoded as ``utf-8``, ``can_fetch(url, token)``), and, if importable,
gpyrobotstxt and robotspy (``pip install gpyrobotstxt==1.0.0 robotspy==0.13`` in a scratch
venv). Speed: a robots.txt shaped like a big site's (``bench/robots_realistic.txt``: 30 bot
groups that disallow all, a ``*`` group of 60 rules with wildcards, Crawl-delay, Sitemaps), the
microseconds of one parse and of one ``can_fetch`` over a mix of URLs (best of 5 runs).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from protego import Protego  # noqa: E402

from minicrawl.visit.robotstxt import parse_robots  # noqa: E402

CASES = json.loads((ROOT / "tests/data/robotstxt/cases.json").read_text(encoding="utf-8"))
REALISTIC = (ROOT / "bench/robots_realistic.txt").read_bytes()
URLS = [f"https://www.example.org{p}" for p in (
    "/", "/wiki/Main_Page", "/wiki/Special:Random", "/w/index.php?title=X&action=edit",
    "/w/load.php?modules=site", "/api/rest_v1/page/html/X", "/wiki/Talk:Python",
    "/search?q=robots", "/static/images/logo.png", "/docs/3/library/index.html",
    "/user/42/profile?tab=edits", "/a/b/c/d/e/f/g/h.html", "/feed.xml", "/print/page.pdf",
    "/wiki/%E3%83%84", "/cgi-bin/x")]

# parser name → (parse(body bytes, token) → state, ask(state, url, token) → allowed)
Parser = tuple[Callable[[bytes, str], object], Callable[[object, str, str], bool]]


def parsers() -> dict[str, Parser]:
    found: dict[str, Parser] = {
        "minicrawl": (lambda body, token: parse_robots(body, token),
                      lambda rules, url, token: rules.can_fetch(url)),
        "protego (as before)": (
            lambda body, token: Protego.parse(body.decode("utf-8", errors="replace")),
            lambda rules, url, token: rules.can_fetch(url, token.lower())),
    }
    try:
        from gpyrobotstxt.robots_cc import RobotsMatcher
        found["gpyrobotstxt 1.0.0"] = (  # Google's design: the body is parsed at each question
            lambda body, token: body,
            lambda body, url, token: RobotsMatcher().one_agent_allowed_by_robots(body, token,
                                                                                 url))
    except ImportError:
        pass
    try:
        from robots import RobotsParser
        found["robotspy 0.13"] = (
            lambda body, token: RobotsParser.from_string(body.decode("utf-8", "replace")),
            lambda rules, url, token: rules.can_fetch(token, url))
    except ImportError:
        pass
    return found


def agreement(parse: Callable, ask: Callable) -> tuple[int, int, int, int, list[dict]]:
    """(RFC agreed, RFC cases, Google-only agreed, Google-only cases, RFC misses)."""
    counts = [0, 0, 0, 0]
    misses = []
    for case in CASES["allowed"]:
        body = CASES["bodies"][case["body"]].encode("latin-1")
        try:
            got = ask(parse(body, case["agent"]), case["url"], case["agent"])
        except Exception as exc:  # a parser that raises disagrees
            got = f"raised {type(exc).__name__}"
        slot = 0 if case["rfc"] else 2
        counts[slot + 1] += 1
        if got == case["allowed"]:
            counts[slot] += 1
        elif case["rfc"]:
            misses.append({**case, "got": got, "robotstxt": body[:120]})
    return counts[0], counts[1], counts[2], counts[3], misses


def best(seconds: Callable[[], float], runs: int = 5) -> float:
    return min(seconds() for _ in range(runs))


def speed(parse: Callable, ask: Callable, repeat: int) -> tuple[float, float]:
    """(µs per parse, µs per can_fetch) on the realistic robots.txt."""
    def parsing() -> float:
        start = time.perf_counter()
        for _ in range(max(1, repeat // 100)):
            parse(REALISTIC, "minicrawl")
        return (time.perf_counter() - start) / max(1, repeat // 100)

    state = parse(REALISTIC, "minicrawl")

    def asking() -> float:
        start = time.perf_counter()
        for _ in range(repeat // len(URLS)):
            for url in URLS:
                ask(state, url, "minicrawl")
        return (time.perf_counter() - start) / (repeat // len(URLS) * len(URLS))

    return best(parsing) * 1e6, best(asking) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=20_000, help="can_fetch calls per run")
    parser.add_argument("--misses", action="store_true", help="print each RFC case missed")
    args = parser.parse_args()
    print(f"{'parser':22} {'RFC cases':>12} {'Google-only':>12} {'parse µs':>10} "
          f"{'can_fetch µs':>13}")
    for name, (parse, ask) in parsers().items():
        rfc, rfc_n, google, google_n, misses = agreement(parse, ask)
        slow = name.startswith("gpy")  # it parses at every question: fewer runs do
        per_parse, per_ask = speed(parse, ask, args.repeat // 100 if slow else args.repeat)
        print(f"{name:22} {rfc:>5}/{rfc_n:<6} {google:>5}/{google_n:<6} {per_parse:>10.1f} "
              f"{per_ask:>13.2f}")
        if args.misses:
            for miss in misses:
                print("   ", {k: miss[k] for k in ("test", "agent", "url", "allowed", "got",
                                                    "robotstxt")})


if __name__ == "__main__":
    main()
