"""Which engine functions have side effects: the ground truth's catalog, not the checker's.

``bench/sql_false_refusals.py`` must judge "is this statement a read?" independently of the
safety check it measures (``baton.specialists.sql.safety`` is never imported here). A SELECT
stops being a read when it calls a function with side effects, so this module answers that
for PostgreSQL and DuckDB from each engine's own catalog plus a short list of name families:

- The catalog says which names are built-in functions and which of them are volatile
  (PostgreSQL: ``pg_proc.provolatile = 'v'`` in ``pg_catalog``; DuckDB: ``duckdb_functions()``
  with ``has_side_effects``). Volatility is necessary, not sufficient: ``random()`` and
  ``clock_timestamp()`` are volatile and only read.
- The families below decide which functions really change something, by what they do:
  writes (index pages, catalogs, planner statistics), large objects, server files, signals
  and server control, locks, sequences, settings, the PRNG seed, notifications,
  replication, statistics resets, sleeping. Every other volatile catalog function must match
  a *read* family; one that matches neither is reported by ``unclassified()`` and treated as
  a side effect (fail closed), so a newer server's new function cannot slip into "reads"
  unseen.

Decisions:
- Families apply by name even to functions the local server does not have: the corpus is
  PostgreSQL 18's and the local server may be older, so ``pg_restore_relation_stats`` (18)
  is a write even where ``pg_proc`` has never heard of it.
- Two stable functions are side effects: ``txid_current`` / ``pg_current_xact_id`` assign a
  transaction id (the xid counter advances and the transaction must write a commit record).
- Reading a server file or directory (``pg_read_file``, ``pg_ls_dir``, DuckDB's
  ``read_csv``) counts as a side effect here: it reaches outside the database, which no
  read-only query of a workspace should do.
- Functions that run SQL given as text (``query_to_xml``, ``ts_stat``...) are not judged by
  name: the classifier reads the text they are given (``SQL_TEXT_ARGUMENT``).
- Trigger, access-method and language handler functions cannot be called from a query;
  they are listed as reads so that the catalog is fully classified.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# (what it changes, names): a full, case-insensitive match on the function's name.
POSTGRES_SIDE_EFFECTS: tuple[tuple[str, str], ...] = (
    ("writes index pages", r"brin_summarize_new_values|brin_summarize_range|brin_desummarize_range"
                           r"|gin_clean_pending_list"),
    ("writes catalogs", r"pg_import_system_collations|pg_extension_config_dump|binary_upgrade_\w+|pg_nextoid"
                        r"|pg_stop_making_pinned_objects"),
    ("writes planner statistics", r"pg_(restore|clear|set)_(relation|attribute|extended)_stats"),
    ("large objects", r"lo_(creat|create|export|import|from_bytea|put|unlink|truncate|truncate64|open|close"
                      r"|lseek|lseek64)|lowrite|loread"),
    ("server files", r"pg_read_file|pg_read_file_old|pg_read_binary_file|pg_ls_\w*dir|pg_stat_file"
                     r"|pg_current_logfile|pg_hba_file_rules|pg_ident_file_mappings|pg_show_all_file_settings"
                     r"|pg_export_snapshot"),
    ("signals and server control", r"pg_cancel_backend|pg_terminate_backend|pg_reload_conf|pg_rotate_logfile(_old)?"
                                   r"|pg_log_backend_memory_contexts|pg_promote|pg_wal_replay_(pause|resume)"
                                   r"|pg_switch_wal|pg_create_restore_point|pg_backup_(start|stop)"
                                   r"|pg_(start|stop)_backup|pg_log_standby_snapshot|pg_checkpoint"),
    ("advisory locks", r"pg_(try_)?advisory_\w+"),
    ("sequences", r"nextval|setval"),
    ("transaction id assignment", r"txid_current|pg_current_xact_id"),
    ("settings", r"set_config"),
    ("PRNG seed", r"setseed"),
    ("notifications", r"pg_notify"),
    ("replication", r"pg_(create|drop|copy|alter)_\w*replication_slot|pg_replication_slot_advance"
                    r"|pg_logical_slot_get_\w+|pg_logical_emit_message|pg_sync_replication_slots"
                    r"|pg_replication_origin_(create|drop|advance|session_setup|session_reset|xact_setup"
                    r"|xact_reset)"),
    ("statistics resets", r"pg_stat_reset\w*|pg_stat_clear_snapshot|pg_stat_force_next_flush"),
    ("sleeps", r"pg_sleep(_for|_until)?"),
)

# Volatile in pg_catalog, yet only read (or cannot be called from a query at all).
POSTGRES_VOLATILE_READS = (
    r"random|random_normal|gen_random_uuid|uuidv4|uuidv7|clock_timestamp|timeofday|current_query"
    r"|currval|lastval|pg_sequence_last_value|pg_\w*_size|pg_control_\w+|pg_current_wal_\w*lsn|pg_last_\w+"
    r"|pg_is_in_recovery|pg_is_wal_replay_paused|pg_get_wal_\w+|pg_jit_available|pg_stat_get_\w+"
    r"|pg_stat_have_stats|pg_lock_status|pg_blocking_pids|pg_safe_snapshot_blocking_pids"
    r"|pg_isolation_test_session_is_blocked|pg_get_multixact_members|pg_get_shmem_allocations"
    r"|pg_get_backend_memory_contexts|pg_prepared_xact|pg_notification_queue_usage|pg_partition_tree"
    r"|pg_partition_ancestors|pg_(database_)?collation_actual_version|pg_xact_commit_timestamp\w*"
    r"|pg_last_committed_xact|pg_xact_status|txid_status|currtid2|pg_logical_slot_peek_\w+"
    r"|pg_replication_origin_(progress|session_is_setup|session_progress)|pg_show_replication_origin_status"
    r"|lo_get|lo_tell|lo_tell64|cursor_to_xml|cursor_to_xmlschema|amvalidate|dsnowball_\w+"
    # handlers and trigger functions: "can only be called as triggers" / not callable in SQL
    r"|\w+handler|plpgsql_\w+|ri_fkey_\w+|suppress_redundant_updates_trigger|tsvector_update_trigger\w*"
    r"|unique_key_recheck|bernoulli|system"
)

# Functions that run the SQL text they are given, and which argument holds it.
SQL_TEXT_ARGUMENT = {"query_to_xml": 0, "query_to_xmlschema": 0, "query_to_xml_and_xmlschema": 0,
                     "ts_stat": 0, "ts_rewrite": 1}

DUCKDB_SIDE_EFFECTS: tuple[tuple[str, str], ...] = (
    ("sequences", r"nextval|setval"),
    ("PRNG seed", r"setseed"),
    ("sleeps", r"sleep_ms"),
    ("writes the log", r"write_log|truncate_duckdb_logs|(enable|disable)_(logging|profiling)"),
    ("writes the database", r"checkpoint|force_checkpoint"),
    ("changes the instance", r"(create|destroy|register|deregister)_external_resource\w*"
                             r"|(add|remove)_grammar_extension|add_parquet_key"),
    ("files", r"read_\w+|parquet_(scan|schema|\w*metadata|bloom_probe|page_index)|glob|sniff_csv"),
    ("runs SQL given as text", r"query|query_table|json_execute_serialized_sql"),
)
DUCKDB_VOLATILE_READS = (r"random|uuid|uuidv4|uuidv7|gen_random_uuid|current_connection_id|current_query"
                         r"|current_query_id|current_transaction_id|currval|error|stats|vector_type")


def _family(name: str, families: tuple[tuple[str, str], ...]) -> str | None:
    for what, pattern in families:
        if re.fullmatch(pattern, name, re.IGNORECASE):
            return what
    return None


@dataclass(frozen=True)
class FunctionCatalog:
    """An engine's built-in functions: ``names`` (all), ``volatile`` (may change something).

    ``families_only(engine)`` knows no names: every name is judged by the families alone,
    which is what the classifier falls back to for functions a server does not have."""

    engine: str
    version: str = ""
    names: frozenset[str] = field(default_factory=frozenset)
    volatile: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def families_only(cls, engine: str) -> FunctionCatalog:
        return cls(engine)

    @classmethod
    def from_postgres(cls, url: str) -> FunctionCatalog:
        """Read ``pg_proc`` (``pg_catalog`` only) on the server at ``url`` (psycopg URL)."""
        import psycopg

        with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), connect_timeout=10) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
            rows = conn.execute("SELECT DISTINCT p.proname, p.provolatile = 'v' FROM pg_proc p "
                                "JOIN pg_namespace n ON n.oid = p.pronamespace "
                                "WHERE n.nspname = 'pg_catalog'").fetchall()
        return cls("postgres", f"PostgreSQL {version}", frozenset(name for name, _ in rows),
                   frozenset(name for name, volatile in rows if volatile))

    @classmethod
    def from_duckdb(cls) -> FunctionCatalog:
        """Read ``duckdb_functions()`` of an in-memory DuckDB (the installed version)."""
        import duckdb

        with duckdb.connect() as conn:
            rows = conn.execute("SELECT DISTINCT function_name, coalesce(has_side_effects, false) "
                                "OR stability = 'VOLATILE' FROM duckdb_functions()").fetchall()
        return cls("duckdb", f"DuckDB {duckdb.__version__}", frozenset(name for name, _ in rows),
                   frozenset(name for name, volatile in rows if volatile))

    def _families(self) -> tuple[tuple[tuple[str, str], ...], str]:
        if self.engine == "postgres":
            return POSTGRES_SIDE_EFFECTS, POSTGRES_VOLATILE_READS
        return DUCKDB_SIDE_EFFECTS, DUCKDB_VOLATILE_READS

    def side_effect(self, name: str) -> str | None:
        """What calling the built-in ``name`` changes, or None when it only reads."""
        families, reads = self._families()
        what = _family(name, families)
        if what is None and name in self.volatile and not re.fullmatch(reads, name, re.IGNORECASE):
            return "volatile function no family classifies (counted as a side effect)"
        return what

    def is_builtin(self, name: str) -> bool:
        return name in self.names or _family(name, self._families()[0]) is not None

    def unclassified(self) -> list[str]:
        """Volatile catalog functions that match neither a side-effect nor a read family."""
        families, reads = self._families()
        return sorted(n for n in self.volatile if n not in SQL_TEXT_ARGUMENT
                      and _family(n, families) is None and not re.fullmatch(reads, n, re.IGNORECASE))

    def side_effecting(self) -> list[str]:
        """The catalog's functions that the families call side-effecting, sorted."""
        families, _ = self._families()
        return sorted(n for n in self.names if _family(n, families) is not None)
