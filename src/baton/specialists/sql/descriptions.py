"""Descriptions of tables and columns from beside the database: a sidecar.

Comments are where a warehouse keeps the meaning of its terse names (``introspection.py``
reads them). SQLite has no comments, and many databases leave most columns undescribed, so a
connection can be given descriptions from elsewhere — a YAML file a person writes, or the
workspace's semantic model (``baton.workspace.semantic``) — and they fill what the database
does not say (a database's own comment wins)::

    tables:
      orders:
        description: One row per order placed on the web shop
        columns:
          amount_cents: Order total in cents, tax included

Like a comment, a description is untrusted text: the prompt quotes and trims it
(``prompts.comments_line``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from baton.specialists.sql.schema import SchemaInfo

MAX_FILE_BYTES = 1_000_000
MAX_TEXT = 2_000

# table (lower case) -> (its description, {column (lower case): description})
Descriptions = Mapping[str, tuple[str, Mapping[str, str]]]


class DescriptionsError(ValueError):
    """A descriptions file that cannot be used, said in one line."""


def apply_descriptions(schema: SchemaInfo, descriptions: Descriptions) -> None:
    """Fill each table's and column's empty description from ``descriptions``."""
    for name, (text, columns) in descriptions.items():
        table = schema.table(name)
        if table is None:
            continue
        if not table.description and text:
            table.description = text[:MAX_TEXT]
        for column in table.columns:
            found = columns.get(column.name.lower())
            if found and not column.description:
                column.description = found[:MAX_TEXT]


def merged(first: Descriptions, second: Descriptions) -> dict[str, tuple[str, dict[str, str]]]:
    """``first`` with what ``second`` adds (``first`` wins where both describe a part)."""
    out = {name: (text, dict(columns)) for name, (text, columns) in first.items()}
    for name, (text, columns) in second.items():
        mine, known = out.get(name, ("", {}))
        out[name] = (mine or text, {**columns, **known})
    return out


def load_descriptions(path: str | Path) -> dict[str, tuple[str, dict[str, str]]]:
    """A descriptions YAML file (module docstring), or ``DescriptionsError``."""
    import yaml

    path = Path(path)
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise DescriptionsError(f"{path} is larger than {MAX_FILE_BYTES // 1_000_000} MB")
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DescriptionsError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise DescriptionsError(f"{path} is not valid YAML text: {str(exc).splitlines()[0][:200]}") from None
    tables = data.get("tables") if isinstance(data, Mapping) else None
    if not isinstance(tables, Mapping) or set(data) - {"tables"}:
        raise DescriptionsError(f"{path}: a mapping with one key, tables (table -> description and columns)")
    out: dict[str, tuple[str, dict[str, str]]] = {}
    for table, entry in tables.items():
        if not isinstance(entry, Mapping) or set(entry) - {"description", "columns"}:
            raise DescriptionsError(f"{path}: table {table!r} takes description and columns")
        text, columns = entry.get("description") or "", entry.get("columns") or {}
        if not isinstance(text, str) or not isinstance(columns, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in columns.items()):
            raise DescriptionsError(f"{path}: table {table!r}: description is text, columns map names to text")
        out[str(table).lower()] = (text, {k.lower(): v for k, v in columns.items()})
    return out


__all__ = ["Descriptions", "DescriptionsError", "apply_descriptions", "load_descriptions", "merged"]
