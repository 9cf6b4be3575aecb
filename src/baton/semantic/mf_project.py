"""Reading a dbt MetricFlow project as it is: its files, its documents, where each part stands.

``read_project(path)`` takes what a data team has:

- a **dbt project directory** (or any folder of YAML files): every ``.yml``/``.yaml`` under
  it, several documents per file, whose ``semantic_models:``, ``metrics:`` and
  ``saved_queries:`` lists are collected; other dbt YAML (``models:``, ``sources:``, tests)
  is not Baton's and is passed over. ``target/``, ``dbt_packages/``, ``logs/`` and hidden
  folders (``.git``) are skipped: they hold build output and other people's packages;
- MetricFlow's own **test-project format**: documents of one ``semantic_model:``,
  ``metric:``, ``saved_query:`` or ``project_configuration:`` each, tables named by
  ``node_relation``;
- a dbt **``semantic_manifest.json``** (``target/``), when passed explicitly;
- **one file** of either YAML form.

Every mapping read from YAML remembers its file and line (``where``), so an error or a
refusal says where to look. Entries are checked against the dbt-semantic-interfaces JSON
schema (the package MetricFlow itself validates with, pinned in ``pyproject.toml``): an
unknown key is an error — a typo such as ``filtr:`` must never drop a filter silently. The
few keys dbt's own YAML adds around MetricFlow's (``model: ref(...)``, ``config.enabled``,
``config.group``) are accepted there.

Limits, each refused with one line: 10 MB per file, 5,000 YAML files per project, and
a document that expands (through YAML aliases) to more than a million values.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baton.semantic.errors import SemanticModelError

MAX_FILE_BYTES = 10_000_000
MAX_FILES = 5_000
MAX_VALUES = 1_000_000
SKIPPED_DIRECTORIES = frozenset({"target", "dbt_packages", "logs", "node_modules", "__pycache__"})
_LISTS = {"semantic_models": "semantic_model", "metrics": "metric", "saved_queries": "saved_query"}
_SINGLE = {"semantic_model": "semantic_model", "metric": "metric", "saved_query": "saved_query",
           "project_configuration": "project_configuration"}
# Keys dbt-core's YAML takes (its Unparsed* classes) beyond MetricFlow's own schema; facts of dbt-core 1.10.
_DBT_KEYS = {"semantic_model": {"model"}, "metric": {"meta", "tags"}, "saved_query": {"tags"}, "project_configuration": set()}
_DBT_ENTITY_KEYS = frozenset({"description", "role"})
_DBT_CONFIG_KEYS = frozenset({"enabled", "group", "tags", "docs", "cache", "export_as", "schema", "database", "alias"})


class Located(dict):
    """A YAML mapping that remembers where it was written (``where``: ``file:line``)."""

    where: str = ""


def where(node: object, fallback: str = "") -> str:
    return getattr(node, "where", "") or fallback


@dataclass
class MetricFlowProject:
    """The MetricFlow entries of a project, each a mapping with its ``where``."""

    root: Path
    semantic_models: list[Mapping] = field(default_factory=list)
    metrics: list[Mapping] = field(default_factory=list)
    saved_queries: list[Mapping] = field(default_factory=list)
    project_configuration: list[Mapping] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)

    def add(self, kind: str, entry: object, place: str) -> None:
        if not isinstance(entry, Mapping):
            raise SemanticModelError(f"{place}: a {kind.replace('_', ' ')} is a mapping")
        if not isinstance(entry, Located):
            located = Located(entry)
            located.where = place
            entry = located
        {"semantic_model": self.semantic_models, "metric": self.metrics, "saved_query": self.saved_queries,
         "project_configuration": self.project_configuration}[kind].append(entry)

    @property
    def empty(self) -> bool:
        return not (self.semantic_models or self.metrics)


# --- YAML with locations --------------------------------------------------------------------

def _loader(path: Path):
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class LocatingLoader(base):  # type: ignore[misc,valid-type]
        """yaml's safe loader whose mappings carry ``file:line``."""

    def construct_mapping(loader, node):
        data = Located()
        data.where = f"{path}:{node.start_mark.line + 1}"
        yield data
        data.update(loader.construct_mapping(node, deep=True))

    LocatingLoader.add_constructor("tag:yaml.org,2002:map", construct_mapping)
    return LocatingLoader


def _bounded(document: object, place: str) -> None:
    """Refuse a document that expands past ``MAX_VALUES`` (aliases of aliases: a YAML bomb)."""
    from baton.files import within_values

    if not within_values(document, MAX_VALUES):
        raise SemanticModelError(f"{place}: the document expands to more than {MAX_VALUES:,} values (YAML aliases?)")


def read_text(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    """A model file's text, refused with one line when it is missing, too large or not UTF-8."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise SemanticModelError(f"cannot read {path}: {exc.strerror or exc}") from None
    if size > limit:
        raise SemanticModelError(f"{path}: {size:,} bytes is larger than the limit of {limit // 1_000_000} MB per file")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SemanticModelError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise SemanticModelError(f"cannot read {path}: {exc.strerror or exc}") from None


def yaml_documents(path: Path) -> list[object]:
    """Every document of a YAML file, mappings located (module docstring)."""
    import yaml

    text = read_text(path)
    try:
        documents = list(yaml.load_all(text, Loader=_loader(path)))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise SemanticModelError(f"{path}{line}: not valid YAML ({exc.problem or exc.context})") from None
    except yaml.YAMLError as exc:
        raise SemanticModelError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    for document in documents:
        _bounded(document, str(path))
    return documents


# --- the project -----------------------------------------------------------------------------

def is_metricflow(document: object) -> bool:
    """Whether a YAML document holds MetricFlow entries (rather than Baton's own model)."""
    if not isinstance(document, Mapping) or "entities" in document:  # Baton's own model lists entities at the top
        return False
    return any(key in document for key in (*_LISTS, *_SINGLE))


def collect_documents(project: MetricFlowProject, documents: list[object], path: Path) -> None:
    for number, document in enumerate(documents, 1):
        if not isinstance(document, Mapping):
            continue
        place = where(document, f"{path} (document {number})")
        for key, kind in _LISTS.items():
            if key not in document:
                continue
            entries = document[key]
            if entries is None:
                continue
            if not isinstance(entries, list):
                raise SemanticModelError(f"{place}: {key} is a list")
            for entry in entries:
                project.add(kind, entry, place)
        for key, kind in _SINGLE.items():
            if key in document:
                project.add(kind, document[key], place)


def _yaml_files(root: Path) -> Iterator[Path]:
    for directory, folders, files in _walk(root):
        folders[:] = sorted(f for f in folders if f not in SKIPPED_DIRECTORIES and not f.startswith("."))
        for name in sorted(files):
            if name.endswith((".yml", ".yaml")) and not name.startswith("."):
                yield Path(directory) / name


def _walk(root: Path):
    import os

    return os.walk(root, onerror=None, followlinks=False)


def read_project(path: str | Path, documents: list[object] | None = None) -> MetricFlowProject:
    """The MetricFlow entries of a directory, a YAML file (``documents``: its documents, when
    the caller has read them already) or a ``semantic_manifest.json``."""
    root = Path(path)
    project = MetricFlowProject(root)
    if root.is_dir():
        count = 0
        for file in _yaml_files(root):
            count += 1
            if count > MAX_FILES:
                raise SemanticModelError(f"{root}: more than {MAX_FILES:,} YAML files (is this the dbt project's folder?)")
            documents = yaml_documents(file)
            before = len(project.semantic_models) + len(project.metrics) + len(project.saved_queries)
            collect_documents(project, documents, file)
            if len(project.semantic_models) + len(project.metrics) + len(project.saved_queries) > before:
                project.files.append(file)
        if project.empty:
            raise SemanticModelError(f"{root}: no YAML file under it defines semantic_models or metrics")
    elif root.suffix.lower() == ".json":
        _read_manifest(project, root)
    else:
        collect_documents(project, documents if documents is not None else yaml_documents(root), root)
        project.files.append(root)
        if project.empty:
            raise SemanticModelError(f"{root}: defines no semantic_models or metrics")
    check_schema(project)
    return project


# --- dbt's semantic_manifest.json ------------------------------------------------------------

def _read_manifest(project: MetricFlowProject, path: Path) -> None:
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise SemanticModelError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, Mapping) or "semantic_models" not in data:
        raise SemanticModelError(f"{path}: not a semantic manifest (no semantic_models)")
    _bounded(data, str(path))
    for key, kind in _LISTS.items():
        entries = data.get(key) or []
        if not isinstance(entries, list):
            raise SemanticModelError(f"{path}: {key} is a list")
        for i, entry in enumerate(entries):
            try:
                project.add(kind, _from_manifest(entry), f"{path}: {key}[{i}]")
            except SemanticModelError as exc:
                raise SemanticModelError(f"{path}: {key}[{i}]: {exc}") from None
    if isinstance(data.get("project_configuration"), Mapping):
        project.add("project_configuration", data["project_configuration"], f"{path}: project_configuration")
    project.files.append(path)
    if project.empty:
        raise SemanticModelError(f"{path}: defines no semantic_models or metrics")


def _from_manifest(value: Any) -> Any:
    """A manifest entry in the YAML's shape: unset fields (null, false, empty) dropped, and
    ``{where_filters: [{where_sql_template: ...}]}`` filters as their templates."""
    if isinstance(value, Mapping):
        if "where_filters" in value:
            filters = value.get("where_filters") or []
            if not isinstance(filters, list) or not all(isinstance(f, Mapping) for f in filters):
                raise SemanticModelError("a filter's where_filters is a list of {where_sql_template: ...}")
            return [str(f.get("where_sql_template") or "") for f in filters]
        out = {k: _from_manifest(v) for k, v in value.items() if v not in (None, False, [], {})}
        return {k: v for k, v in out.items() if v not in (None, [], {})}
    if isinstance(value, list):
        return [_from_manifest(v) for v in value]
    return value


# --- the schema --------------------------------------------------------------------------------

def _validators() -> dict[str, Any]:
    from dbt_semantic_interfaces.parsing import schemas

    return {"semantic_model": schemas.semantic_model_validator, "metric": schemas.metric_validator,
            "saved_query": schemas.saved_query_validator, "project_configuration": schemas.project_configuration_validator}


def _without_dbt_keys(entry: Mapping, kind: str) -> dict:
    """The entry as MetricFlow's schema sees it: dbt's own wrapping keys set aside."""
    out = {k: v for k, v in entry.items() if k not in _DBT_KEYS[kind]}
    if kind == "semantic_model" and "node_relation" not in out and "model" in entry:
        out["node_relation"] = {"alias": "x", "schema_name": "x"}
    config = out.get("config")
    if isinstance(config, Mapping):
        out["config"] = {k: v for k, v in config.items() if k not in _DBT_CONFIG_KEYS}
        if kind == "saved_query":  # MetricFlow's schema has no config here; dbt's has only its own keys
            unknown = sorted(set(out.pop("config")) - {"meta"})
            if unknown:
                raise SemanticModelError(f"{where(entry)}: saved query {entry.get('name')!r}: unknown config key(s) "
                                         f"{', '.join(map(str, unknown))}")
    if kind == "semantic_model" and isinstance(out.get("entities"), list):
        out["entities"] = [{k: v for k, v in e.items() if k not in _DBT_ENTITY_KEYS} if isinstance(e, Mapping) else e
                           for e in out["entities"]]
    params = out.get("type_params")
    if kind == "metric" and isinstance(params, Mapping) and isinstance(params.get("metrics"), list):
        # dbt takes a derived metric's input as its bare name (``- orders``); MetricFlow's schema only as {name: ...}
        out["type_params"] = {**params, "metrics": [{"name": m} if isinstance(m, str) else m for m in params["metrics"]]}
    return out


def _deepest(entry: Mapping, path: list) -> str:
    """The location of the innermost located mapping along an error's path."""
    found, node = where(entry), entry
    for step in path:
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            break
        found = where(node, found)
    return found


def check_schema(project: MetricFlowProject) -> None:
    """``SemanticModelError`` for the first entry MetricFlow's own schema rejects."""
    if project.root.suffix.lower() == ".json":
        return  # generated by dbt from validated YAML; its shape is the manifest's, not the YAML's
    validators = _validators()
    for kind, entries in (("semantic_model", project.semantic_models), ("metric", project.metrics),
                          ("saved_query", project.saved_queries), ("project_configuration", project.project_configuration)):
        for entry in entries:
            if kind == "semantic_model" and "model" not in entry and "node_relation" not in entry:
                raise SemanticModelError(f"{where(entry)}: semantic model {entry.get('name')!r} names no table "
                                         "(model: ref('...') or node_relation)")
            errors = sorted(validators[kind].iter_errors(_without_dbt_keys(entry, kind)), key=lambda e: list(e.path))
            if errors:
                error = min(errors, key=lambda e: len(list(e.path)))
                path = list(error.path)
                at = ".".join(str(p) for p in path)
                name = entry.get("name") if isinstance(entry.get("name"), str) else ""
                subject = f"{kind.replace('_', ' ')} {name!r}" if name else kind.replace("_", " ")
                raise SemanticModelError(f"{_deepest(entry, path)}: {subject}{' at ' + at if at else ''}: "
                                         f"{error.message[:300]}")


__all__ = ["Located", "MAX_FILES", "collect_documents", "MAX_FILE_BYTES", "MetricFlowProject", "is_metricflow", "read_project", "read_text", "where",
           "yaml_documents"]
