"""The core is the model a student reads in one sitting: small, self-contained, typed seams."""

from __future__ import annotations

import ast
from pathlib import Path

import minicrawl.core

CORE = Path(minicrawl.core.__file__).parent
FILES = sorted(CORE.glob("*.py"))
PACKAGE = CORE.parent
# What the core leans on outside its folder: edge machinery moved out of the sitting, each named
# for what it is (a module, or a package: all its modules). Each imports from the core and from
# the others only, never from run.py's wings, and no import goes round in a cycle.
LEANS_ON = (
    "minicrawl.checks",  # what a user gives, checked
    "minicrawl.html",  # the browser's rules: a page's encoding, its <meta>s, the walk, sniffing
    "minicrawl.heaps",  # the C heaps threads leave, kept few (glibc malloc options)
    "minicrawl.http.answer",  # how an answer is read: its body bounded, its Location, a failure
    "minicrawl.http.credentials",  # a seed's user:password@, sent to its origin
    "minicrawl.http.prepare",  # a request for a canonical URL, as requests prepares it
    "minicrawl.http.proxies",  # the proxies of each origin
    "minicrawl.lines",  # the command line's lines, to a stream that may fail
    "minicrawl.origins",  # a canonical URL's origin and host, as run.py keys them
    "minicrawl.redact",  # a URL's userinfo: the one split, the URL as sent, the one redaction
    "minicrawl.refused",  # why the URL parser refused a link
)


def test_core_is_at_most_1000_lines() -> None:
    # A sitting: the files a student needs to follow a page's trip (seed → ToDo → fetch → links →
    # Visited → ToDo) and the command line that runs them, every .py file here counted. Issue 45
    # found 1,949 (37 % edge machinery); the edge moved out to the packages named in LEANS_ON,
    # one implementation each, leaving 913. The cap checks that it stays out: new core code fits
    # in 1,000; the browser's rules, input checks and run.py's helpers go to their packages.
    assert sum(len(f.read_text().splitlines()) for f in FILES) <= 1000


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


def test_no_any_no_inheritance_at_most_seven_protocols() -> None:
    """Seven seams: ToDo (Frontier), Visited (SeenSet), the pace, admission, the observers, and
    the trip's two — its hooks (where run.py's rules meet the one trip) and its HTTP client
    (run.py's fetcher around the core's). The Visitor seam went when run.py's trip became the
    core's: a worker runs a Trip."""
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
    assert 1 <= len(protocols) <= 7
