"""The package's shape, beyond the core's (tests/core/test_shape.py): parts are composed, never
mixed in — no class has two bases, so what a class does is in it and in one parent at most."""

from __future__ import annotations

import ast
from pathlib import Path

import minicrawl

PACKAGE = Path(minicrawl.__file__).parent


def classes() -> list[tuple[str, ast.ClassDef]]:
    return [(str(path.relative_to(PACKAGE)), node) for path in sorted(PACKAGE.rglob("*.py"))
            for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.ClassDef)]


def test_no_mixins_no_class_has_two_bases() -> None:
    mixed = [f"{path}: {node.name}({', '.join(map(ast.unparse, node.bases))})"
             for path, node in classes() if len(node.bases) > 1 or "Mixin" in node.name]
    assert not mixed, mixed


def test_protocols_are_the_cores_and_run_pys_seams_only() -> None:
    """Every seam is a core interface (minicrawl/core/interfaces.py, at most six) or one of
    run.py's, all in one file (minicrawl/seams.py): what its trip asks of its parts beyond the
    core's (a ToDo that takes an item back, a pace with a page cap, the page cap, the redirect
    chains), each with this process's and the shared crawl's implementation. Kept out of the
    core, whose student needs none of them; kept in one file, so that a reader finds every
    seam of the package in two places. The rest of the package implements them."""
    elsewhere = [f"{path}: {node.name}" for path, node in classes()
                 if any(ast.unparse(b).endswith("Protocol") for b in node.bases)
                 and path not in ("core/interfaces.py", "seams.py")]
    assert not elsewhere, elsewhere


def test_at_most_five_any_in_the_package() -> None:
    """Typed seams: ``typing.Any`` is used at most five times (now: none)."""
    uses = [f"{path.relative_to(PACKAGE)}:{node.lineno}" for path in sorted(PACKAGE.rglob("*.py"))
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Name) and node.id == "Any"
            or isinstance(node, ast.Attribute) and node.attr == "Any"]
    assert len(uses) <= 5, uses
