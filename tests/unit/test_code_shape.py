"""Small functions (STYLE, issue 20): no product function over 80 lines, and a tab's
``build``/``layout`` only lays out and wires (at most 150 lines; handlers live beside it)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("app", "config", "evals", "graph", "memory", "nodes", "prompts", "providers", "tools")
LONGEST = 80
LONGEST_LAYOUT = 150
LAYOUTS = {"build", "layout"}


def functions(source: str) -> Iterator[tuple[str, int]]:
    """(name, lines) of every function and method in ``source``, nested ones included."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node.name, (node.end_lineno or node.lineno) - node.lineno + 1


def too_long(root: Path = ROOT) -> list[str]:
    """Every product function over its limit, as ``path:name (lines)``."""
    found = []
    for package in PRODUCT:
        for path in sorted((root / package).rglob("*.py")):
            for name, lines in functions(path.read_text(encoding="utf-8")):
                limit = LONGEST_LAYOUT if name in LAYOUTS and package == "app" else LONGEST
                if lines > limit:
                    found.append(f"{path.relative_to(root)}:{name} ({lines} lines)")
    return found


def test_no_product_function_is_over_its_limit() -> None:
    assert too_long() == []


def test_a_long_function_is_found(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(LONGEST))
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "long.py").write_text(f"def long():\n{body}\n", encoding="utf-8")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "tab.py").write_text(f"def build():\n{body}\n", encoding="utf-8")
    assert too_long(tmp_path) == [f"tools/long.py:long ({LONGEST + 1} lines)"]
