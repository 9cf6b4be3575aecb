"""Classify the side-effecting functions of PostgreSQL and DuckDB from their own catalogs.

The SQL safety check refuses functions with side effects by name. Lists written from memory
miss functions (``brin_summarize_new_values``, ``setseed``, ``lowrite`` once passed), so the
lists come from the engines: this script reads every *volatile* function PostgreSQL's
``pg_proc`` holds in ``pg_catalog`` and in every extension the server can install (created in a
scratch database that is dropped afterwards), plus the few stable functions that expose other
sessions or secrets (every ``pg_stat_get_backend_*``: even the pid/user ids list every session of
the server, issue 24), and every function DuckDB's ``duckdb_functions()`` lists as volatile, with
side effects, or as a table/pragma function. Each is given a verdict (``deny`` or ``allow``)
and a reason by the rules below, first match wins. A function no rule matches stops the
script: a new engine version forces a decision, it never slips through unclassified. The
output is committed as ``src/baton/specialists/sql/safety/data/{postgres,duckdb}.json`` and
``tests/test_sql_catalog_functions.py`` fails when the installed engine has a volatile
function the file does not classify.

    .venv/bin/python scripts/catalog_functions.py [--postgres-url postgresql://postgres@127.0.0.1/postgres]

Needs a superuser PostgreSQL URL (to create the scratch database and the extensions).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "src" / "baton" / "specialists" / "sql" / "safety" / "data"

FILES = "reads or writes files on the database server"
SQL_TEXT = "runs SQL given as text, out of the check's sight"
NAMED_TABLE = "reads a table named in a string, out of the relation check's sight"
ADMIN = "changes server state"
SIGNAL = "signals or inspects other sessions"
SECRETS = "exposes secrets or other sessions' activity"
LOCKS = "takes or releases locks that outlive the statement"
STALL = "stalls the server"
SEQUENCE = "writes a sequence"
SEED = "seeds the session's random generator (PostgreSQL: survives DISCARD ALL)"
INDEX = "writes index pages, which survive the transaction's rollback"
REPLICATION = "creates, drops or consumes replication state"
LARGE_OBJECT = "reads or writes large objects (server storage, files)"
INTERNAL = "internal support function (trigger, handler, validator): no business in a query"
UPGRADE = "writes the catalog (binary upgrade support)"
NETWORK = "reaches other servers over the network"
SETTINGS = "reads or changes server settings, some of which hold credentials"
STATS = "resets or changes statistics"
READ = "volatile, but only reads"
PATHS = "reveals paths of the database's files or of the server"

# (regex on the function name, verdict, reason): first match wins.
POSTGRES_RULES: list[tuple[str, str, str]] = [
    (r"RI_FKey_.*|.*_trigger(_column)?|unique_key_recheck|lo_manage|check_(primary|foreign)_key|autoinc|"
     r"insert_username|moddatetime|triggered_change_notification", "deny", INTERNAL),
    (r".*handler|bernoulli|system|system_rows|system_time|dsnowball_.*|amvalidate|.*_validator|"
     r"plpgsql_.*|dintdict_.*|dxsyn_.*|unaccent_(init|lexize)", "deny", INTERNAL),
    (r"binary_upgrade_.*|pg_extension_config_dump|pg_nextoid|pg_stop_making_pinned_objects|"
     r"pg_import_system_collations", "deny", UPGRADE),
    (r"brin_(de)?summarize.*|gin_clean_pending_list|bt_index_.*|gin_index_check|verify_heapam", "deny", INDEX),
    (r"clock_timestamp|timeofday|random|random_normal|gen_random_uuid|uuid_generate_.*|gen_random_bytes|"
     r"gen_salt|normal_rand|current_query|pg_jit_available|pg_is_in_recovery|currval|lastval|currtid2|"
     r"pg_collation_actual_version|pg_database_collation_actual_version|pg_control_.*|"
     r"pg_current_wal_.*lsn|pg_last_wal_.*|pg_last_xact_replay_timestamp|pg_get_wal_replay_pause_state|"
     r"pg_is_wal_replay_paused|pg_get_wal_resource_managers|pg_(database|indexes|relation|table|"
     r"tablespace|total_relation)_size|pg_get_multixact_members|pg_notification_queue_usage|"
     r"pg_partition_(ancestors|tree)|pg_sequence_last_value|pg_stat_get_xact_.*|pg_stat_have_stats|"
     r"pg_stat_get_recovery_prefetch|pg_xact_commit_timestamp.*|pg_xact_status|txid_status|"
     r"pg_last_committed_xact|pg_get_backend_memory_contexts|pg_get_shmem_allocations|"
     r"pgp_.*encrypt.*|crypt|encrypt_iv|encrypt|armor|dearmor|digest|hmac|pgp_.*|bt_metap|"
     r"pg_settings_get_flags|txid_current_if_assigned|pg_current_xact_id_if_assigned|"
     r"pg_stat_get_subscription(_stats)?|"
     r"bytea_size|pg_trgm.*|similarity.*|ssl_.*|int_agg_.*", "allow", READ),
    (r"nextval|setval", "deny", SEQUENCE),
    (r"setseed", "deny", SEED),
    (r"cursor_to_xml.*|query_to_xml.*|ts_stat|ts_rewrite|crosstab.*|connectby.*|xpath_table|xslt_process", "deny",
     SQL_TEXT),
    (r"(table|schema|database)_to_xml.*", "deny", NAMED_TABLE),
    (r"lo_.*|loread|lowrite|lo_import|lo_export", "deny", LARGE_OBJECT),
    (r"pg_advisory.*|pg_try_advisory.*", "deny", LOCKS),
    (r"pg_backup_.*|pg_start_backup|pg_stop_backup|pg_create_restore_point|pg_switch_wal|pg_promote|"
     r"pg_wal_replay_.*|pg_export_snapshot|pg_reload_conf|pg_rotate_logfile.*|pg_log_backend_memory_contexts|"
     r"pg_stat_clear_snapshot|pg_stat_force_next_flush|pg_prewarm|autoprewarm_.*|pg_truncate_visibility_map|"
     r"pg_surgery.*|heap_force_.*|pg_wal_.*", "deny", ADMIN),
    (r"pg_cancel_backend|pg_terminate_backend|pg_blocking_pids|pg_safe_snapshot_blocking_pids|"
     r"pg_isolation_test_session_is_blocked|pg_lock_status|pg_prepared_xact", "deny", SIGNAL),
    (r"pg_(copy|create)_.*_replication_slot|pg_drop_replication_slot|pg_replication_slot_advance|"
     r"pg_logical_.*|pg_replication_origin_.*|pg_show_replication_origin_status|pg_get_replication_slots", "deny",
     REPLICATION),
    (r"pg_current_logfile|pg_ls_.*|pg_read_.*file.*|pg_stat_file|pg_file_.*|pg_logdir_ls|pg_logfile_rotate|"
     r"pg_file_write|pg_file_sync|pg_file_rename|pg_file_unlink", "deny", FILES),
    (r"pg_hba_file_rules|pg_ident_file_mappings|pg_show_all_file_settings|pg_stat_get_activity|"
     r"pg_stat_get_backend_.*|pg_stat_get_wal_receiver|pg_stat_get_subscription.*|pg_stat_statements.*|"
     r"pg_buffercache_.*|pg_freespace|pg_visibility.*|pg_check_(frozen|visible)|page_header|heap_page_.*|"
     r"get_raw_page|bt_page_.*|brin_page_.*|brin_metapage_info|brin_revmap_data|gin_.*page.*|gist_page_.*|"
     r"hash_page_.*|hash_bitmap_info|hash_metapage_info|fsm_page_contents|tuple_data_split|page_checksum|"
     r"pgstat.*|pgrowlocks|pg_snapshot_.*|pg_get_wal_.*|pg_walinspect.*|pg_old_snapshot_.*|"
     r"heap_tuple_infomask_flags|pg_relpages|pgstatginindex|pgstathashindex|pgstatindex|pgstattuple.*", "deny", SECRETS),
    (r"pg_sleep.*", "deny", STALL),
    (r"pg_stat_reset.*", "deny", STATS),
    (r"set_config|set_limit|current_setting|pg_show_all_settings|pg_settings_get_flags", "deny", SETTINGS),
    (r"pg_notify", "deny", "sends notifications to other sessions"),
    (r"dblink.*|postgres_fdw_.*", "deny", NETWORK),
    (r"file_fdw_.*", "deny", FILES),
    (r"txid_current.*|pg_current_xact_id.*|pg_current_snapshot|txid_current_snapshot", "deny",
     "assigns a transaction id (a write)"),
]

# Stable or immutable functions that still must be classified (they expose secrets or other
# sessions); everything volatile is classified anyway.
POSTGRES_STABLE_TOO = re.compile(
    r"pg_stat_get_activity|pg_stat_get_backend_.*|pg_stat_get_wal_receiver|pg_stat_get_subscription.*|"
    r"current_setting|pg_show_all_settings|pg_settings_get_flags|pg_get_replication_slots|"
    r"pg_current_xact_id.*|pg_current_snapshot|txid_current.*|"
    r"crosstab.*|connectby.*|xpath_table|xslt_process|ts_stat|ts_rewrite|(table|schema|database)_to_xml.*"
)

# Functions of newer PostgreSQL releases than the one this was generated on, known to write.
POSTGRES_NEWER: dict[str, str] = {
    "pg_restore_relation_stats": "PostgreSQL 18: " + STATS,
    "pg_restore_attribute_stats": "PostgreSQL 18: " + STATS,
    "pg_clear_relation_stats": "PostgreSQL 18: " + STATS,
    "pg_clear_attribute_stats": "PostgreSQL 18: " + STATS,
    "pg_stat_reset_backend_stats": "PostgreSQL 18: " + STATS,
    "pg_sync_replication_slots": "PostgreSQL 17: " + REPLICATION,
    "pg_logical_slot_get_changes": REPLICATION,
    "pg_get_loaded_modules": "PostgreSQL 18: " + SECRETS,
    "pg_get_aios": "PostgreSQL 18: " + SECRETS,
    "pg_ls_summariesdir": "PostgreSQL 17: " + FILES,
    "pg_get_process_memory_contexts": "PostgreSQL 18: " + SECRETS,
    "uuidv7": READ,
    "uuidv4": READ,
}

DUCKDB_RULES: list[tuple[str, str, str]] = [
    (r"read_.*|.*_scan|.*_scan_dumb|sniff_csv|parquet_.*|glob|import_database|copy_database|"
     r"read_single_.*|seq_scan", "deny", FILES),
    (r"query|query_table|json_execute_serialized_sql", "deny", SQL_TEXT),
    (r"histogram|histogram_values|duckdb_table_sample|summary", "deny", NAMED_TABLE),
    (r"checkpoint|force_checkpoint|(enable|disable)_.*|.*_external_resource.*|(add|remove)_grammar_extension|"
     r"add_parquet_key|write_log|truncate_duckdb_logs|verify_parallelism|python_map_function|"
     r"set_.*|pragma_.*_set", "deny", ADMIN),
    (r"setseed", "deny", SEED),
    (r"nextval|setval", "deny", SEQUENCE),
    (r"sleep_ms", "deny", STALL),
    (r"duckdb_databases|duckdb_extensions|database_list|pragma_database_list", "deny", PATHS),
    (r"duckdb_secrets|duckdb_settings|current_setting|which_secret|duckdb_secret_.*|getenv|duckdb_logs.*|duckdb_log_contexts|"
     r"duckdb_live_query_metrics|duckdb_temporary_files|duckdb_external_file_cache|"
     r"duckdb_prepared_statements|duckdb_variables", "deny", SECRETS),
    (r"random|uuid|uuidv4|uuidv7|gen_random_uuid|currval|current_query|current_query_id|"
     r"current_connection_id|current_transaction_id|error|range|generate_series|unnest|repeat|repeat_row|"
     r"json_each|json_tree|test_all_types|test_vector_types|vector_type|duckdb_.*|pragma_.*|"
     r"show|show_databases|show_tables|show_tables_expanded|database_list|database_size|table_info|"
     r"storage_info|metadata_info|functions|collations|icu_calendar_names|pg_timezone_names|platform|"
     r"user_agent|version|extension_versions|stats", "allow", READ),
]

PRAGMA_REASON = "a PRAGMA: not callable from a query, refused if it ever becomes one"


def classify(name: str, rules: list[tuple[str, str, str]]) -> tuple[str, str] | None:
    for pattern, verdict, reason in rules:
        if re.fullmatch(pattern, name):
            return verdict, reason
    return None


def postgres_catalog(url: str) -> dict:
    import psycopg

    scratch = "baton_catalog_scratch"
    with psycopg.connect(url, autocommit=True) as admin:
        version = admin.execute("SHOW server_version").fetchone()[0]
        admin.execute(f"DROP DATABASE IF EXISTS {scratch}")
        admin.execute(f"CREATE DATABASE {scratch}")
    try:
        scratch_url = re.sub(r"/[^/?]*(\?|$)", f"/{scratch}\\1", url.split("://", 1)[1], count=1)
        with psycopg.connect(url.split("://", 1)[0] + "://" + scratch_url, autocommit=True) as db:
            installed = []
            for (name,) in db.execute("SELECT name FROM pg_available_extensions ORDER BY name").fetchall():
                try:
                    db.execute(f'CREATE EXTENSION IF NOT EXISTS "{name}" CASCADE')
                    installed.append(name)
                except psycopg.Error:
                    pass
            rows = db.execute(
                """
                SELECT DISTINCT p.proname, p.provolatile, e.extname
                FROM pg_proc p
                JOIN pg_namespace n ON n.oid = p.pronamespace
                LEFT JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
                LEFT JOIN pg_extension e ON e.oid = d.refobjid
                WHERE n.nspname = 'pg_catalog' OR e.extname IS NOT NULL
                ORDER BY 1
                """
            ).fetchall()
            relations = [r[0] for r in db.execute(
                "SELECT relname FROM pg_class WHERE relnamespace = 'pg_catalog'::regnamespace "
                "AND relkind IN ('r','v','m','p','f') ORDER BY 1").fetchall()]
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {scratch}")

    functions: dict[str, dict] = {}
    unclassified = []
    builtin = set()
    for name, volatility, extension in rows:
        if extension is None:
            builtin.add(name)
        if volatility != "v" and not POSTGRES_STABLE_TOO.fullmatch(name):
            continue
        found = classify(name, POSTGRES_RULES)
        if found is None:
            unclassified.append(f"{name} ({extension or 'pg_catalog'})")
            continue
        functions[name] = {"verdict": found[0], "reason": found[1], "volatility": volatility,
                           "extension": extension}
    for name, reason in POSTGRES_NEWER.items():
        functions.setdefault(name, {"verdict": "allow" if reason == READ else "deny", "reason": reason,
                                    "volatility": "v", "extension": None})
    if unclassified:
        sys.exit("unclassified PostgreSQL functions (add a rule): " + ", ".join(unclassified))
    return {
        "engine": "postgres",
        "generated_from": f"PostgreSQL {version}; extensions: {', '.join(installed)}",
        "functions": dict(sorted(functions.items())),
        "builtin_functions": sorted(builtin),
        "catalog_relations": relations,
    }


def duckdb_catalog() -> dict:
    import duckdb

    connection = duckdb.connect()
    rows = connection.execute(
        "SELECT DISTINCT function_name, function_type, stability, has_side_effects FROM duckdb_functions() "
        "WHERE stability = 'VOLATILE' OR has_side_effects OR function_type IN ('table', 'table_macro', 'pragma') "
        "ORDER BY 1"
    ).fetchall()
    builtin = sorted({r[0] for r in connection.execute("SELECT function_name FROM duckdb_functions()").fetchall()})
    relations = [r[0] for r in connection.execute(
        "SELECT DISTINCT view_name FROM duckdb_views() WHERE internal ORDER BY 1").fetchall()]
    functions: dict[str, dict] = {}
    unclassified = []
    for name, kind, _stability, _side_effects in rows:
        found = classify(name, DUCKDB_RULES)
        if found is None and kind == "pragma":
            found = ("deny", PRAGMA_REASON)
        if found is None:
            unclassified.append(f"{name} ({kind})")
            continue
        entry = functions.setdefault(name, {"verdict": found[0], "reason": found[1], "kinds": []})
        entry["kinds"] = sorted({*entry["kinds"], kind})
    if unclassified:
        sys.exit("unclassified DuckDB functions (add a rule): " + ", ".join(unclassified))
    return {
        "engine": "duckdb",
        "generated_from": f"DuckDB {duckdb.__version__}",
        "functions": dict(sorted(functions.items())),
        "builtin_functions": builtin,
        "catalog_relations": relations,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = parser.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    for name, catalog in (("postgres", postgres_catalog(args.postgres_url)), ("duckdb", duckdb_catalog())):
        path = DATA / f"{name}.json"
        path.write_text(json.dumps(catalog, indent=1, sort_keys=False) + "\n")
        denied = sum(1 for f in catalog["functions"].values() if f["verdict"] == "deny")
        print(f"{path.relative_to(ROOT)}: {len(catalog['functions'])} classified, {denied} denied")
    return 0


if __name__ == "__main__":
    sys.exit(main())
