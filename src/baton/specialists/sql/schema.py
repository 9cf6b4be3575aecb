"""The schema model shared by introspection, pre-validation and the prompts.

Names are kept as the engine reports them; lookups are case-insensitive because that is how
every supported engine resolves unquoted identifiers closely enough for validation.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class ColumnInfo:
    name: str
    type: str = ""
    nullable: bool = True
    primary_key: bool = False
    description: str = ""  # the database's comment on it (COMMENT ON / MySQL COMMENT), or a sidecar's: untrusted text


@dataclass(slots=True)
class ForeignKey:
    columns: list[str]
    ref_table: str
    ref_columns: list[str]


@dataclass(slots=True)
class TableInfo:
    name: str
    columns: list[ColumnInfo] = field(default_factory=list)
    schema: str | None = None
    foreign_keys: list[ForeignKey] = field(default_factory=list)
    row_estimate: int | None = None
    description: str = ""  # the database's comment on the table, or a sidecar's: untrusted text

    def column(self, name: str) -> ColumnInfo | None:
        lowered = name.lower()
        return next((c for c in self.columns if c.name.lower() == lowered), None)

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def to_dict(self) -> dict:
        """The table as the schema browser and MCP's schema resource show it (comments as data)."""
        return {"name": self.name, "schema": self.schema, "description": self.description,
                "columns": [{"name": c.name, "type": c.type, "nullable": c.nullable, "primary_key": c.primary_key,
                             "description": c.description} for c in self.columns],
                "foreign_keys": [{"columns": f.columns, "ref_table": f.ref_table, "ref_columns": f.ref_columns}
                                 for f in self.foreign_keys]}


@dataclass(slots=True)
class SchemaInfo:
    """Every table of one connection, keyed by lower-cased table name."""

    dialect: str  # sqlglot dialect name: sqlite | duckdb | postgres | mysql
    tables: dict[str, TableInfo] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)  # table -> catalogue version, where the engine tells (PostgreSQL)

    def add(self, table: TableInfo) -> None:
        self.tables[table.name.lower()] = table

    def table(self, name: str) -> TableInfo | None:
        return self.tables.get(name.lower())
