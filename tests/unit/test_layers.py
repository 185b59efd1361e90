"""Imports point one way (STYLE rule 16): no cycles, and each layer imports only below it.

Every import statement counts — module level, inside functions and under
``TYPE_CHECKING`` — because a cycle hidden in any of them still ties the layers together.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("config", "memory", "prompts", "tools", "providers", "nodes", "graph", "evals", "app")
# What each package may import from the others (itself always allowed). graph/ and nodes/
# share a layer: the builder wires the nodes, the nodes read graph's state and context.
# providers/ (model hosting) sits below them: it reads config and uses tools.net's guard.
ALLOWED = {
    "config": set(),
    "memory": set(),
    "prompts": set(),
    "tools": {"config", "memory", "prompts"},
    "providers": {"config", "tools"},
    "nodes": {"config", "memory", "prompts", "tools", "providers", "graph"},
    "graph": {"config", "memory", "prompts", "tools", "providers", "nodes"},
    "evals": {"config", "memory", "prompts", "tools", "providers", "nodes", "graph"},
    "app": {"config", "memory", "prompts", "tools", "providers", "nodes", "graph", "evals"},
}
# What the rest of the product may import of providers/: its face, and the install-time
# smoke test (run as ``python -m providers.local_smoke``, so the face does not load it).
PROVIDERS_PUBLIC = {"providers", "providers.local_smoke"}
# memory/ is one face over two backend packages: only memory.backends opens either, and
# each driver stays inside its own backend (bench/ and tests/ may reach past the face and
# use the drivers).
BACKENDS = {"memory.sqlite": "sqlite3", "memory.postgres": "psycopg"}
CHOOSER = "memory.backends"
# What memory's shared modules may import of memory: the values and errors sit at the
# bottom (types reads two leaf rules), the rules above them, then the protocol.
MEMORY_BOTTOM = {
    "memory.types": {"memory.rules", "memory.rules.scoring", "memory.rules.temporal"},
    "memory.errors": set(),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def product_modules() -> dict[str, Path]:
    return {
        module_name(path): path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def imports_of(path: Path, known: set[str]) -> set[str]:
    """Product modules that ``path`` imports, wherever the import statement is."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        found.update(name for name in names if name in known)
    return found


def drivers_of(path: Path) -> set[str]:
    """The top-level names of every module ``path`` imports (sqlite3, psycopg, ...)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def import_graph() -> dict[str, set[str]]:
    modules = product_modules()
    known = set(modules)
    return {name: imports_of(path, known) - {name} for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path (first module repeated at the end), or None."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_the_import_graph_has_no_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, " -> ".join(cycle or [])


def test_each_layer_imports_only_the_layers_below() -> None:
    wrong = [
        f"{source} imports {target}"
        for source, targets in import_graph().items()
        for target in targets
        if (a := source.split(".")[0]) != (b := target.split(".")[0]) and b not in ALLOWED[a]
    ]
    assert wrong == []


def test_providers_internals_stay_inside_providers() -> None:
    wrong = [
        f"{source} imports {target}"
        for source, targets in import_graph().items()
        for target in targets
        if target.split(".")[0] == "providers"
        and source.split(".")[0] != "providers"
        and target not in PROVIDERS_PUBLIC
    ]
    assert wrong == []


def test_the_memory_backends_never_import_each_other() -> None:
    sqlite, postgres = BACKENDS
    wrong = [
        f"{source} imports {target}"
        for source, targets in import_graph().items()
        for target in targets
        if (in_package(source, sqlite) and in_package(target, postgres))
        or (in_package(source, postgres) and in_package(target, sqlite))
    ]
    assert wrong == []


def test_only_memory_backends_imports_a_backend_from_outside_it() -> None:
    wrong = [
        f"{source} imports {target}"
        for source, targets in import_graph().items()
        for target in targets
        for backend in BACKENDS
        if in_package(target, backend) and not in_package(source, backend) and source != CHOOSER
    ]
    assert wrong == []
    chooser = import_graph()[CHOOSER]
    assert all(any(in_package(t, backend) for t in chooser) for backend in BACKENDS)


def test_each_driver_is_imported_only_by_its_backend() -> None:
    wrong = [
        f"{name} imports {driver}"
        for name, path in product_modules().items()
        for backend, driver in BACKENDS.items()
        if driver in drivers_of(path) and not in_package(name, backend)
    ]
    assert wrong == []


def test_memory_rules_import_no_backend_and_no_driver() -> None:
    graph = import_graph()
    wrong = [
        f"{name} imports {target}"
        for name in graph
        if in_package(name, "memory.rules")
        for target in graph[name]
        if not any(
            in_package(target, ok) for ok in ("memory.rules", "memory.types", "memory.errors")
        )
    ]
    wrong += [
        f"{name} imports {driver}"
        for name, path in product_modules().items()
        if in_package(name, "memory.rules")
        for driver in BACKENDS.values()
        if driver in drivers_of(path)
    ]
    assert wrong == []


def test_memory_values_and_errors_sit_at_the_bottom() -> None:
    graph = import_graph()
    wrong = [
        f"{name} imports {target}"
        for name, allowed in MEMORY_BOTTOM.items()
        for target in graph[name]
        if target not in allowed
    ]
    assert wrong == []


# MCP tools (issue 26): the SDK stays inside tools.mcp; graph/ and nodes/ reach MCP tools
# only through the registry; the modules the registry and the chat read load no SDK.
MCP = "tools.mcp"
MCP_LIGHT = ("tools.mcp.config", "tools.mcp.names")


def test_the_mcp_sdk_stays_in_its_module_and_the_graph_imports_none_of_it() -> None:
    modules = product_modules()
    graph = import_graph()
    sdk = [name for name, path in modules.items() if "mcp" in drivers_of(path)]
    assert sdk and all(in_package(name, MCP) for name in sdk)
    assert not any(name in MCP_LIGHT for name in sdk)
    wrong = [
        f"{source} imports {target}"
        for source, targets in graph.items()
        for target in targets
        if in_package(target, MCP) and source.split(".")[0] in ("graph", "nodes")
    ]
    assert wrong == []


def test_the_cycle_finder_finds_cycles() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_imports_are_seen_wherever_they_are(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from graph.context import Context\n"
        "def f():\n    import memory.store\n"
    )
    assert imports_of(source, {"graph.context", "memory.store"}) == {
        "graph.context",
        "memory.store",
    }
