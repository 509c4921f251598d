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
