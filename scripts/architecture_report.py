"""Print the measures of how Baton's house is built, read from its sources (no import).

- modules that build a workspace: those that construct ``Workspace`` (or call a builder's
  wiring: ``attach_semantic``, ``attach_planning``) — the target is one, ``workspace/assembly.py``;
  beside it, the calls that ask for one (``assemble`` and its shorthands), for reading;
- references to ``.agent_tools`` outside ``agents/orchestrator.py`` — the target is none (the
  workspace's ``Catalog`` answers what they asked);
- modules reading the environment (``os.environ``, ``os.getenv``, ``os.putenv``) — the target is
  the CLI, the server and ``settings.py`` only;
- modules over 400 lines (the house rule asks that they be split);
- per-dialect branches outside ``specialists/sql/engines/``: a comparison with a database
  engine's name (``dialect == "postgres"``, ``backend in ("postgresql", "postgres")``,
  ``"mariadb" in version``) or a mapping keyed by one (``{"mysql": ...}``, a ``match`` case on
  one) — the target is at most 5 (an engine is one unit: ``engines/``).

    .venv/bin/python scripts/architecture_report.py [--json] [--source OTHER_CHECKOUT/src/baton]

``tests/test_architecture.py`` holds the targets, so a change that breaks one fails CI.
"""

from __future__ import annotations

import argparse
import ast
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "src" / "baton"
BUILDERS = frozenset({"Workspace", "attach_semantic", "attach_planning"})
ENTRY_POINTS = frozenset({"assemble", "open_spec", "open_database_workspace", "build_demo_workspace"})
ENVIRONMENT_EDGE = ("cli/", "server/", "settings.py")
LONG_MODULE = 400
ENGINE_UNITS = "specialists/sql/engines/"
# every spelling of an engine Baton speaks (its sqlglot, SQLAlchemy and driver names)
ENGINE_NAMES = frozenset({"sqlite", "sqlite3", "duckdb", "postgres", "postgresql", "pg", "psycopg", "psycopg2",
                          "mysql", "mariadb", "pymysql", "aiomysql"})


@dataclass
class Report:
    builders: dict[str, int] = field(default_factory=dict)
    entry_calls: dict[str, int] = field(default_factory=dict)  # who asks for a workspace to be built
    agent_tools: dict[str, int] = field(default_factory=dict)
    environment: dict[str, int] = field(default_factory=dict)
    long_modules: dict[str, int] = field(default_factory=dict)
    dialect_branches: dict[str, list[int]] = field(default_factory=dict)  # module -> line of each branch

    @property
    def dialect_branch_count(self) -> int:
        return sum(len(lines) for lines in self.dialect_branches.values())

    @property
    def environment_outside_edge(self) -> list[str]:
        return sorted(m for m in self.environment if not m.startswith(ENVIRONMENT_EDGE))

    def to_dict(self) -> dict[str, object]:
        return {"modules_building_a_workspace": sorted(self.builders),
                "calls_asking_for_a_workspace": self.entry_calls,
                "agent_tools_references_outside_orchestrator": sum(self.agent_tools.values()),
                "agent_tools_modules": sorted(self.agent_tools),
                "modules_reading_the_environment": sorted(self.environment),
                "modules_reading_the_environment_outside_the_edge": self.environment_outside_edge,
                "modules_over_400_lines": self.long_modules,
                "dialect_branches_outside_engines": self.dialect_branch_count,
                "dialect_branch_lines": self.dialect_branches}


def modules(root: Path = SOURCE) -> Iterator[tuple[str, ast.Module, int]]:
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        yield path.relative_to(root).as_posix(), ast.parse(text, filename=str(path)), text.count("\n")


def _called_name(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def _reads_environment(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "putenv", "environb"):
        return isinstance(node.value, ast.Name) and node.value.id == "os"
    if isinstance(node, ast.ImportFrom) and node.module == "os":
        return any(alias.name in ("environ", "getenv", "putenv", "environb") for alias in node.names)
    return False


def _engine_name(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lower() in ENGINE_NAMES


def _names_an_engine(node: ast.AST) -> bool:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_engine_name(e) for e in node.elts)
    return _engine_name(node)


def _dialect_branch(node: ast.AST) -> bool:
    """A comparison with an engine's name, a mapping keyed by one, or a ``match`` case on one."""
    if isinstance(node, ast.Compare):
        return any(_names_an_engine(side) for side in (node.left, *node.comparators))
    if isinstance(node, ast.Dict):
        return any(key is not None and _engine_name(key) for key in node.keys)
    if isinstance(node, ast.match_case):
        return isinstance(node.pattern, ast.MatchValue) and _engine_name(node.pattern.value)
    return False


def measure(root: Path = SOURCE) -> Report:
    report = Report()
    for name, tree, lines in modules(root):
        if lines > LONG_MODULE:
            report.long_modules[name] = lines
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _called_name(node) in BUILDERS:
                report.builders[name] = report.builders.get(name, 0) + 1
            elif isinstance(node, ast.Call) and _called_name(node) in ENTRY_POINTS:
                report.entry_calls[name] = report.entry_calls.get(name, 0) + 1
            elif isinstance(node, ast.Attribute) and node.attr == "agent_tools" and name != "agents/orchestrator.py":
                report.agent_tools[name] = report.agent_tools.get(name, 0) + 1
            if _reads_environment(node):
                report.environment[name] = report.environment.get(name, 0) + 1
            if not name.startswith(ENGINE_UNITS) and _dialect_branch(node):
                report.dialect_branches.setdefault(name, []).append(getattr(node, "lineno", 0) or node.pattern.lineno)
        if name in report.dialect_branches:
            report.dialect_branches[name].sort()
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the measures as JSON")
    parser.add_argument("--source", type=Path, default=SOURCE, help="the baton package to read (default: this checkout's)")
    args = parser.parse_args()
    report = measure(args.source)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
        return
    print(f"modules that build a workspace: {len(report.builders)} ({', '.join(sorted(report.builders))})")
    print(f"calls asking for a workspace (assemble and its shorthands): {sum(report.entry_calls.values())} in "
          f"{len(report.entry_calls)} modules ({', '.join(f'{m} {n}' for m, n in sorted(report.entry_calls.items()))})")
    print(f"references to .agent_tools outside agents/orchestrator.py: {sum(report.agent_tools.values())}"
          + (f" ({', '.join(sorted(report.agent_tools))})" if report.agent_tools else ""))
    outside = report.environment_outside_edge
    print(f"modules reading the environment: {len(report.environment)} ({', '.join(sorted(report.environment))}); "
          f"outside the CLI, the server and settings.py: {len(outside)}" + (f" ({', '.join(outside)})" if outside else ""))
    print(f"modules over {LONG_MODULE} lines: {len(report.long_modules)}"
          + (" (" + ", ".join(f"{m} {n}" for m, n in sorted(report.long_modules.items())) + ")" if report.long_modules else ""))
    branches = report.dialect_branches
    print(f"per-dialect branches outside {ENGINE_UNITS}: {report.dialect_branch_count} in {len(branches)} modules"
          + (" (" + ", ".join(f"{m} {len(lines)}" for m, lines in sorted(branches.items())) + ")" if branches else ""))


if __name__ == "__main__":
    main()
