"""The public API: ``from baton import ...`` gives everything a user needs, ``import baton``
stays cheap and does nothing, and every package says what it exports (``__all__``).

The lazy packages (``baton``, ``baton.specialists.sql``) name each export three times: in
``__all__``, in the table ``__getattr__`` loads from, and in the ``TYPE_CHECKING`` imports
type checkers read. These tests keep the three equal, so a name can be neither forgotten by
type checkers (``Any`` to them) nor advertised and missing.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import baton

SOURCE = Path(__file__).resolve().parents[1] / "src"
PACKAGES = sorted(".".join(p.relative_to(SOURCE).parent.parts) for p in (SOURCE / "baton").rglob("__init__.py"))
LAZY = ("baton", "baton.specialists.sql")


def _fresh(code: str, tmp_path: Path) -> dict:
    """Run ``code`` in a new interpreter (nothing imported yet) whose BATON_HOME is empty."""
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": "/usr/bin:/bin", "BATON_HOME": str(home)}
    env.update({k: v for k, v in os.environ.items() if k == "PYTHONDONTWRITEBYTECODE"})  # as the run was asked
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=env, cwd=tmp_path).stdout
    return {"result": json.loads(out), "home": sorted(p.name for p in home.iterdir())}


def _type_checking_names(package: str) -> set[str]:
    tree = ast.parse((SOURCE / package.replace(".", "/") / "__init__.py").read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module != "typing":
                    names.update(alias.asname or alias.name for alias in statement.names)
    return names


def _literal_all(package: str) -> list[str] | None:
    tree = ast.parse((SOURCE / package.replace(".", "/") / "__init__.py").read_text())
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return ast.literal_eval(node.value)  # a literal list: what type checkers can read
    return None


def test_import_baton_loads_no_other_module_of_baton_and_writes_nothing(tmp_path):
    run = _fresh("import json, sys; import baton\n"
                 "print(json.dumps(sorted(m for m in sys.modules if m.startswith('baton')"
                 " or m.split('.')[0] in ('sqlalchemy', 'pandas', 'openai', 'anthropic', 'sqlglot', 'typing'))))",
                 tmp_path)
    assert run == {"result": ["baton"], "home": []}


def test_a_name_loads_its_own_module_only(tmp_path):
    run = _fresh("import json, sys\nfrom baton import ScriptedModel\n"
                 "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('sqlalchemy', 'pandas'))))",
                 tmp_path)
    assert run["result"] == []


@pytest.mark.parametrize("package", LAZY)
def test_lazy_exports_are_named_alike_for_type_checkers_and_at_run_time(package):
    module = importlib.import_module(package)
    exported = _literal_all(package)
    assert exported is not None and len(set(exported)) == len(exported)
    assert set(exported) == set(module._EXPORTS) == _type_checking_names(package)


def test_every_name_of_baton_is_the_object_of_its_own_module():
    for name in baton.__all__:
        home = importlib.import_module(baton._EXPORTS[name])
        assert getattr(baton, name) is getattr(home, name), name


def test_everything_a_user_needs_is_there():
    needed = {"OrchestratorAgent", "BaseAgent", "AgentContext", "AgentResult", "SQLAgent", "SQLConnection",
              "ConnectionOptions", "DataFrameAgent", "KnowledgeAgent", "MCPAgent", "ScriptedModel", "FunctionModel",
              "tool_call", "model_from_string", "model_from_env", "LLMRouter", "AIMessage", "LLMResponse", "Workspace",
              "BatonError", "ConfigurationError", "ProviderError", "AgentRetryableError"}
    assert needed <= set(baton.__all__)
    star: dict = {}
    exec("from baton import *", star)
    assert set(star) - {"__builtins__"} == set(baton.__all__)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'SQLAgnet'"):
        baton.SQLAgnet
    with pytest.raises(ImportError):
        exec("from baton import SQLAgnet", {})
    sql = importlib.import_module("baton.specialists.sql")
    with pytest.raises(AttributeError, match="no attribute 'agent_tool'"):
        sql.agent_tool


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_lists_its_public_names(package):
    exported = _literal_all(package)
    assert exported is not None, f"{package}/__init__.py has no literal __all__"
    module = importlib.import_module(package)
    missing = [name for name in exported if not hasattr(module, name)]
    assert not missing, f"{package}.__all__ names what it does not have: {missing}"
