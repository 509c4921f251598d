"""robots.txt parsers against Google's reference cases, and the cost of one ``can_fetch``.

    python bench/robots_cases.py [--repeat N]

Agreement: every ``allowed`` case of ``tests/data/robotstxt/cases.json`` (RFC 9309 ones and
Google-only ones counted apart) through each parser that is installed: minicrawl's
(``parse_robots(body, token).can_fetch(url)``, what RobotsGate asks), protego alone as minicrawl
asked it before (body decoded as ``utf-8``, ``can_fetch(url, token)``), and, if importable,
gpyrobotstxt and robotspy (``pip install gpyrobotstxt==1.0.0 robotspy==0.13`` in a scratch
venv). Speed: a robots.txt shaped like a big site's (``bench/robots_realistic.txt``: 30 bot
groups that disallow all, a ``*`` group of 60 rules with wildcards, Crawl-delay, Sitemaps), the
microseconds (CPU) of one parse and of one ``can_fetch`` over a mix of URLs (the parsers take
turns; each one's best and median round).
"""

from __future__ import annotations

import argparse
import json
import statistics
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


def speeds(found: dict[str, Parser], repeat: int, rounds: int) -> dict[str, tuple[float, ...]]:
    """name → (µs per parse, µs per can_fetch: best round, median round) on the realistic
    robots.txt, in CPU time of this process: the parsers take turns, ``rounds`` times (the
    machine is shared: turns spread a busy moment over all of them; CPU time leaves out the
    moments another process runs, not the caches it spoils, so the best round is quoted too)."""
    states = {name: parse(REALISTIC, "minicrawl") for name, (parse, _) in found.items()}
    parses: dict[str, list[float]] = {name: [] for name in found}
    asks: dict[str, list[float]] = {name: [] for name in found}
    for _ in range(rounds):
        for name, (parse, ask) in found.items():
            n = repeat // 100 if name.startswith("gpy") else repeat  # it parses at each question
            loops = max(1, n // len(URLS))
            start = time.process_time()
            for _ in range(max(1, n // 1000)):
                parse(REALISTIC, "minicrawl")
            parses[name].append((time.process_time() - start) / max(1, n // 1000))
            state = states[name]
            start = time.process_time()
            for _ in range(loops):
                for url in URLS:
                    ask(state, url, "minicrawl")
            asks[name].append((time.process_time() - start) / (loops * len(URLS)))
    return {name: (min(parses[name]) * 1e6, min(asks[name]) * 1e6,
                   statistics.median(asks[name]) * 1e6) for name in found}


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=500, help="can_fetch calls per round")
    parser.add_argument("--rounds", type=int, default=60, help="turns each parser takes")
    parser.add_argument("--misses", action="store_true", help="print each RFC case missed")
    args = parser.parse_args()
    print(f"{'parser':22} {'RFC cases':>12} {'Google-only':>12} {'parse µs':>10} "
          f"{'can_fetch µs: best':>19} {'median':>7}")
    found = parsers()
    timed = speeds(found, args.repeat, args.rounds)
    for name, (parse, ask) in found.items():
        rfc, rfc_n, google, google_n, misses = agreement(parse, ask)
        per_parse, per_ask, median = timed[name]
        print(f"{name:22} {rfc:>5}/{rfc_n:<6} {google:>5}/{google_n:<6} {per_parse:>10.1f} "
              f"{per_ask:>19.2f} {median:>7.2f}")
        if args.misses:
            for miss in misses:
                print("   ", {k: miss[k] for k in ("test", "agent", "url", "allowed", "got",
                                                    "robotstxt")})


if __name__ == "__main__":
    main()
