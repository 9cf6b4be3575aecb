"""The committed function classification covers every volatile function the installed engines
have: a new PostgreSQL or DuckDB release with a new side-effecting function fails here until
``scripts/catalog_functions.py`` is run again and the function given a verdict."""

from __future__ import annotations

import duckdb
import pytest

from baton.specialists.sql.safety import check_safety, denied_function_reason
from baton.specialists.sql.safety.functions import catalog


def _volatile_postgres_functions(url: str) -> set[str]:
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            rows = connection.exec_driver_sql(
                "SELECT DISTINCT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                "LEFT JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e' "
                "WHERE p.provolatile = 'v' AND (n.nspname = 'pg_catalog' OR d.objid IS NOT NULL)"
            ).fetchall()
    finally:
        engine.dispose()
    return {r[0] for r in rows}


def test_every_volatile_postgres_function_is_classified(postgres_url):
    classified = catalog("postgres")["functions"]
    missing = sorted(_volatile_postgres_functions(postgres_url) - set(classified))
    assert missing == [], "run scripts/catalog_functions.py and give these a verdict"


def test_every_volatile_or_table_duckdb_function_is_classified():
    rows = duckdb.connect().execute(
        "SELECT DISTINCT function_name FROM duckdb_functions() "
        "WHERE stability = 'VOLATILE' OR has_side_effects OR function_type IN ('table', 'table_macro', 'pragma')"
    ).fetchall()
    missing = sorted({r[0] for r in rows} - set(catalog("duckdb")["functions"]))
    assert missing == [], "run scripts/catalog_functions.py and give these a verdict"


def test_every_entry_has_a_verdict_and_a_reason():
    for engine in ("postgres", "duckdb"):
        for name, entry in catalog(engine)["functions"].items():
            assert entry["verdict"] in ("allow", "deny"), name
            assert entry["reason"].strip(), name


@pytest.mark.parametrize(("name", "dialect"), [
    ("brin_summarize_new_values", "postgres"), ("brin_summarize_range", "postgres"),
    ("brin_desummarize_range", "postgres"), ("gin_clean_pending_list", "postgres"), ("lowrite", "postgres"),
    ("setseed", "postgres"), ("setseed", "duckdb"), ("register_external_resource_type", "duckdb"),
    ("pg_restore_relation_stats", "postgres"), ("pg_clear_attribute_stats", "postgres"),
    ("pg_stat_get_activity", "postgres"), ("pg_hba_file_rules", "postgres"), ("pg_show_all_file_settings", "postgres"),
    ("dblink_exec", "postgres"), ("pg_file_write", "postgres"), ("crosstab", "postgres"),
    ("duckdb_secrets", "duckdb"), ("sleep_ms", "duckdb"),
    ("setseed", "mysql"), ("sleep", "mysql"), ("load_file", "mysql"), ("load_extension", "sqlite"),
])
def test_reads_with_side_effects_are_refused(name, dialect):
    """The functions the issue found allowed with no trick, now classified from the catalogs."""
    assert denied_function_reason(name, dialect)
    sql = f"SELECT {name}(1)"
    assert check_safety(sql, dialect).rule == "dangerous_function"


@pytest.mark.parametrize(("name", "dialect"), [
    ("random", "postgres"), ("clock_timestamp", "postgres"), ("gen_random_uuid", "postgres"), ("currval", "postgres"),
    ("pg_relation_size", "postgres"), ("random", "duckdb"), ("uuid", "duckdb"), ("glob", "sqlite"),
])
def test_volatile_reads_stay_allowed(name, dialect):
    assert denied_function_reason(name, dialect) is None
