"""The layers of ``docs/concepts/architecture.md`` ("Architecture"), checked on the source:
every module of ``src/baton`` belongs to a layer, no module imports from a layer above its own
(less basic), no modules import each other in a loop, directly or through others, and no two
packages import each other. A failure prints the offending edges (``module:line -> module``).

The layer table is read from that page (``layering_graph.read_layers``), the one place it is
written, so the documentation and this test cannot drift; a page without a readable table
fails ``test_the_architecture_page_holds_the_layer_table`` and every check below, saying why.

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
  upper layer's type knows about that layer. They do not count for the cycle check or the
  two-way check: they never run, and two modules of one package whose annotations mention
  each other (the workspace and the helpers it passes itself to) are one concept split for
  size, not a loop at import time.
- Modules of one layer may import each other (a layer is several packages); only cycles are
  refused among them, and packages that import each other.
- A module's *package* is the package it sits in (``baton.state`` for ``baton.state.sessions``);
  a package's ``__init__`` belongs to that package itself. Two packages are compared when
  neither contains the other: ``baton.specialists.sql`` and ``baton.semantic`` are, while
  ``baton.specialists.sql`` and ``baton.specialists.sql.engines`` are one package and its
  part, which may call each other. So the root package's own modules (``baton.errors``) meet
  the two-way check only through the cycle check.
- The root package ``baton`` (``from baton import ...``, the public names) lies above every
  layer: it may name anything, and no module may import it.

A module belongs to the layer of its longest listed prefix.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from layering_graph import (
    Edge,
    LayerTableError,
    cycles,
    import_graph,
    layer_of,
    read_layers,
    two_way_packages,
    upward_edges,
)

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src"
ARCHITECTURE = ROOT / "docs" / "concepts" / "architecture.md"


@functools.cache
def layers() -> tuple[tuple[str, tuple[str, ...]], ...]:
    return read_layers(ARCHITECTURE)


@functools.cache
def source_graph() -> tuple[dict[str, tuple[Path, bool]], list[Edge]]:
    return import_graph(SOURCE)


def test_the_architecture_page_holds_the_layer_table():
    names = [name for name, _ in layers()]
    assert names[0] == "protocol" and names[-1] == "surfaces", names
    assert names.index("memory") < names.index("state") < names.index("workspace"), names


def test_every_module_belongs_to_a_layer():
    known, _ = source_graph()
    orphans = sorted(m for m in known if layer_of(m, layers()) is None)
    assert not orphans, ("modules in no layer (add them to the table of docs/concepts/architecture.md):\n"
                         + "\n".join(orphans))


def test_no_module_imports_from_a_layer_above_its_own():
    _, edges = source_graph()
    upward = upward_edges(edges, layers())
    assert not upward, "imports running up the layers:\n" + "\n".join(upward)


def test_no_import_cycle_between_modules():
    _, edges = source_graph()
    found = cycles(edges)
    assert not found, "import cycles:\n" + "\n\n".join("\n".join(str(e) for e in cycle) for cycle in found)


def test_no_two_packages_import_each_other():
    known, edges = source_graph()
    found = two_way_packages(known, edges)
    assert not found, "packages that import each other:\n" + "\n\n".join(
        f"{a} <-> {b}:\n" + "\n".join(f"  {e}" for e in both) for a, b, both in found)


def test_the_layer_table_reader_says_what_is_wrong(tmp_path):
    page = tmp_path / "architecture.md"
    header = "| layer | packages and modules | what it is for |\n|---|---|---|\n"
    cases = {
        None: "is missing",
        "# Architecture\n\nNo table.\n": "has no table headed",
        "| layer | packages and modules | what it is for |\n| low | `baton.a` | x |\n": "not followed by its |---| line",
        header: "has no rows",
        header + "| low | `baton.a` |\n": "has 2 cells, not 3",
        header + "| low | baton.a | x |\n": "as `dotted.names`",
        header + "| low | `baton.a`, and more | x |\n": "as `dotted.names`",
        header + "| low | `other.a` | x |\n": "'other.a' is not a module of baton",
        header + "| low | `baton.a` | x |\n| low | `baton.b` | y |\n": "'low' is not a new layer name",
        header + "| low | `baton.a` | x |\n| high | `baton.a` | y |\n": "listed twice (also in layer low)",
    }
    for text, message in cases.items():
        if text is not None:
            page.write_text(text)
        with pytest.raises(LayerTableError, match=re.escape(message)):
            read_layers(page)
    page.write_text("Intro.\n\n" + header + "| low | `baton.a`, `baton.b.c` | x |\n| high | `baton.d` | y |\n\nAfter.\n")
    assert read_layers(page) == (("low", ("baton.a", "baton.b.c")), ("high", ("baton.d",)))


def test_two_way_packages_are_found_on_a_small_graph(tmp_path):
    """Packages that import each other are reported with the imports both ways, however
    late; a package and its part, and imports only a type checker sees, are not."""
    files = {
        "pkg/__init__.py": "",
        "pkg/a/__init__.py": "from pkg.a.inner import thing\n",
        "pkg/a/x.py": "from pkg.b import y\n",
        "pkg/a/inner/__init__.py": "",
        "pkg/a/inner/thing.py": "import pkg.a.x\n",
        "pkg/b/__init__.py": "",
        "pkg/b/y.py": "def late():\n    from pkg.a import x\n    return x\n",
        "pkg/c/__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.d import z\n",
        "pkg/d/__init__.py": "",
        "pkg/d/z.py": "import pkg.c\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    known, edges = import_graph(tmp_path, "pkg")
    found = [(a, b, [str(e) for e in both]) for a, b, both in two_way_packages(known, edges)]
    assert found == [("pkg.a", "pkg.b", ["pkg.a.x:1 -> pkg.b.y", "pkg.b.y:2 -> pkg.a.x"])]


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
