"""The shape of the house, read from the source with `ast`: which floor each package stands
on, no import cycle (lazy imports inside functions count), no arrow upward, and no private
name imported from another module."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
from conftest import ROOT

PACKAGE = ROOT / "ipuopt"
# Lowest first: a module may import from its own floor or below. The key is a module's first
# name under ipuopt ("" is the package's own __init__).
FLOORS = (
    ("core", {"errors", "budget", "params", "result", "spec", "io", "limits", "heap", "data_files",
              "profiles", "registry", "kernel", "display", "backends"}),
    ("problems", {"exchange", "arena"}),
    ("workloads", {"workloads"}),
    ("layout", {"layout"}),
    ("programs", {"program", "sweeps", "render", "export", "schemas"}),
    ("front", {"api", "cli", "entry", ""}),
)


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, str]]:
    """(module imported, name imported) for every import of ipuopt in the file, at any depth;
    those under `if TYPE_CHECKING:` are left out (they never run)."""
    tree = ast.parse(path.read_text())
    skipped = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
               and ast.unparse(node.test).endswith("TYPE_CHECKING") for n in ast.walk(node)}
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            for alias in node.names:
                whole = f"{base}.{alias.name}"
                out.append((whole if whole in modules else base, alias.name))
        elif isinstance(node, ast.Import):
            out += [(alias.name, alias.name.rsplit(".", 1)[-1]) for alias in node.names]
    return [(m, n) for m, n in out if m.split(".")[0] == "ipuopt" and m != name]


def _floor(module: str) -> int:
    key = module.split(".")[1] if "." in module else ""
    found = [i for i, (_, keys) in enumerate(FLOORS) if key in keys]
    assert found, f"{module} stands on no floor: add it to FLOORS"
    return found[0]


def _graph() -> tuple[nx.DiGraph, list[tuple[str, str, str]]]:
    modules = _modules()
    graph, private = nx.DiGraph(), []
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        for target, imported in _imports(name, path, modules):
            if target in modules:
                graph.add_edge(name, target)
            if imported.startswith("_") and not imported.startswith("__"):
                private.append((name, target, imported))
    return graph, private


def test_no_import_cycle() -> None:
    graph, _ = _graph()
    assert list(nx.simple_cycles(graph)) == []


def test_no_module_imports_from_a_floor_above_its_own() -> None:
    graph, _ = _graph()
    upward = [f"{a} ({FLOORS[_floor(a)][0]}) -> {b} ({FLOORS[_floor(b)][0]})" for a, b in graph.edges
              if _floor(b) > _floor(a)]
    assert upward == []


def test_no_private_name_is_imported_from_another_module() -> None:
    """Except a package's own private modules, the compiled twins (`_lists`, `_dive`), imported
    by a module of that package."""
    _, private = _graph()
    across = [(a, b, n) for a, b, n in private if a.rsplit(".", 1)[0] != b.removesuffix(f".{n}")]
    assert across == []


def test_the_checks_see_a_cycle_an_upward_arrow_and_a_private_import(tmp_path: Path) -> None:
    """The reading of the source is what the three tests rest on: it must find each fault."""
    fake = {"ipuopt.params": tmp_path / "params.py", "ipuopt.exchange.greedy": tmp_path / "greedy.py"}
    fake["ipuopt.params"].write_text("def f():\n    from ipuopt.exchange.greedy import _uses\n")
    fake["ipuopt.exchange.greedy"].write_text("from typing import TYPE_CHECKING\nimport ipuopt.params\n"
                                              "if TYPE_CHECKING:\n    from ipuopt.api import x\n")
    assert _imports("ipuopt.params", fake["ipuopt.params"], fake) == [("ipuopt.exchange.greedy", "_uses")]
    assert _imports("ipuopt.exchange.greedy", fake["ipuopt.exchange.greedy"], fake) == [
        ("ipuopt.params", "params")]
    assert _floor("ipuopt.exchange.greedy") > _floor("ipuopt.params")
