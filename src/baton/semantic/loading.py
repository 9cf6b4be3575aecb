"""Reading a semantic model from a file, and its saved queries as verified questions.

``load_model(path)`` reads Baton's YAML or a dbt MetricFlow file (told apart by their
top-level keys: ``semantic_models:`` is MetricFlow's) and checks it. ``saved_verified``
turns the model's saved queries into verified questions, their SQL compiled for the layer's
engine. Putting a model to work in a workspace is the workspace's business
(``baton.workspace.semantic.attach_semantic``): this module knows no workspace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from baton.semantic.errors import SemanticModelError
from baton.semantic.layer import SemanticLayer
from baton.semantic.model import SemanticModel


def load_model(path: str | Path) -> SemanticModel:
    """A checked model from Baton's YAML or a dbt MetricFlow semantic-model file."""
    from baton.semantic.native import model_from_dict, read_yaml

    data = read_yaml(path)
    if isinstance(data, dict) and ("semantic_models" in data or "models" in data and "metrics" in data and "entities" not in data):
        from baton.semantic.metricflow import model_from_metricflow

        return model_from_metricflow(data, default_name=Path(path).stem)
    if not isinstance(data, dict):
        raise SemanticModelError(f"{path}: a semantic model is a YAML mapping")
    return model_from_dict(data, default_name=Path(path).stem)


def saved_verified(layer: SemanticLayer, agent: str) -> list[Any]:
    """The model's saved queries as verified questions (SQL compiled for this engine)."""
    from baton.semantic.query import SemanticQuery
    from baton.verified import VerifiedQuestion

    out = []
    for saved in layer.model.saved_queries:
        compiled = layer.compile(SemanticQuery.from_dict(saved.query))
        out.append(VerifiedQuestion(saved.question, compiled.sql, agent, layer.connection.id, source="semantic"))
    return out


def demo_model_path() -> Path:
    """The demo's semantic model (a file shipped in ``baton.demo``; nothing is imported)."""
    from importlib import resources

    return Path(str(resources.files("baton.demo") / "semantic.yaml"))


__all__ = ["demo_model_path", "load_model", "saved_verified"]
