"""Tables of the journal and its projection, and the triggers that make the journal
append-only in the database itself.

- ``events``: one row per event. ``seq`` is the global sequence; ``(workspace, position)``
  orders a workspace's hash chain (unique, so the chain cannot fork); ``(workspace,
  stream, version)`` is the optimistic-concurrency key. UPDATE, DELETE (and TRUNCATE on
  PostgreSQL) are refused by triggers.
- ``payloads``: event bodies, kept apart so erasure can delete content while the chain,
  which covers a salted hash of each payload, still verifies. UPDATE is refused; DELETE is
  refused unless the payload's stream already holds a ``record.forgotten`` tombstone.
- ``records``: the projection (every register readers use). Rebuildable from the two
  tables above; indexed for the gate's candidate lookup (workspace, kind, entity,
  attribute), for bundles (workspace, kind, is_active, connection_id) and for transfer and
  promotion (workspace, lesson_hash).

``prefix`` (and ``schema`` on PostgreSQL) let several stores share one database.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import BigInteger, Boolean, Column, Float, Index, Integer, MetaData, String, Table, Text, UniqueConstraint, text
from sqlalchemy.engine import Connection

FORGOTTEN = "record.forgotten"
_SEQ = BigInteger().with_variant(Integer, "sqlite")  # SQLite autoincrements only INTEGER PRIMARY KEY


@dataclass(frozen=True)
class Tables:
    metadata: MetaData
    events: Table
    payloads: Table
    records: Table
    prefix: str
    schema: str | None

    def qualified(self, table: Table) -> str:
        return f'"{self.schema}"."{table.name}"' if self.schema else f'"{table.name}"'


def build_tables(prefix: str = "baton_mem_", schema: str | None = None) -> Tables:
    md = MetaData(schema=schema)
    events = Table(
        f"{prefix}events", md,
        Column("seq", _SEQ, primary_key=True, autoincrement=True),
        Column("event_id", String(32), nullable=False, unique=True),
        Column("workspace", String(200), nullable=False),
        Column("position", BigInteger, nullable=False),
        Column("stream", String(200), nullable=False),
        Column("version", Integer, nullable=False),
        Column("type", String(64), nullable=False),
        Column("payload_hash", String(64), nullable=False),
        Column("provenance", Text, nullable=False),
        Column("recorded_at", Float, nullable=False),
        Column("prev_hash", String(64), nullable=False),
        Column("hash", String(64), nullable=False),
        UniqueConstraint("workspace", "position", name=f"{prefix}uq_chain"),
        UniqueConstraint("workspace", "stream", "version", name=f"{prefix}uq_stream_version"),
        Index(f"{prefix}ix_events_type", "workspace", "type"),
    )
    payloads = Table(
        f"{prefix}payloads", md,
        Column("event_id", String(32), primary_key=True),
        Column("workspace", String(200), nullable=False),
        Column("stream", String(200), nullable=False),
        Column("salt", String(32), nullable=False),
        Column("body", Text, nullable=False),
        Index(f"{prefix}ix_payloads_stream", "workspace", "stream"),
    )
    records = Table(
        f"{prefix}records", md,
        Column("id", String(32), primary_key=True),
        Column("workspace", String(200), nullable=False),
        Column("kind", String(16), nullable=False),
        Column("status", String(16), nullable=False),
        Column("is_active", Boolean, nullable=False),
        Column("category", String(64), nullable=False),
        Column("connection_id", String(200)),
        Column("entity", String(300), nullable=False),
        Column("attribute", String(300), nullable=False),
        Column("scope", String(300), nullable=False),
        Column("value", Text),
        Column("text", Text, nullable=False),
        Column("lesson_hash", String(64), nullable=False),
        Column("confidence", Float, nullable=False),
        Column("base_confidence", Float, nullable=False),
        Column("anchor_at", Float, nullable=False),
        Column("observed_at", Float, nullable=False),
        Column("volatile", Boolean, nullable=False),
        Column("freshness_s", Float),
        Column("verified", Boolean, nullable=False),
        Column("stale", Boolean, nullable=False),
        Column("superseded_by", String(32)),
        Column("supersedes", Text, nullable=False),
        Column("provenance", Text, nullable=False),
        Column("times_applied", Integer, nullable=False),
        Column("data", Text, nullable=False),
        Column("version", Integer, nullable=False),
        Column("created_at", Float, nullable=False),
        Column("updated_at", Float, nullable=False),
        Column("updated_seq", BigInteger, nullable=False),
        Index(f"{prefix}ix_rec_subject", "workspace", "kind", "entity", "attribute"),
        Index(f"{prefix}ix_rec_active", "workspace", "kind", "is_active", "connection_id", "confidence"),
        Index(f"{prefix}ix_rec_lesson", "workspace", "lesson_hash"),
        Index(f"{prefix}ix_rec_anchor", "workspace", "is_active", "anchor_at"),
    )
    return Tables(md, events, payloads, records, prefix, schema)


def install(conn: Connection, tables: Tables) -> None:
    """Create the tables (if missing) and the append-only triggers. On PostgreSQL this takes
    a transaction-scoped advisory lock first, so processes starting together against one
    database install once (concurrent ``CREATE`` of the same table or trigger fails)."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"), {"k": "baton-mem-install:" + tables.prefix})
    tables.metadata.create_all(conn)
    if conn.dialect.name == "sqlite":
        _sqlite_triggers(conn, tables)
    elif conn.dialect.name == "postgresql":
        _postgres_triggers(conn, tables)


def _sqlite_triggers(conn: Connection, t: Tables) -> None:
    ev, pl, p = t.events.name, t.payloads.name, t.prefix
    for op in ("UPDATE", "DELETE"):
        conn.exec_driver_sql(
            f'CREATE TRIGGER IF NOT EXISTS "{p}events_no_{op.lower()}" BEFORE {op} ON "{ev}" '
            f"BEGIN SELECT RAISE(ABORT, 'baton memory journal is append-only: {op} refused'); END")
    conn.exec_driver_sql(
        f'CREATE TRIGGER IF NOT EXISTS "{p}payloads_no_update" BEFORE UPDATE ON "{pl}" '
        f"BEGIN SELECT RAISE(ABORT, 'baton memory payloads are immutable: UPDATE refused'); END")
    conn.exec_driver_sql(
        f'CREATE TRIGGER IF NOT EXISTS "{p}payloads_delete_needs_tombstone" BEFORE DELETE ON "{pl}" '
        f'WHEN NOT EXISTS (SELECT 1 FROM "{ev}" e WHERE e.workspace = OLD.workspace AND e.stream = OLD.stream '
        f"AND e.type = '{FORGOTTEN}') "
        f"BEGIN SELECT RAISE(ABORT, 'payload deletion is allowed only after a forget tombstone'); END")


def _postgres_triggers(conn: Connection, t: Tables) -> None:
    ev, pl, p = t.qualified(t.events), t.qualified(t.payloads), t.prefix
    fn = (lambda name: f'"{t.schema}"."{p}{name}"') if t.schema else (lambda name: f'"{p}{name}"')
    conn.execute(text(
        f"CREATE OR REPLACE FUNCTION {fn('refuse')}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        f"RAISE EXCEPTION 'baton memory journal is append-only: % refused on %', TG_OP, TG_TABLE_NAME; END $$"))
    conn.execute(text(
        f"CREATE OR REPLACE FUNCTION {fn('payload_delete')}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        f"IF NOT EXISTS (SELECT 1 FROM {ev} e WHERE e.workspace = OLD.workspace AND e.stream = OLD.stream "
        f"AND e.type = '{FORGOTTEN}') THEN "
        f"RAISE EXCEPTION 'payload deletion is allowed only after a forget tombstone'; END IF; RETURN OLD; END $$"))
    statements = [
        (f"{p}events_no_change", f"BEFORE UPDATE OR DELETE ON {ev} FOR EACH ROW EXECUTE FUNCTION {fn('refuse')}()"),
        (f"{p}events_no_truncate", f"BEFORE TRUNCATE ON {ev} FOR EACH STATEMENT EXECUTE FUNCTION {fn('refuse')}()"),
        (f"{p}payloads_no_update", f"BEFORE UPDATE ON {pl} FOR EACH ROW EXECUTE FUNCTION {fn('refuse')}()"),
        (f"{p}payloads_no_truncate", f"BEFORE TRUNCATE ON {pl} FOR EACH STATEMENT EXECUTE FUNCTION {fn('refuse')}()"),
        (f"{p}payloads_delete", f"BEFORE DELETE ON {pl} FOR EACH ROW EXECUTE FUNCTION {fn('payload_delete')}()"),
    ]
    for name, body in statements:
        conn.execute(text(f'CREATE OR REPLACE TRIGGER "{name}" {body}'))
