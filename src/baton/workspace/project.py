"""``baton.yaml``: a project file declaring one or more workspaces.

.. code-block:: yaml

    state: ${BATON_STATE_URL:-}        # defaults every workspace shares (state, events, model)
    model: openai:gpt-4o-mini
    workspaces:
      sales:
        database:
          url: postgresql+psycopg://reader:${SALES_DB_PASSWORD}@db.internal/sales
          freshness: {column: etl_runs.loaded_at, max_age: 12h}
        documents: docs/sales          # a folder, or {folder, name, description, examples}
        semantic: models/sales         # Baton YAML, or a dbt MetricFlow project
        mcp:
          - {name: tickets, server: "tickets-mcp --stdio", allow: [search_tickets]}
      demo:
        demo: true

Secrets only by reference: ``${NAME}`` is replaced by the environment variable ``NAME``
(a missing one is an error naming it; ``${NAME:-default}`` falls back, and an empty
``state``, ``events`` or ``model`` is left unset), and a password written into a URL in the file is
refused: the file can be committed. Relative paths are read from the file's folder.
Every error is a ``ConfigurationError`` that names the file and the field. The file must be a
regular file of at most 1 MB whose YAML expands to at most 100,000 values (no alias bombs).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from baton.errors import ConfigurationError
from baton.workspace.spec import WorkspaceSpec, spec_error

PROJECT_FILE = "baton.yaml"
MAX_FILE_BYTES = 1_000_000
MAX_VALUES = 100_000
SHARED = ("state", "events", "model")  # top-level defaults a workspace may override
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_INLINE_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/@:\s]*:([^@/\s]+)@")
_PATHS = (("documents",), ("documents", "folder"), ("semantic",), ("directory",))


def load_project(path: str | Path, env: Mapping[str, str]) -> dict[str, WorkspaceSpec]:
    """The workspaces ``path`` declares, by name, in the file's order (module docstring)."""
    import yaml

    from baton.files import FileRefusedError, decode_utf8, read_named_file, within_values

    path = Path(path)
    if not path.exists():
        raise ConfigurationError(f"{path}: no such file (write one with `baton init`)")
    try:  # a regular file, capped, never blocking: not /dev/zero, not a FIFO
        text = decode_utf8(read_named_file(path, max_bytes=MAX_FILE_BYTES)[0], str(path))
        raw = yaml.load(text, Loader=_unique_keys_loader())  # a SafeLoader: it builds no objects
    except FileRefusedError as exc:
        raise ConfigurationError(str(exc)) from None
    except yaml.YAMLError as exc:
        raise ConfigurationError(f"{path}: cannot be read as YAML ({' '.join(str(exc).split())[:300]})") from None
    if not within_values(raw, MAX_VALUES):  # read before any walk: aliases of aliases expand on every walk
        raise ConfigurationError(f"{path}: the file expands to more than {MAX_VALUES:,} values (YAML aliases?)")
    if not isinstance(raw, dict) or not isinstance(raw.get("workspaces"), dict) or not raw["workspaces"]:
        raise ConfigurationError(f"{path}: expected a mapping with `workspaces:` naming at least one workspace")
    unknown = set(raw) - {"workspaces", *SHARED}
    if unknown:
        raise ConfigurationError(f"{path}: unknown top-level field(s) {', '.join(sorted(map(str, unknown)))}")
    _refuse_inline_secrets(raw, path)
    shared = {key: raw[key] for key in SHARED if raw.get(key) is not None}
    specs: dict[str, WorkspaceSpec] = {}
    for name, body in raw["workspaces"].items():
        where = f"{path}: workspace {name!r}"
        if not isinstance(body, dict):
            raise ConfigurationError(f"{where}: expected a mapping of fields")
        data = _resolved({**shared, **body, "name": str(name)}, env, where)
        data.update({key: None for key in SHARED if data.get(key) == ""})  # ${NAME:-}: not set
        _relative_to(data, path.parent)
        try:
            specs[str(name)] = WorkspaceSpec.model_validate(_without_python_only(data, where))
        except Exception as exc:
            raise spec_error(where, exc) from None
    return specs


def _unique_keys_loader() -> Any:
    """yaml's safe loader refusing a key written twice in one mapping (yaml keeps the last one:
    a workspace declared twice would be half of one, silently)."""
    from collections import Counter

    import yaml

    class UniqueKeys(yaml.SafeLoader):
        pass

    def mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
        counts = Counter(str(loader.construct_object(key, deep=True)) for key, _ in node.value)
        twice = sorted(key for key, n in counts.items() if n > 1)
        if twice:
            raise yaml.constructor.ConstructorError(None, None, f"{', '.join(twice)} written twice", node.start_mark)
        return loader.construct_mapping(node, deep=True)

    UniqueKeys.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    return UniqueKeys


def choose(specs: Mapping[str, WorkspaceSpec], name: str | None, path: str | Path) -> WorkspaceSpec:
    """The workspace ``name`` of a project (the only one when ``name`` is None)."""
    if name is None:
        if len(specs) == 1:
            return next(iter(specs.values()))
        raise ConfigurationError(f"{path} declares {len(specs)} workspaces ({', '.join(specs)}): name one with --workspace")
    if name not in specs:
        raise ConfigurationError(f"{path} declares no workspace {name!r} (it has: {', '.join(specs)})")
    return specs[name]


def _resolved(value: Any, env: Mapping[str, str], where: str) -> Any:
    """``value`` with every ``${NAME}`` replaced by the environment's ``NAME``."""
    if isinstance(value, dict):
        return {k: _resolved(v, env, where) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolved(v, env, where) for v in value]
    if isinstance(value, str):
        def variable(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in env:
                return env[name]
            if default is not None:
                return default
            raise ConfigurationError(f"{where}: the environment variable {name} is not set (or write ${{{name}:-default}})")

        return _REFERENCE.sub(variable, value)
    return value


def _refuse_inline_secrets(value: Any, path: Path, field: str = "") -> None:
    """A URL in the file whose password is written out (not a ``${NAME}`` reference)."""
    if isinstance(value, dict):
        for key, item in value.items():
            _refuse_inline_secrets(item, path, f"{field}.{key}" if field else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _refuse_inline_secrets(item, path, f"{field}[{index}]")
    elif isinstance(value, str):
        match = _INLINE_PASSWORD.match(value.strip())
        reference = _REFERENCE.fullmatch(match.group(1)) if match else None
        if match and (reference is None or reference.group(2) is not None):  # ${NAME:-default}: the default is inline
            raise ConfigurationError(f"{path}: {field} writes a password into the file: "
                                     "put it in an environment variable and write ${NAME} in its place")


def _relative_to(data: dict[str, Any], folder: Path) -> None:
    for keys in _PATHS:
        holder: Any = data
        for key in keys[:-1]:
            holder = holder.get(key) if isinstance(holder, dict) else None
        if isinstance(holder, dict) and isinstance(holder.get(keys[-1]), str):
            given = Path(holder[keys[-1]]).expanduser()
            holder[keys[-1]] = str(given if given.is_absolute() else folder / given)
    if isinstance(data.get("documents"), str):
        data["documents"] = {"folder": data["documents"]}


def _without_python_only(data: dict[str, Any], where: str) -> dict[str, Any]:
    from baton.workspace.spec import PYTHON_ONLY

    given = PYTHON_ONLY & set(data)
    if given:
        raise ConfigurationError(f"{where}: {', '.join(sorted(given))} cannot be given in a file")
    return data


__all__ = ["PROJECT_FILE", "choose", "load_project"]
