"""The import graph of ``gitmem`` and ``tui`` has no cycle, and the algorithms never import upward.

The graph is read from the source (AST), not from ``sys.modules``, so that an import made lazily
inside a function, or only for type checking, counts as much as one at the top of a module: a
loop hidden in a function is still a loop in the layering. Edges:

- ``import gitmem.x.y`` and ``from gitmem.x import y`` (``y`` a submodule) lead to ``gitmem.x.y``;
- ``from gitmem.x import name`` (``name`` not a submodule) leads to ``gitmem.x``;
- relative imports (``from . import x``, ``from ..store import Store``) are resolved first;
- in a module that calls ``importlib.import_module``, every string naming a module (the CLI's
  list of command modules) leads to that module.

A package's ``__init__`` running before its submodules is not an edge (else every module would
depend on ``gitmem/__init__.py``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("gitmem", "tui")

#: Imports that close a cycle still present, as (importer, imported): each is left out of the
#: graph, and each must still close a cycle (an exception that no longer happens is deleted).
KNOWN_CYCLE_EDGES: set[tuple[str, str]] = set()

#: The algorithms: pure computations on records and columns, below every surface.
ALGORITHMS = ("gitmem.context.wake", "gitmem.context.recall", "gitmem.record.decay",
              "gitmem.staleness.verdicts", "gitmem.staleness.relocate",
              "gitmem.record.relations", "gitmem.context.entry")
#: What an algorithm must never import: the renderer and the command line sit above them.
ABOVE_ALGORITHMS = ("gitmem.context.render", "gitmem.cli")

Edge = tuple[str, str, str]  # (importer, imported, "path:line" of the import)


def _module_files() -> dict[str, Path]:
    """Every module of :data:`PACKAGES` by dotted name (a package by its own name)."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _imported(module: str, is_package: bool, node: ast.AST, known: set[str]) -> Iterator[str]:
    """The modules that one import statement of ``module`` loads (outside ones too)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name
        return
    if not isinstance(node, ast.ImportFrom):
        return
    if node.level:  # relative: from the package of ``module`` (a package is its own package)
        package = module.split(".") if is_package else module.split(".")[:-1]
        base = package[: len(package) - (node.level - 1)]
        source = ".".join([*base, *([node.module] if node.module else [])])
    else:
        source = node.module or ""
    for alias in node.names:
        submodule = f"{source}.{alias.name}"
        yield submodule if submodule in known else source


def import_graph() -> tuple[set[str], list[Edge]]:
    """The modules of :data:`PACKAGES` and every import between two of them."""
    files = _module_files()
    known = set(files)
    edges: list[Edge] = []
    for module, path in files.items():
        tree = ast.parse(path.read_text(), str(path))
        dynamic = any(_calls_import_module(node) for node in ast.walk(tree))
        for node in ast.walk(tree):
            targets = list(_imported(module, path.name == "__init__.py", node, known))
            if dynamic and isinstance(node, ast.Constant) and node.value in known:
                targets.append(node.value)
            for target in targets:
                while target and target not in known:  # `import gitmem.x.Name`-like: the module
                    target = target.rpartition(".")[0]
                if target:
                    where = f"{path.relative_to(ROOT).as_posix()}:{node.lineno}"
                    edges.append((module, target, where))
    return known, edges


def _calls_import_module(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in ("import_module", "__import__")


def strongly_connected(nodes: set[str], edges: list[Edge]) -> list[list[str]]:
    """Tarjan's strongly connected components, each sorted, in a stable order."""
    successors: dict[str, list[str]] = {n: [] for n in nodes}
    for source, target, _ in edges:
        successors[source].append(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(successors[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            components.append(sorted(component))

    for node in sorted(nodes):
        if node not in index:
            visit(node)
    return sorted(components)


def _a_cycle(component: list[str], edges: list[Edge]) -> list[Edge]:
    """One closed walk through ``component``, as the import statements that make it."""
    inside = set(component)
    by_source: dict[str, list[Edge]] = {}
    for edge in edges:
        if edge[0] in inside and edge[1] in inside:
            by_source.setdefault(edge[0], []).append(edge)
    start = component[0]
    # Breadth-first from ``start`` back to itself: the shortest loop through it.
    paths: dict[str, list[Edge]] = {start: []}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for edge in by_source.get(node, []):
                if edge[1] == start:
                    return [*paths[node], edge]
                if edge[1] not in paths:
                    paths[edge[1]] = [*paths[node], edge]
                    following.append(edge[1])
        frontier = following
    raise AssertionError(f"{component} is not a cycle")


def cycles(nodes: set[str], edges: list[Edge]) -> list[list[str]]:
    """Every strongly connected component of more than one module, and every self-import."""
    self_loops = {source for source, target, _ in edges if source == target}
    return [c for c in strongly_connected(nodes, edges) if len(c) > 1 or c[0] in self_loops]


def describe(component: list[str], edges: list[Edge]) -> str:
    """The modules of a cycle, and one loop through them as ``a -> b -> a`` with each import line."""
    walk = _a_cycle(component, edges)
    steps = "\n".join(f"    {source} -> {target}  ({where})" for source, target, where in walk)
    loop = " -> ".join([walk[0][0], *(target for _, target, _ in walk)])
    return f"  {len(component)} modules: {', '.join(component)}\n  one loop: {loop}\n{steps}"


def test_the_graph_reader_resolves_every_import_form():
    nodes, edges = import_graph()
    pairs = {(source, target) for source, target, _ in edges}
    assert {"gitmem", "gitmem.cli", "gitmem.store", "gitmem.store.code", "tui.app"} <= nodes
    # `from gitmem import codec` (a submodule, inside a function) and `from gitmem.store import Store`.
    assert ("gitmem.api.curate", "gitmem.codec") in pairs and ("gitmem.api.facade", "gitmem.store") in pairs
    # `from gitmem.store.code import CodeHistory`, lazily inside a method of the store.
    assert ("gitmem.store.repo", "gitmem.store.code") in pairs
    # Only-for-type-checking imports count too: a layering does not loop for annotations either.
    assert ("gitmem.context.render", "gitmem.context.wake") in pairs
    # The command modules the CLI loads by name with importlib.
    assert ("gitmem.cli", "gitmem.cli.memory_cmds") in pairs


@pytest.mark.parametrize(
    ("source", "module", "is_package", "expected"),
    [
        ("from . import b", "pkg.a", False, ["pkg.b"]),
        ("from . import b", "pkg", True, ["pkg.b"]),
        ("from .b import name", "pkg.a", False, ["pkg.b"]),
        ("from .. import a", "pkg.sub.c", False, ["pkg.a"]),
        ("from ..sub import c, name", "pkg.sub.d", False, ["pkg.sub.c", "pkg.sub"]),
        ("from pkg import a, name", "x", False, ["pkg.a", "pkg"]),
        ("import pkg.sub.c as c", "x", False, ["pkg.sub.c"]),
    ],
)
def test_each_import_form_is_resolved(source, module, is_package, expected):
    known = {"pkg", "pkg.a", "pkg.b", "pkg.sub", "pkg.sub.c", "pkg.sub.d", "x"}
    node = ast.parse(source).body[0]
    assert list(_imported(module, is_package, node, known)) == expected


def test_the_cycle_finder_finds_loops_and_self_imports():
    nodes = {"a", "b", "c", "d"}
    edges = [("a", "b", "a.py:1"), ("b", "c", "b.py:1"), ("c", "a", "c.py:9"), ("d", "d", "d.py:2")]
    found = cycles(nodes, edges)
    assert found == [["a", "b", "c"], ["d"]]
    assert "a -> b -> c -> a" in describe(found[0], edges)
    assert cycles({"a", "b"}, [("a", "b", "a.py:1")]) == []


def test_no_import_cycles():
    nodes, edges = import_graph()
    edges = [e for e in edges if (e[0], e[1]) not in KNOWN_CYCLE_EDGES]
    found = cycles(nodes, edges)
    report = "\n".join(describe(c, edges) for c in found)
    assert found == [], f"import cycles (break each one, do not add to KNOWN_CYCLE_EDGES):\n{report}"


def test_every_known_cycle_edge_still_closes_a_cycle():
    nodes, edges = import_graph()
    pairs = {(source, target) for source, target, _ in edges}
    components = cycles(nodes, edges)
    gone = []
    for source, target in sorted(KNOWN_CYCLE_EDGES):
        in_cycle = any({source, target} <= set(c) for c in components)
        if (source, target) not in pairs or not in_cycle:
            gone.append(f"{source} -> {target}")
    assert gone == [], f"no longer part of a cycle: delete from KNOWN_CYCLE_EDGES: {gone}"


def test_the_algorithms_never_import_the_renderer_or_the_cli():
    _, edges = import_graph()
    offenders = sorted({
        f"{source} -> {target}  ({where})" for source, target, where in edges
        if source in ALGORITHMS and target.startswith(ABOVE_ALGORITHMS)
    })
    assert offenders == [], "algorithms import upward:\n" + "\n".join(offenders)
