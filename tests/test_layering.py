"""The layers of DESIGN.md ("Layers"), checked on the source: every module of ``src/baton``
belongs to a layer, no module imports from a layer below its own, and no modules import each
other in a loop, directly or through others. A failure prints the offending edges
(``module:line -> module``).

The graph is built from the AST of every file, not by importing it, so a module the tests
never load is checked too. Decisions:

- Every import counts, wherever it is written: at module level, inside a function or a
  method (a late import that only hides a cycle is still an arrow), and
  ``importlib.import_module("baton....")`` with a literal name.
- ``import baton.a.b`` and ``from baton.a import b`` (``b`` a module) point at ``baton.a.b``;
  ``from baton.a import name`` (``name`` not a module) points at ``baton.a``. Importing a
  submodule runs its packages' ``__init__`` too; that is not counted as an arrow (every
  module would otherwise depend on its own package's exports).
- Imports under ``if TYPE_CHECKING:`` count for the layer check: a lower layer that names an
  upper layer's type knows about that layer. They do not count for the cycle check: they never
  run, and two modules of one package whose annotations mention each other (the workspace and
  the helpers it passes itself to) are one concept split for size, not a loop at import time.
- Modules of one layer may import each other (a layer is several packages); only cycles are
  refused among them.
- The root package ``baton`` (``from baton import ...``, the public names) lies below every
  layer: it may name anything, and no module may import it.

``LAYERS`` mirrors the table of DESIGN.md, most basic first; a module belongs to the layer of
its longest listed prefix.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "src"

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("protocol", ("baton.errors", "baton.messages", "baton.response", "baton.answer_dict", "baton.answer_markdown", "baton.ids", "baton.tagged_json", "baton.events", "baton.tools",
                  "baton.dependency_waits", "baton.sqlite_wal", "baton.store_backends",
                  "baton.files", "baton.numbers", "baton.outages", "baton.settings")),
    ("questions", ("baton.phrasing", "baton.verified", "baton.followup_sql")),
    ("models", ("baton.llm",)),
    ("loop", ("baton.loop",)),
    ("agents", ("baton.agents",)),
    ("presentation", ("baton.viz",)),
    ("specialists", ("baton.specialists", "baton.semantic")),
    ("pipelines", ("baton.pipeline",)),
    ("memory", ("baton.memory",)),
    ("state", ("baton.state",)),
    ("workspace", ("baton.workspace",)),
    ("surfaces", ("baton.server", "baton.cli", "baton.mcp", "baton.demo", "baton.evaluation", "baton.observability")),
)
ROOT_PACKAGE = "baton"


@dataclass(frozen=True, slots=True)
class Edge:
    source: str
    target: str
    line: int
    type_only: bool

    def __str__(self) -> str:
        return f"{self.source}:{self.line} -> {self.target}" + (" (TYPE_CHECKING)" if self.type_only else "")


def modules_under(source: Path, package: str = ROOT_PACKAGE) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package's ``__init__``)."""
    found = {}
    for path in sorted((source / package).rglob("*.py")):
        parts = list(path.relative_to(source).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imported_names(module: str, is_package: bool, node: ast.AST, known: Mapping[str, object]) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[:len(base) - (node.level - 1)]
            prefix = ".".join([*base, *([node.module] if node.module else [])])
        else:
            prefix = node.module or ""
        for alias in node.names:
            yield f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in known else prefix
    elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
          and isinstance(node.args[0].value, str)
          and ((isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
               or (isinstance(node.func, ast.Name) and node.func.id == "import_module"))):
        yield node.args[0].value


def import_graph(source: Path, package: str = ROOT_PACKAGE) -> tuple[dict[str, tuple[Path, bool]], list[Edge]]:
    """Every module under ``source/package`` and every import between two of them."""
    known = modules_under(source, package)
    edges: list[Edge] = []

    def visit(module: str, is_package: bool, node: ast.AST, type_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for statement in child.body:
                    visit_one(module, is_package, statement, True)
                for statement in child.orelse:
                    visit_one(module, is_package, statement, type_only)
            else:
                visit_one(module, is_package, child, type_only)

    def visit_one(module: str, is_package: bool, node: ast.AST, type_only: bool) -> None:
        for name in _imported_names(module, is_package, node, known):
            if name != package and not name.startswith(package + "."):
                continue
            while name not in known and "." in name:
                name = name.rsplit(".", 1)[0]
            if name != module:
                edges.append(Edge(module, name, getattr(node, "lineno", 0), type_only))
        visit(module, is_package, node, type_only)

    for module, (path, is_package) in known.items():
        visit(module, is_package, ast.parse(path.read_text(encoding="utf-8"), str(path)), False)
    return known, list(dict.fromkeys(edges))  # one edge per import statement, not per name


def layer_of(module: str, layers: Sequence[tuple[str, Sequence[str]]] = LAYERS,
             root: str = ROOT_PACKAGE) -> int | None:
    """Index of the module's layer (``len(layers)`` for the root package), None if none."""
    if module == root:
        return len(layers)
    best: tuple[int, int] | None = None
    for index, (_, prefixes) in enumerate(layers):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > best[1]):
                best = (index, len(prefix))
    return None if best is None else best[0]


def upward_edges(edges: Sequence[Edge], layers: Sequence[tuple[str, Sequence[str]]] = LAYERS,
                 root: str = ROOT_PACKAGE) -> list[str]:
    """Each import of a module from a layer below the importer's (the root package is below all)."""
    found = []
    for edge in edges:
        here, there = layer_of(edge.source, layers, root), layer_of(edge.target, layers, root)
        if here is not None and there is not None and there > here:
            names = [name for name, _ in layers] + ["the root package"]
            found.append(f"{edge}   [{names[here]} imports {names[there]}]")
    return found


def cycles(edges: Sequence[Edge]) -> list[list[Edge]]:
    """The run-time edges inside each strongly connected set of modules (Tarjan's algorithm)."""
    graph: dict[str, list[Edge]] = {}
    for edge in edges:
        if not edge.type_only:
            graph.setdefault(edge.source, []).append(edge)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[Edge]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for edge in graph.get(node, ()):
            if edge.target not in index:
                connect(edge.target)
                low[node] = min(low[node], low[edge.target])
            elif edge.target in on_stack:
                low[node] = min(low[node], index[edge.target])
        if low[node] == index[node]:
            members = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                members.add(member)
                if member == node:
                    break
            if len(members) > 1:
                found.append(sorted((e for m in members for e in graph.get(m, ()) if e.target in members),
                                    key=lambda e: (e.source, e.line)))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for node in sorted(graph):
            if node not in index:
                connect(node)
    finally:
        sys.setrecursionlimit(limit)
    return found


@functools.cache
def source_graph() -> tuple[dict[str, tuple[Path, bool]], list[Edge]]:
    return import_graph(SOURCE)


def test_every_module_belongs_to_a_layer():
    known, _ = source_graph()
    orphans = sorted(m for m in known if layer_of(m) is None)
    assert not orphans, "modules in no layer of DESIGN.md (add them to LAYERS and the design):\n" + "\n".join(orphans)


def test_no_module_imports_from_a_layer_below_its_own():
    _, edges = source_graph()
    upward = upward_edges(edges)
    assert not upward, "imports running up the layers:\n" + "\n".join(upward)


def test_no_import_cycle_between_modules():
    _, edges = source_graph()
    found = cycles(edges)
    assert not found, "import cycles:\n" + "\n\n".join("\n".join(str(e) for e in cycle) for cycle in found)


def test_the_graph_sees_late_imports_type_checking_imports_and_import_module(tmp_path):
    """The checks above pass only if the graph misses nothing: on a small package with each
    kind of arrow they must report every one."""
    package = tmp_path / "pkg"
    (package / "low").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "low" / "__init__.py").write_text("")
    (package / "high.py").write_text("from pkg.low import b\n")
    (package / "low" / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg.high import Thing\n"
        "def late():\n    from . import b\n    return b\n"
    )
    (package / "low" / "b.py").write_text(
        "import importlib\n"
        "def later():\n    return importlib.import_module('pkg.low.a')\n"
        "class C:\n    def method(self):\n        import pkg\n"
    )
    layers = (("low", ("pkg.low",)), ("high", ("pkg.high",)))
    known, edges = import_graph(tmp_path, "pkg")
    assert set(known) == {"pkg", "pkg.high", "pkg.low", "pkg.low.a", "pkg.low.b"}
    upward = upward_edges(edges, layers, "pkg")
    assert [u.split("   ")[0] for u in upward] == [
        "pkg.low.a:3 -> pkg.high (TYPE_CHECKING)", "pkg.low.b:6 -> pkg"]
    assert [[str(e) for e in cycle] for cycle in cycles(edges)] == [
        ["pkg.low.a:5 -> pkg.low.b", "pkg.low.b:3 -> pkg.low.a"]]
