"""The import graph of a package, read from the source, and what ``tests/test_layering.py``
checks on it: the layer table of ``docs/concepts/architecture.md``, imports running up the
layers, import cycles between modules, and packages that import each other. Kept apart from
the tests so that each stays short; the decisions are in the test module's docstring.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT_PACKAGE = "baton"
Layers = Sequence[tuple[str, Sequence[str]]]
TABLE_HEADER = ("layer", "packages and modules", "what it is for")


class LayerTableError(AssertionError):
    """The architecture page has no layer table, or one the test cannot read."""


def read_layers(page: Path, root: str = ROOT_PACKAGE) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The layer table of ``page``, most basic first: (layer, its module prefixes) per row.
    The table is the one whose header is ``| layer | packages and modules | what it is for |``;
    each prefix is a dotted name in backticks in the second column."""
    if not page.is_file():
        raise LayerTableError(f"{page} is missing: it holds the layer table the layering tests check")
    lines = [line.strip() for line in page.read_text(encoding="utf-8").splitlines()]
    cells = [_cells(line) for line in lines]
    try:
        top = next(i for i, row in enumerate(cells) if row is not None and tuple(c.lower() for c in row) == TABLE_HEADER)
    except StopIteration:
        raise LayerTableError(f"{page} has no table headed | {' | '.join(TABLE_HEADER)} |") from None
    if top + 1 >= len(cells) or not cells[top + 1] or not all(re.fullmatch(r":?-{3,}:?", c) for c in cells[top + 1] or ()):
        raise LayerTableError(f"{page}:{top + 2}: the layer table's header is not followed by its |---| line")
    layers: list[tuple[str, tuple[str, ...]]] = []
    seen: dict[str, str] = {}
    for number in range(top + 2, len(cells)):
        row = cells[number]
        if row is None:
            break
        where = f"{page}:{number + 1}"
        if len(row) != len(TABLE_HEADER):
            raise LayerTableError(f"{where}: a row of the layer table has {len(row)} cells, not {len(TABLE_HEADER)}")
        name, modules = row[0], tuple(re.findall(r"`([^`]*)`", row[1]))
        if not re.fullmatch(r"[a-z][a-z_-]*", name) or name in (n for n, _ in layers):
            raise LayerTableError(f"{where}: {name!r} is not a new layer name")
        if not modules or re.sub(r"`[^`]*`|[,\s]", "", row[1]):
            raise LayerTableError(f"{where}: layer {name!r} must list its packages and modules as `dotted.names`, comma-separated")
        for module in modules:
            if not re.fullmatch(rf"{re.escape(root)}(\.[A-Za-z_]\w*)+", module):
                raise LayerTableError(f"{where}: {module!r} is not a module of {root}")
            if module in seen:
                raise LayerTableError(f"{where}: {module} is listed twice (also in layer {seen[module]})")
            seen[module] = name
        layers.append((name, modules))
    if not layers:
        raise LayerTableError(f"{page}: the layer table has no rows")
    return tuple(layers)


def _cells(line: str) -> list[str] | None:
    if not (line.startswith("|") and line.endswith("|") and len(line) > 1):
        return None
    return [cell.strip() for cell in line[1:-1].split("|")]


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


def layer_of(module: str, layers: Layers, root: str = ROOT_PACKAGE) -> int | None:
    """Index of the module's layer (``len(layers)`` for the root package), None if none."""
    if module == root:
        return len(layers)
    best: tuple[int, int] | None = None
    for index, (_, prefixes) in enumerate(layers):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > best[1]):
                best = (index, len(prefix))
    return None if best is None else best[0]


def upward_edges(edges: Sequence[Edge], layers: Layers, root: str = ROOT_PACKAGE) -> list[str]:
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


def package_of(module: str, known: Mapping[str, tuple[Path, bool]]) -> str:
    """The package ``module`` sits in; a package's ``__init__`` belongs to that package itself."""
    path_and_flag = known.get(module)
    if (path_and_flag is not None and path_and_flag[1]) or "." not in module:
        return module
    return module.rsplit(".", 1)[0]


def two_way_packages(known: Mapping[str, tuple[Path, bool]], edges: Sequence[Edge]) -> list[tuple[str, str, list[Edge]]]:
    """Each pair of packages, neither inside the other, that import each other at run time
    (``TYPE_CHECKING`` imports excluded), with the imports both ways."""
    arrows: dict[tuple[str, str], list[Edge]] = {}
    for edge in edges:
        if edge.type_only:
            continue
        here, there = package_of(edge.source, known), package_of(edge.target, known)
        if here == there or here.startswith(there + ".") or there.startswith(here + "."):
            continue
        arrows.setdefault((here, there), []).append(edge)
    return [(a, b, arrows[(a, b)] + arrows[(b, a)]) for a, b in sorted(arrows) if a < b and (b, a) in arrows]
