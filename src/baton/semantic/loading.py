"""Reading a semantic model from a file, and its saved queries as verified questions.

``load_model(path)`` reads Baton's YAML or a dbt MetricFlow project (a directory, a
``semantic_manifest.json``, or a YAML file told apart by its top-level keys:
``semantic_models:``/``semantic_model:``/``metrics:`` are MetricFlow's) and checks it. ``saved_verified``
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
    """A checked model from Baton's YAML, or a dbt MetricFlow project: a directory, a YAML
    file (dbt's or MetricFlow's test format) or a ``semantic_manifest.json``."""
    from baton.semantic.metricflow import load_metricflow
    from baton.semantic.mf_project import is_metricflow, yaml_documents
    from baton.semantic.native import MAX_FILE_BYTES, model_from_dict

    path = Path(path)
    if path.is_dir() or path.suffix.lower() == ".json":
        return load_metricflow(path)
    if not path.exists():
        raise SemanticModelError(f"{path}: no such file or directory")
    documents = yaml_documents(path)  # read once: the documents tell the formats apart and are the model
    if any(is_metricflow(d) for d in documents):
        return load_metricflow(path, documents)
    if len(documents) == 1 and isinstance(documents[0], dict):
        if path.stat().st_size > MAX_FILE_BYTES:  # Baton's own model is written by a person: 1 MB at most
            raise SemanticModelError(f"{path} is larger than {MAX_FILE_BYTES // 1_000_000} MB")
        return model_from_dict(documents[0], default_name=path.stem)
    raise SemanticModelError(f"{path}: neither a Baton semantic model (entities, measures, metrics) "
                             "nor MetricFlow YAML (semantic_models, metrics)")


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
