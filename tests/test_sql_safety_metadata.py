"""The metadata policy and the constant-size builders of the SQL check (issue 24, items 3-4),
on the check alone; the red-team modules run the same classes on the real engines."""

from __future__ import annotations

import pytest

from baton.specialists.sql.safety import check_safety
from baton.specialists.sql.safety.metadata import object_name
from baton.specialists.sql.safety.relations import Relation, RelationPolicy
from baton.specialists.sql.safety.sizes import MAX_AGGREGATE_BUILD, MAX_ROW_BUILD

PG = RelationPolicy.for_schema("rt")
DUCK = RelationPolicy(frozenset({"main", "shop"}), "main")
MY = RelationPolicy.for_schema("test")


@pytest.mark.parametrize("sql", [
    "SELECT pg_get_viewdef('other.v'::regclass)",
    "SELECT pg_get_viewdef(c.oid) FROM rt.t c",
    "SELECT pg_get_functiondef('other.f'::regproc)",
    "SELECT pg_get_functiondef(p) FROM (SELECT 1::oid AS p) s",
    "SELECT (x).pg_get_viewdef FROM (SELECT 'other.v'::regclass AS x) AS s",  # functional notation
    "SELECT obj_description('\"Other\".t'::regclass, 'pg_class')",
    "SELECT definition FROM pg_views",
    "SELECT definition FROM pg_catalog.pg_views WHERE schemaname = 'other'",
    "SELECT indexdef FROM pg_indexes",
    "SELECT pg_stat_get_backend_pid(b) FROM pg_stat_get_backend_idset() AS b",
    "SELECT pg_stat_get_backend_userid(1)",
    "SELECT pg_tablespace_location(oid) FROM pg_tablespace",
    "SELECT inet_server_addr(), inet_server_port()",
    "SELECT pg_relation_filepath('rt.t')",
    "SELECT current_setting('dynamic_library_path')",
    "SELECT current_setting('unix_socket_directories')",
    "SELECT 1 WHERE 1 OPERATOR(rt.=) ANY (SELECT 1)",
    "SELECT 1 WHERE 1 OPERATOR(public.=) ALL (SELECT 1)",
    "SELECT x FROM rt.t ORDER BY x USING OPERATOR(public.<)",
    "SELECT array_agg(x ORDER BY x USING OPERATOR(public.<)) FROM rt.t",
    "SELECT rank() OVER (ORDER BY x USING OPERATOR(public.<)) FROM rt.t",
])
def test_postgres_metadata_outside_the_workspace_is_refused(sql):
    verdict = check_safety(sql, "postgres", relations=PG)
    assert not verdict.safe, sql


@pytest.mark.parametrize("sql", [
    "SELECT pg_get_viewdef('rt.v'::regclass)",
    "SELECT obj_description('rt.t'::regclass, 'pg_class')",
    "SELECT pg_get_functiondef('rt.f(int)'::regprocedure)",
    "SELECT tablename FROM pg_tables WHERE schemaname = 'rt'",
    "SELECT current_setting('search_path'), current_setting('server_version')",
    "SELECT 1 WHERE 1 OPERATOR(pg_catalog.=) ANY (SELECT 1)",
    "SELECT x FROM rt.t ORDER BY x USING <",
])
def test_postgres_workspace_metadata_is_allowed(sql):
    assert check_safety(sql, "postgres", relations=PG).safe, sql


@pytest.mark.parametrize("sql", [
    "SELECT * FROM pragma_storage_info('other.secret')",
    "SELECT * FROM pragma_table_info('other.secret')",
    "SELECT * FROM pragma_show('other.secret')",
    "SELECT * FROM pragma_table_info(name) FROM (SELECT 'x' AS name)",
    "SELECT sql FROM duckdb_tables()",
    "SELECT sql FROM duckdb_tables",
    "SELECT sql FROM duckdb_views()",
    "SELECT macro_definition FROM duckdb_functions()",
    "SELECT path FROM duckdb_databases()",
    "SELECT * FROM duckdb_databases",
    "SELECT install_path FROM duckdb_extensions()",
    "SELECT * FROM pragma_database_list",
    "SELECT view_definition FROM information_schema.views",
    "SELECT definition FROM pg_views",
    "SELECT current_setting('allowed_paths')",
    "SELECT current_setting('temp_directory')",
    "SELECT current_setting('extension_directory')",
])
def test_duckdb_metadata_outside_the_workspace_is_refused(sql):
    assert not check_safety(sql, "duckdb", relations=DUCK).safe, sql


@pytest.mark.parametrize("sql", [
    "SELECT * FROM pragma_table_info('orders')",
    "SELECT * FROM pragma_storage_info('main.orders')",
    "SELECT * FROM pragma_table_info('shop.main.orders')",
    "SELECT table_name FROM information_schema.tables",
    "SELECT column_name FROM duckdb_columns WHERE table_name = 'orders'",
    "SELECT current_setting('memory_limit')",
])
def test_duckdb_workspace_metadata_is_allowed(sql):
    assert check_safety(sql, "duckdb", relations=DUCK).safe, sql


@pytest.mark.parametrize("variable", ["datadir", "log_error", "socket", "plugin_dir", "basedir", "tmpdir",
                                      "general_log_file", "slow_query_log_file", "pid_file", "secure_file_priv",
                                      "log_bin_basename", "innodb_data_home_dir", "character_sets_dir", "ssl_key"])
@pytest.mark.parametrize("form", ["@@{}", "@@global.{}", "@@session.{}", "@@`{}`", "@@ {}"])
def test_mysql_path_variables_are_refused(variable, form):
    sql = f"SELECT {form.format(variable)}"
    assert not check_safety(sql, "mysql", relations=MY).safe, sql
    assert not check_safety(sql, "mysql").safe, sql  # with or without a workspace


@pytest.mark.parametrize("sql", ["SELECT UUID_SHORT()", "SELECT uuid_short() + 1", "SELECT IS_USED_LOCK('x')",
                                 "SELECT * FROM information_schema.SYSTEM_VARIABLES"])
def test_mysql_counters_and_server_state_are_refused(sql):
    assert not check_safety(sql, "mysql", relations=MY).safe, sql


def test_mysql_harmless_variables_stay_allowed():
    assert check_safety("SELECT @@version, @@sql_mode, @@max_allowed_packet", "mysql", relations=MY).safe


@pytest.mark.parametrize("dialect", ["postgres", "duckdb"])
@pytest.mark.parametrize("sql", [
    "SELECT repeat('x', 200000000), repeat('y', 200000000)",
    "SELECT repeat('xyz', 6000000)",
    "SELECT lpad('a', 100000000)",
    "SELECT rpad('a', 20000000, 'b')",
    "SELECT string_agg(repeat('x', 1000000), '') FROM generate_series(1, 1000)",
    "SELECT string_agg(repeat('x', 1000000), ''), string_agg(repeat('y', 1000000), '') FROM generate_series(1, 200)",
    "SELECT array_agg(lpad('a', 100000)) FROM generate_series(1, 10000) AS a, generate_series(1, 10) AS b",
])
def test_constant_size_string_builders_over_the_limit_are_refused(dialect, sql):
    verdict = check_safety(sql, dialect)
    assert not verdict.safe and verdict.rule == "resource_limit", (sql, verdict)


@pytest.mark.parametrize("dialect", ["postgres", "duckdb"])
@pytest.mark.parametrize("sql", [
    "SELECT repeat('-', 80)",
    "SELECT g, repeat('x', 1000000) FROM generate_series(1, 5000) AS g",  # rows stream: the row guard bounds them
    "SELECT string_agg(repeat('x', 100), ',') FROM generate_series(1, 1000)",
    "SELECT lpad(x::text, 10, '0') FROM generate_series(1, 100000000) AS x",
])
def test_small_builders_and_streamed_rows_stay_allowed(dialect, sql):
    assert check_safety(sql, dialect).safe, sql


def test_duckdb_range_counts_rows_as_duckdb_does():
    assert not check_safety("SELECT list(repeat('x', 1000000)) FROM range(300)", "duckdb").safe
    assert check_safety("SELECT list(repeat('x', 1000000)) FROM range(200)", "duckdb").safe
    assert MAX_ROW_BUILD < MAX_AGGREGATE_BUILD


@pytest.mark.parametrize(("text", "relation"), [
    ("t", Relation("t")), ("S.T", Relation("t", "s")), ('"S".t', Relation("t", "S")),
    ("db.s.t", Relation("t", "s", "db")), ("s.f(int, text)", Relation("f", "s")),
    ('"a""b".t', Relation("t", 'a"b')),
])
def test_object_names_are_read_as_the_engines_fold_them(text, relation):
    assert object_name(text) == relation


@pytest.mark.parametrize("text", ["", "a.b.c.d", "a..b", "a b", "1; DROP"])
def test_object_names_that_are_not_plain_are_not_identified(text):
    assert object_name(text) is None
