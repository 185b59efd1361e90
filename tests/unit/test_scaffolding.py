"""Test doubles stay under tests/: no product package imports ``tests`` (STYLE rule 13).

The scripted chat model, the scripted policy, the fake OpenAI server and the naive-search
baseline live in ``tests.support``; the product ships only what a user runs. Every
module of the product packages is parsed (not imported) and its imports are read,
including those inside functions and ``TYPE_CHECKING`` blocks.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("graph", "nodes", "tools", "memory", "prompts", "evals", "app")


def imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) for every absolute import in a parsed module."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def test_no_product_module_imports_the_test_support() -> None:
    offenders = []
    modules = [path for package in PRODUCT for path in (ROOT / package).rglob("*.py")]
    assert len(modules) > 40
    for path in modules:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        offenders += [
            f"{path.relative_to(ROOT)}:{line} imports {module}"
            for line, module in imported_modules(tree)
            if module == "tests" or module.startswith("tests.")
        ]
    assert offenders == []


@pytest.mark.parametrize(
    ("source", "caught"),
    [
        ("from tests.support.chat_model import ScriptedChatModel", True),
        ("def f():\n    import tests.support.policy\n", True),
        ("if TYPE_CHECKING:\n    from tests import support\n", True),
        ("from .tests import x", False),  # a relative import is the package's own module
        ("from testsuite import x", False),
    ],
)
def test_the_walk_sees_every_kind_of_import(source, caught) -> None:
    modules = [module for _, module in imported_modules(ast.parse(source))]
    assert any(m == "tests" or m.startswith("tests.") for m in modules) is caught


def test_the_scaffolding_lives_in_tests_support() -> None:
    for gone in ("graph/fake.py", "evals/scripted.py", "evals/fake_openai.py"):
        assert not (ROOT / gone).exists()
    for moved in ("chat_model", "policy", "fake_openai", "naive_search"):
        assert (ROOT / "tests" / "support" / f"{moved}.py").is_file()
