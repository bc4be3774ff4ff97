"""The analysis package's layers (docs/design.md): results < model < render < figures < report, paper,
fleet < compare < the command line. A module imports only from its own layer or lower,
report, paper and fleet never from each other, and no imports go round in a circle (an
import inside a function counts: it is a dependency all the same). The C++ side has its
own (tests/cpp/test_layering.cpp)."""
from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

#: Layer of each top-level part of `analysis` (a package or a module).
LAYERS = {
    "errors": 0, "outfiles": 0, "plugins": 0, "robust": 0, "results": 0,
    "model": 1,
    "render": 2,
    "figures": 2.5,  # the paper's items, which the report draws too
    "report": 3, "paper": 3, "fleet": 3,
    "compare": 4,
    "__main__": 5,
    "entry_points": 6,  # the console scripts: shims over __main__
}


def imports(package: Path, sources: dict[str, str]) -> dict[str, set[str]]:
    """Module -> the modules of the package it imports (`a.b.c`), from `sources` (module ->
    text). `from . import x` names module `x` where there is one, else the package."""
    graph: dict[str, set[str]] = {}
    for name, text in sources.items():
        is_package = name.endswith(".__init__")
        name = name.removesuffix(".__init__")
        here = name.split(".") if is_package else name.split(".")[:-1]
        found: set[str] = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom):
                base = here[:len(here) - node.level + 1] if node.level else []
                module = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:
                    sub = f"{module}.{alias.name}"
                    found.add(sub if sub in sources or f"{sub}.__init__" in sources else module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
        graph[name] = {m for m in found if m.split(".")[0] == package.name and m != name}
    return graph


def sources_of(package: Path) -> dict[str, str]:
    return {".".join(p.relative_to(package.parent).with_suffix("").parts): p.read_text()
            for p in sorted(package.rglob("*.py"))}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    found, state, stack = [], {}, []

    def visit(node: str) -> None:
        state[node] = "open"
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == "open":
                found.append(stack[stack.index(dep):] + [dep])
            elif dep in graph and dep not in state:
                visit(dep)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def wrong_way(graph: dict[str, set[str]]) -> list[str]:
    """`a -> b` where b's part is of a higher layer than a's, or a peer part of layer 3."""
    def part(module: str) -> str:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 else ""

    bad = []
    for module, deps in graph.items():
        mine = part(module)
        if mine not in LAYERS:
            continue
        for dep in deps:
            theirs = part(dep)
            if theirs not in LAYERS:
                continue
            if LAYERS[theirs] > LAYERS[mine] or (LAYERS[theirs] == LAYERS[mine] == 3 and theirs != mine):
                bad.append(f"{module} -> {dep}")
    return sorted(bad)


def test_the_scanner_finds_a_circle_and_an_import_against_the_layers() -> None:
    sources = {"analysis.__init__": "", "analysis.fleet.__init__": "",
               "analysis.fleet.a": "from . import b\n", "analysis.fleet.b": "def f():\n    from .a import x\n",
               "analysis.results.__init__": "", "analysis.results.io": "from ..report.write import w\n",
               "analysis.report.__init__": "", "analysis.report.write": "from ..paper import items\n",
               "analysis.paper.__init__": "", "analysis.paper.items": "import numpy\n"}
    graph = imports(Path("analysis"), sources)
    assert circles(graph) == [["analysis.fleet.a", "analysis.fleet.b", "analysis.fleet.a"]]
    assert wrong_way(graph) == ["analysis.report.write -> analysis.paper.items",
                                "analysis.results.io -> analysis.report.write"]


def test_the_analysis_package_has_no_circle_and_no_import_against_its_layers() -> None:
    package = REPO / "analysis"
    graph = imports(package, sources_of(package))
    assert len(graph) > 50
    parts = {m.split(".")[1] for m in graph if "." in m}
    assert parts <= set(LAYERS), f"parts without a layer: {parts - set(LAYERS)} (add them to LAYERS)"
    assert circles(graph) == []
    assert wrong_way(graph) == []
