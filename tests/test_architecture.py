"""The house's declared shape, measured by ``scripts/architecture_report.py``: one module builds
a workspace, nothing outside the orchestrator reads its tool table, and only the CLI, the
server and ``settings.py`` read the environment."""

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


def test_the_measures_see_what_they_count(tmp_path):
    """Each measure finds a planted instance (so an empty result above means something)."""
    package = tmp_path / "baton"
    (package / "workspace").mkdir(parents=True)
    (package / "workspace" / "elsewhere.py").write_text(
        "import os\nfrom os import getenv\n\ndef f(ws):\n    ws.orchestrator.agent_tools\n    return Workspace('x', None), os.environ\n")
    report = report_module().measure(package)
    assert report.builders == {"workspace/elsewhere.py": 1}
    assert report.agent_tools == {"workspace/elsewhere.py": 1}
    assert report.environment == {"workspace/elsewhere.py": 2}
    assert report.environment_outside_edge == ["workspace/elsewhere.py"]
