"""What README.md and docs/*.md say of the code, checked against the code: the files, modules and
names they point to exist; their line counts hold; the door's callers, the core's Protocols and
reading order, the observer points and the import graph are what they say. A claim the docs make
in a form these checks do not know (a line count of something else, a new number of seams)
fails here rather than rot unseen: check it, or drop it.

tests/test_tutorial.py already checks the tutorial's ``minicrawl/x.py``: ``Name`` pointers and
excerpts; tests/test_readme.py the README's Quick start and layout. Nothing here runs a crawl.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from types import ModuleType

import pytest

import minicrawl
from minicrawl.events import POINTS
from minicrawl.visited import batch

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = Path(minicrawl.__file__).parent
CORE = PACKAGE / "core"
README = ROOT / "README.md"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
TUTORIAL = ROOT / "docs" / "tutorial.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]
# Named by the docs as gone (README: "it is gone"): each must stay gone.
GONE = {"minicrawl/response_head.py"}
# Dotted names in architecture.md that are no module path: an attribute of a crawler object,
# a web site.
NOT_MODULES = {"crawler.events", "sitemaps.org"}
DOOR_METHODS = {"enter", "seed", "back"}
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
           "eight": 8, "nine": 9, "ten": 10}


def doc_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def lines_of(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def core_lines() -> int:
    """What ``cat minicrawl/core/*.py | wc -l`` says."""
    return sum(lines_of(path) for path in CORE.glob("*.py"))


def defined(path: Path) -> set[str]:
    """The names a file defines at module level (functions, classes, assignments, imports) and
    its classes' methods and class-level names, as ``Class.name``."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        if isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    names.add(f"{node.name}.{member.name}")
    return names


# -- (a) the files, modules and names the docs point to exist ---------------------------------

@pytest.mark.parametrize("doc", DOCS, ids=doc_id)
def test_every_path_named_exists(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    paths = set(re.findall(r"(?<![\w/.])((?:minicrawl|tests|bench)/[\w/.-]*\w\.py)\b", text))
    folders = set(re.findall(r"`((?:minicrawl|tests)/[\w/]+/)`", text))
    assert paths, f"{doc_id(doc)} names no file: is the pattern still right?"
    missing = [p for p in sorted(paths | folders) if p not in GONE and not (ROOT / p).exists()]
    assert not missing, f"{doc_id(doc)} names files that do not exist: {missing}"
    back = [p for p in sorted(GONE & paths) if (ROOT / p).exists()]
    assert not back, f"{doc_id(doc)} says these are gone: {back}"


@pytest.mark.parametrize("doc", DOCS, ids=doc_id)
def test_every_name_a_file_is_said_to_hold_is_there(doc: Path) -> None:
    """``minicrawl/x.py``'s ``name``, and (outside the tutorial, which test_tutorial.py checks)
    ``minicrawl/x.py``: ``Name``, ``Class.method``."""
    text = doc.read_text(encoding="utf-8")
    claims = re.findall(r"`(minicrawl/[\w/]+\.py)`'s `([\w.]+)`", text)
    if doc != TUTORIAL:
        for path, names in re.findall(
                r"`(minicrawl/[\w/]+\.py)`:\s*((?:`[\w.]+`(?:,\s*)?)+)", text):
            claims += [(path, name) for name in re.findall(r"`([\w.]+)`", names)]
    assert claims or doc not in (README, ARCHITECTURE), "no pointer found: is the pattern right?"
    wrong = [f"{path}: {name}" for path, name in claims if name not in defined(ROOT / path)]
    assert not wrong, f"{doc_id(doc)} names what these files do not define: {wrong}"


def resolve_dotted(name: str) -> object:
    """The object ``name`` (``minicrawl.a.b.C`` or, relative to minicrawl, ``a.b.C``) names: the
    longest module prefix, imported, then attributes. AttributeError if there is none."""
    parts = name.split(".") if name.startswith("minicrawl.") else ["minicrawl", *name.split(".")]
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        file = ROOT.joinpath(*parts[:cut])
        if file.with_suffix(".py").exists() or (file / "__init__.py").exists():
            found: ModuleType | object = importlib.import_module(module)
            for attribute in parts[cut:]:
                found = getattr(found, attribute)
            return found
    raise AttributeError(name)


@pytest.mark.parametrize("doc", DOCS, ids=doc_id)
def test_every_dotted_module_name_exists(doc: Path) -> None:
    """``minicrawl.x.y`` (and ``minicrawl.Page``: attributes after the module) anywhere; in
    architecture.md also the names relative to minicrawl (``core.todo.ToDo``), its convention."""
    text = doc.read_text(encoding="utf-8")
    names = set(re.findall(r"(?<![\w./])minicrawl(?:\.\w+)+", text))
    if doc == ARCHITECTURE:
        tops = sorted(p.stem for p in PACKAGE.iterdir()
                      if p.suffix == ".py" or (p / "__init__.py").exists())
        relative = re.findall(rf"(?<![\w./-])(?:{'|'.join(tops)})(?:\.\w+)+", text)
        names |= {n for n in relative if n not in NOT_MODULES and not n.endswith(".py")}
        assert "core.door.Door" in names
    wrong = []
    for name in sorted(names):
        try:
            resolve_dotted(name)
        except AttributeError:
            wrong.append(name)
    assert not wrong, f"{doc_id(doc)} names modules or attributes that do not exist: {wrong}"


# -- (b) line counts ----------------------------------------------------------------------------

APPROXIMATE = ("about", "around", "roughly", "some", "~", "nearly", "almost")
BOUND = ("at most", "under", "fewer than", "less than", "no more than", "below")
QUALIFIERS = "|".join(map(re.escape, APPROXIMATE + BOUND))
COUNT = re.compile(rf"(?:(?P<q>{QUALIFIERS})\s*)?(?P<n>\d[\d,]*)\s+lines\b")
MODULES_BOUND = re.compile(r"[Nn]o module (?P<much>much )?over (?P<n>\d[\d,]*) lines")


def line_claims(text: str) -> tuple[list[tuple[str | None, int]], list[tuple[bool, int]]]:
    """(the core's line counts: qualifier and number; the "no module over N lines" bounds:
    whether "much" over, and N). Every "N lines" the docs write is taken for the core's unless
    it is a module bound: a count of anything else fails, to be checked or dropped."""
    modules = [(bool(m["much"]), int(m["n"].replace(",", "")))
               for m in MODULES_BOUND.finditer(text)]
    spans = [m.span("n") for m in MODULES_BOUND.finditer(text)]
    core = [(m["q"], int(m["n"].replace(",", ""))) for m in COUNT.finditer(text)
            if m.span("n") not in spans]
    return core, modules


def holds(qualifier: str | None, claimed: int, actual: int) -> bool:
    if qualifier in BOUND:
        return actual < claimed if qualifier in ("under", "fewer than", "less than", "below") \
            else actual <= claimed
    return abs(actual - claimed) <= claimed * 0.10  # "about N", "~N", or a bare "N lines"


@pytest.mark.parametrize("doc", DOCS, ids=doc_id)
def test_the_cores_line_counts_hold(doc: Path) -> None:
    core, _ = line_claims(doc.read_text(encoding="utf-8"))
    actual = core_lines()
    wrong = [f"{q or ''} {n} lines".strip() for q, n in core if not holds(q, n, actual)]
    assert not wrong, f"{doc_id(doc)}: the core is {actual} lines, not {wrong}"


@pytest.mark.parametrize("doc", DOCS, ids=doc_id)
def test_no_module_over_the_bound_the_docs_give(doc: Path) -> None:
    _, bounds = line_claims(doc.read_text(encoding="utf-8"))
    for much, bound in bounds:
        limit = bound * 1.10 if much else bound
        over = {str(p.relative_to(PACKAGE)): n for p in sorted(PACKAGE.rglob("*.py"))
                if (n := lines_of(p)) > limit}
        assert not over, f"{doc_id(doc)}: no module over {bound} lines? {over}"


def test_the_line_claims_are_found() -> None:
    """The patterns still see the claims the docs make (else the two tests above pass empty)."""
    core, bounds = line_claims(ARCHITECTURE.read_text(encoding="utf-8"))
    assert core and bounds
    assert line_claims("the core, about 900 lines; no module much over 400 lines") == (
        [("about", 900)], [(True, 400)])
    assert not holds("about", 900, 1000) and holds("about", 950, 1000)
    assert holds("at most", 1000, 1000) and not holds("at most", 1000, 1001)


# -- (c) the door is the only way into ToDo: who calls it ---------------------------------------

def door_calls() -> dict[str, set[str]]:
    """Module path → the door's methods it calls: ``x.enter(…)``, ``x.seed(…)``, ``x.back(…)``
    where ``x`` is named ``door`` (``door``, ``self.door``, ``self.crawl.door``)."""
    calls: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in DOOR_METHODS:
                owner = node.func.value
                name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
                if name == "door":
                    calls.setdefault(str(path.relative_to(ROOT)), set()).add(node.func.attr)
    return calls


def callers_said(text: str) -> dict[str, set[str]]:
    """architecture.md's list under "Who calls the door": each bullet's module and the door's
    methods it names."""
    section = text.split("Who calls the door", 1)[1].split("\n\n", 2)[1]
    said: dict[str, set[str]] = {}
    for bullet in re.split(r"^- ", section, flags=re.M)[1:]:
        path = re.match(r"`(minicrawl/[\w/]+\.py)`", bullet)
        assert path, bullet
        said[path[1]] = set(re.findall(r"`(\w+)`", bullet)) & DOOR_METHODS
    return said


def test_the_docs_name_exactly_the_doors_callers() -> None:
    said = callers_said(ARCHITECTURE.read_text(encoding="utf-8"))
    assert said == door_calls(), "architecture.md's 'Who calls the door' is not the code's"


def test_the_door_callers_finder_sees_calls() -> None:
    calls = door_calls()
    assert calls.get("minicrawl/core/trip.py") == {"enter"}
    assert "minicrawl/core/door.py" not in calls  # its own put_many on ToDo is no door call


# -- (d) the core's Protocols, and how many --------------------------------------------------------

def protocols() -> list[str]:
    tree = ast.parse((CORE / "interfaces.py").read_text(encoding="utf-8"))
    return [node.name for node in tree.body if isinstance(node, ast.ClassDef)
            and any(isinstance(b, ast.Name) and b.id == "Protocol" for b in node.bases)]


def protocol_lists() -> dict[str, list[str]]:
    """Where the docs list the core's seams: what each list names, in order."""
    readme = README.read_text(encoding="utf-8")
    tutorial = TUTORIAL.read_text(encoding="utf-8")
    architecture = ARCHITECTURE.read_text(encoding="utf-8")
    seams = re.search(r"`interfaces\.py` \(the \w+ seams —(.*?)—", readme, re.S)
    told = re.search(r"`typing\.Protocol`s, each(.*?)The\s+records", tutorial, re.S)
    assert seams and told
    table = architecture.split("| core interface |", 1)[1].split("\n\n", 1)[0]
    plugs = architecture.split("what plugs into each seam", 1)[1].split("```", 1)[0]
    return {
        "README.md": re.findall(r"`(\w+)`", seams[1]),
        "docs/tutorial.md": re.findall(r"`(\w+)`\s\(", told[1]),
        "docs/architecture.md table": re.findall(r"^\| `(\w+)`", table, re.M),
        "docs/architecture.md diagram": [name for name in re.findall(r"^   (\w+) ", plugs, re.M)
                                         if name != "the"],  # "the door": no seam
    }


def test_the_docs_list_the_cores_protocols() -> None:
    actual = protocols()
    for where, listed in protocol_lists().items():
        assert sorted(listed) == sorted(actual), f"{where} lists {listed}, the core has {actual}"


@pytest.mark.parametrize("doc", DOCS, ids=doc_id)
def test_the_number_of_seams_and_what_is_a_protocol(doc: Path) -> None:
    """"the six seams", "Six `typing.Protocol`s": as many as there are; "the `X` protocol":
    a Protocol of the core's."""
    text = doc.read_text(encoding="utf-8")
    actual = protocols()
    words = "|".join(NUMBERS)
    kinds = r"interfaces|seams|`typing\.Protocol`s|Protocols"
    counts = re.findall(rf"\b({words}) (?:core )?(?:{kinds})\b", text, re.I)
    wrong = [c for c in counts if NUMBERS[c.lower()] != len(actual)]
    assert not wrong, f"{doc_id(doc)} counts {wrong} seams; the core has {len(actual)}"
    named = re.findall(r"`(\w+)` [Pp]rotocol\b", text) + re.findall(r"\b[Pp]rotocol `(\w+)`", text)
    assert not set(named) - set(actual), f"{doc_id(doc)}: no Protocol: {set(named) - set(actual)}"


# -- more the docs say of the code ----------------------------------------------------------------

def core_imports() -> dict[str, set[str]]:
    """The core's module → the core's modules it imports."""
    found = {}
    for path in CORE.glob("*.py"):
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
        found[path.stem] = {n.rpartition(".")[2] for n in names if n.startswith("minicrawl.core.")}
    return found


def reading_orders() -> dict[str, list[str]]:
    readme = README.read_text(encoding="utf-8")
    listing = readme.split("in this order (each file uses only those before it)", 1)[1]
    tutorial = TUTORIAL.read_text(encoding="utf-8").split("## 0.", 1)[1].split("\n## ", 1)[0]
    init = ast.get_docstring(ast.parse((CORE / "__init__.py").read_text(encoding="utf-8")))
    assert init is not None
    return {
        "README.md": re.findall(r"`(\w+)\.py` \(", listing.split("What it leans on", 1)[0]),
        "docs/tutorial.md": [name for pair in re.findall(r"^\*\*`(\w+)\.py`(?: and `(\w+)\.py`)?",
                                                          tutorial, re.M)
                             for name in pair if name],
        "minicrawl/core/__init__.py": re.findall(
            r"``(\w+)``", init.split("Read in this order", 1)[1].split("; then", 1)[0]),
    }


def test_the_reading_order_is_each_file_using_only_those_before_it() -> None:
    imports = core_imports()
    modules = sorted(set(imports) - {"__init__", "__main__"})
    for where, order in reading_orders().items():
        assert sorted(order) == modules, f"{where} reads {order}; the core is {modules}"
        for n, name in enumerate(order):
            later = imports[name] - set(order[:n])
            assert not later, f"{where}: {name} uses {sorted(later)}, read after it"


def test_no_import_circle_in_the_package() -> None:
    """architecture.md: "No import circles", imports for type checking included."""
    modules = {".".join(("minicrawl", *p.relative_to(PACKAGE).with_suffix("").parts))
               .removesuffix(".__init__"): p for p in PACKAGE.rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                found |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
        edges[name] = found & set(modules) - {name}
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, f"import circle: {' → '.join((*path, name))}"
        if name in done:
            return
        for to in edges[name]:
            visit(to, (*path, name))
        done.add(name)

    assert "No import circles" in ARCHITECTURE.read_text(encoding="utf-8")
    for name in sorted(modules):
        visit(name, ())


def test_the_observer_points_table_is_the_code_s() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    table = text.split("| point | when | heard by |", 1)[1].split("\n\n", 1)[0]
    listed = [name for row in re.findall(r"^\| (.*?) \|", table, re.M)
              for name in re.findall(r"`(\w+)`", row.split("(", 1)[0])]
    assert sorted(listed) == sorted(POINTS)


@pytest.mark.parametrize("doc", [README, ROOT / "docs" / "bloom.md"], ids=doc_id)
def test_the_numpy_batch_size_is_the_code_s(doc: Path) -> None:
    said = re.findall(r"batches of (\d+) (?:or more URLs|URLs or more)", doc.read_text("utf-8"))
    assert said and all(int(n) == batch.SMALL_BATCH for n in said), (said, batch.SMALL_BATCH)
