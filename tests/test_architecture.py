"""The house's declared shape, measured by ``scripts/architecture_report.py``: one module builds
a workspace, nothing outside the orchestrator reads its tool table, only the CLI, the server
and ``settings.py`` read the environment, and a database engine is one unit: at most 5
per-dialect branches outside ``specialists/sql/engines/``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "architecture_report.py"


def report_module():
    spec = importlib.util.spec_from_file_location("architecture_report", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["architecture_report"] = module
    spec.loader.exec_module(module)
    return module


def test_the_house_has_its_declared_shape():
    report = report_module().measure()
    assert sorted(report.builders) == ["workspace/assembly.py"]
    assert report.agent_tools == {}
    assert report.environment_outside_edge == []
    assert "settings.py" in report.environment
    assert report.dialect_branch_count <= 5, report.dialect_branches


def test_the_measures_see_what_they_count(tmp_path):
    """Each measure finds a planted instance (so an empty result above means something)."""
    package = tmp_path / "baton"
    (package / "workspace").mkdir(parents=True)
    (package / "workspace" / "elsewhere.py").write_text(
        "import os\nfrom os import getenv\n\ndef f(ws):\n    ws.orchestrator.agent_tools\n    return Workspace('x', None), os.environ\n")
    (package / "specialists" / "sql" / "engines").mkdir(parents=True)
    branches = ("def g(conn, version):\n    if conn.dialect == 'postgres' or version in ('MariaDB', 'x'):\n        return {'duckdb': 1}\n"
                "    match conn.dialect:\n        case 'sqlite':\n            return 2\n    return conn.dialect != 'other'\n")
    (package / "specialists" / "branchy.py").write_text(branches)
    (package / "specialists" / "sql" / "engines" / "postgres.py").write_text(branches)  # inside the units: not counted
    report = report_module().measure(package)
    assert report.builders == {"workspace/elsewhere.py": 1}
    assert report.agent_tools == {"workspace/elsewhere.py": 1}
    assert report.environment == {"workspace/elsewhere.py": 2}
    assert report.environment_outside_edge == ["workspace/elsewhere.py"]
    assert report.dialect_branches == {"specialists/branchy.py": [2, 2, 3, 5]}
