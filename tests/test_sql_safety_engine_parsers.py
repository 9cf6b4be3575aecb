"""The check reads SQL the way the engine will: PostgreSQL's and DuckDB's own parsers decide,
MySQL/SQLite text that could tokenise differently is refused, two parsers must agree, and
relations resolve as the engine resolves them.

Each hostile case is refused; each read that only the engine's parser understands is allowed
(with no sqlglot tree). The red-team modules run such statements on the real servers."""

from __future__ import annotations

import pytest

from baton.specialists.sql.safety import RelationPolicy, check_safety

POSTGRES_REFUSED = [
    # Unicode-escaped identifiers: sqlglot reads a column U and an unknown function
    (r"""SELECT U&"pg\005fread\005ffile"('/etc/passwd')""", "dangerous_function"),
    (r"""SELECT U&"pg!005fread!005ffile" UESCAPE '!' ('/etc/passwd')""", "dangerous_function"),
    (r"""SELECT * FROM U&"pg\005fls\005fdir"('/')""", "dangerous_function"),
    (r"""SELECT pg_catalog.U&"lo\005fexport"(1, '/tmp/x')""", "dangerous_function"),
    (r"""SELECT rolpassword FROM U&"pg\005fauthid" """, "sensitive_table"),
    (r"""SELECT * FROM U&"pg\005fcatalog".pg_shadow""", "sensitive_table"),
    ("SELECT \"pg_read_file\"('/etc/passwd')", "dangerous_function"),
    ("SELECT PG_CATALOG . PG_READ_FILE ( '/etc/passwd' )", "dangerous_function"),
    ("SELECT pg_read_file/**/('/etc/passwd')", "dangerous_function"),
    ("SELECT pg_read_file/* a /* nested */ b */('/etc/passwd')", "dangerous_function"),
    # functional notation: t.f is f(t)
    ("SELECT t.pg_read_file FROM (SELECT '/etc/passwd'::text) t", "dangerous_function"),
    ("SELECT (x).setseed FROM (SELECT 0.5 AS x) s", "dangerous_function"),
    # operators from other schemas run functions no one checked
    ("SELECT 1 OPERATOR(public.+) 2", "dangerous_function"),
    ("SELECT * FROM t TABLESAMPLE my_sampler(10)", "dangerous_function"),
    # side effects with no trick
    ("SELECT brin_summarize_new_values('idx'::regclass)", "dangerous_function"),
    ("SELECT gin_clean_pending_list('gin_idx')", "dangerous_function"),
    ("SELECT lowrite(lo_open(1, 131072), 'x')", "dangerous_function"),
    ("SELECT setseed(0.5)", "dangerous_function"),
    ("SELECT pg_restore_relation_stats('relation', 't'::regclass)", "dangerous_function"),
    ("SELECT * FROM pg_stat_get_activity(NULL)", "dangerous_function"),
    # secrets and other sessions, by the resolved name
    ("SELECT subconninfo FROM pg_subscription", "sensitive_table"),
    ("SELECT query FROM pg_catalog.pg_stat_activity", "sensitive_table"),
    ("SELECT * FROM pg_hba_file_rules", "sensitive_table"),
    ("SELECT * FROM pg_file_settings", "sensitive_table"),
    ("WITH pg_authid AS (SELECT 1) SELECT * FROM pg_authid", "sensitive_table"),
    ("SELECT * FROM (SELECT * FROM pg_authid) a", "sensitive_table"),
    # string building at run time reaches functions only by name
    ("SELECT query_to_xml(chr(83)||chr(69)||'LECT rolpassword FROM pg_authid', true, false, '')", "sql_in_string"),
    ("SELECT query_to_xml((SELECT q FROM queries LIMIT 1), true, false, '')", "sql_in_string"),
    ("SELECT query_to_xml('SELECT rolpassword FROM pg_authid', true, false, '')", "sensitive_table"),
    ("SELECT * FROM ts_stat('SELECT to_tsvector(pg_read_file(''/etc/passwd''))')", "dangerous_function"),
    ("SELECT my_exec('SEL' || 'ECT 1')", "sql_in_string"),
    ("SELECT my_exec($q$TABLE secrets$q$)", "sql_in_string"),
    ("SELECT dblink_exec('host=x', 'COPY t TO PROGRAM ''id''')", "dangerous_function"),
    # structure
    ("SELECT 1; SELECT 2", "multiple_statements"),
    ("SELECT * INTO t2 FROM t", "select_into"),
    ("SELECT * FROM t FOR NO KEY UPDATE", "locking_clause"),
    ("WITH x AS (UPDATE t SET a = 1 RETURNING *) SELECT * FROM x", "data_modifying_cte"),
    ("SELECT * FROM (WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x) s", "data_modifying_cte"),
    ("SELECT 'unterminated", "unparseable"),
]


@pytest.mark.parametrize(("sql", "rule"), POSTGRES_REFUSED, ids=[s[:50] for s, _ in POSTGRES_REFUSED])
def test_postgres_hostile_statements_are_refused_by_the_engine_reading(sql, rule):
    verdict = check_safety(sql, "postgres")
    assert not verdict.safe
    assert verdict.rule == rule, verdict.reason


POSTGRES_ENGINE_ONLY_READS = [
    "SELECT JSON_OBJECT('a': 1)",
    "SELECT * FROM JSON_TABLE('[1,2]'::jsonb, '$[*]' COLUMNS (v int PATH '$')) jt",
    "SELECT xmlelement(name foo, xmlattributes('x' AS bar))",
    "SELECT point(1, 2) <-> point(3, 4)",
    "SELECT * FROM orders TABLESAMPLE bernoulli(10) REPEATABLE (42)",
    "SELECT 1 WHERE 'abc' IS NORMALIZED",
]


@pytest.mark.parametrize("sql", POSTGRES_ENGINE_ONLY_READS)
def test_postgres_reads_that_only_postgres_parses_are_allowed(sql):
    verdict = check_safety(sql, "postgres")
    assert verdict.safe, verdict.reason


@pytest.mark.parametrize("sql", [
    "SELECT ts_rewrite('a & b'::tsquery, 'SELECT t, s FROM aliases')",
    "SELECT * FROM ts_stat('SELECT body_tsv FROM documents')",
    "SELECT query_to_xml('SELECT id, total FROM orders', true, false, '')",
    "SELECT table_to_xml('orders', true, false, '')",
])
def test_postgres_sql_given_as_a_constant_is_checked_like_any_query(sql):
    assert check_safety(sql, "postgres", relations=RelationPolicy.for_schema("public")).safe


def test_postgres_reads_sqlglot_understands_keep_their_tree():
    verdict = check_safety("SELECT region, sum(amount) FROM sales GROUP BY region", "postgres")
    assert verdict.safe and verdict.statement is not None


def test_postgres_casts_to_reg_types_are_lookups_not_calls():
    assert check_safety("SELECT 'orders'::regclass, 'lower'::regproc", "postgres").safe


@pytest.mark.parametrize(("sql", "rule"), [
    ("SELECT * FROM hr.salaries", "relation_not_allowed"),
    ("SELECT * FROM pg_catalog.pg_class", "relation_not_allowed"),
    ("SELECT * FROM pg_class", "relation_not_allowed"),  # unqualified: pg_catalog is searched first
    ("SELECT * FROM public.orders o JOIN hr.salaries s ON true", "relation_not_allowed"),
    ("SELECT * FROM otherdb.public.orders", "relation_not_allowed"),
    ("SELECT table_to_xml('hr.salaries', true, false, '')", "relation_not_allowed"),
    ("SELECT query_to_xml('SELECT * FROM hr.salaries', true, false, '')", "relation_not_allowed"),
])
def test_postgres_relations_outside_the_workspace_are_refused(sql, rule):
    policy = RelationPolicy.for_schema("public")
    verdict = check_safety(sql, "postgres", relations=policy)
    assert (verdict.safe, verdict.rule) == (False, rule), verdict.reason


@pytest.mark.parametrize("sql", [
    "SELECT * FROM orders", "SELECT * FROM public.orders", "SELECT table_name FROM information_schema.columns",
    "SELECT * FROM pg_tables", "WITH recent AS (SELECT * FROM orders) SELECT * FROM recent",
])
def test_postgres_workspace_relations_and_introspection_are_allowed(sql):
    assert check_safety(sql, "postgres", relations=RelationPolicy.for_schema("public")).safe


MYSQL_REFUSED = [
    *[(f"SELECT 1 --{space}x\n, LOAD_FILE('/etc/passwd')", "lexical_ambiguity")
      for space in ("\u00a0", "\u3000", "\u2028", "\u0085", "\u2003", "\u200a")],
    ("SELECT 1 --\u00a0\nUNION SELECT authentication_string FROM mysql.user", "lexical_ambiguity"),
    ("SELECT 1\u00a0FROM t", "lexical_ambiguity"),
    ("SELECT 1\x0bFROM t", "lexical_ambiguity"),
    ("SELECT 1\x0cFROM t", "lexical_ambiguity"),
    ("SELECT 1\x00, SLEEP(5)", "lexical_ambiguity"),
    ("SELECT \\N", "lexical_ambiguity"),
    ("SELECT 1 /* a /* b */ , SLEEP(5) */", "lexical_ambiguity"),
    ("SELECT 1 /* unterminated", "lexical_ambiguity"),
    ("SELECT 'unterminated", "lexical_ambiguity"),
    ("SELECT 1 --", "lexical_ambiguity"),
    ("SELECT 1 /*!50000 UNION SELECT LOAD_FILE('/etc/passwd') */", "executable_comment"),
    ("SELECT 1 /*M!100000 , SLEEP(10) */", "executable_comment"),
    ("SELECT * FROM information_schema.PROCESSLIST", "sensitive_table"),
    ("SELECT * FROM performance_schema.threads", "sensitive_table"),
    ("SELECT * FROM MySQL.User", "sensitive_table"),
    ("SELECT * FROM mysql.servers", "sensitive_table"),
]


@pytest.mark.parametrize(("sql", "rule"), MYSQL_REFUSED, ids=[repr(s[:40]) for s, _ in MYSQL_REFUSED])
def test_mysql_text_that_could_tokenise_differently_is_refused(sql, rule):
    verdict = check_safety(sql, "mysql")
    assert (verdict.safe, verdict.rule) == (False, rule), verdict.reason


@pytest.mark.parametrize("sql", [
    "SELECT 'caf\u00e9 \u00a0 \u3000', `na\u00efve` FROM t",  # non-ASCII inside literals is data
    "SELECT 1 -- a comment with \u00e9 and \u00a0\n",
    "SELECT 1--1",  # two minus signs, to MySQL and to sqlglot alike
    "SELECT 'it\\'s', \"dq\", x'41', N'n' # hash comment\n",
])
def test_mysql_ordinary_text_is_allowed(sql):
    assert check_safety(sql, "mysql").safe


@pytest.mark.parametrize(("sql", "rule"), [
    ("SELECT 1\u00a0FROM t", "lexical_ambiguity"),
    ("SELECT 1 /* a /* b */ , 2 */", "lexical_ambiguity"),
    ("SELECT readfile('/etc/passwd')", "dangerous_function"),
])
def test_sqlite_text_that_could_tokenise_differently_is_refused(sql, rule):
    verdict = check_safety(sql, "sqlite")
    assert (verdict.safe, verdict.rule) == (False, rule), verdict.reason


DUCKDB_REFUSED = [
    ('SELECT "Read_CSV"(\'/etc/passwd\')', "dangerous_function"),
    ("SELECT '/etc/passwd'.read_text()", "dangerous_function"),
    ("SELECT setseed(0.5)", "dangerous_function"),
    ("SELECT * FROM register_external_resource_type('x')", "dangerous_function"),
    ("SELECT * FROM duckdb_settings()", "dangerous_function"),
    ("SELECT * FROM 'data.csv'", "file_read"),
    ("SELECT my_macro('SELECT 1')", "sql_in_string"),
    ("SELECT * FROM other.main.t", "relation_not_allowed"),
]


@pytest.mark.parametrize(("sql", "rule"), DUCKDB_REFUSED, ids=[s[:40] for s, _ in DUCKDB_REFUSED])
def test_duckdb_hostile_statements_are_refused_by_duckdbs_reading(sql, rule):
    verdict = check_safety(sql, "duckdb", relations=RelationPolicy(frozenset({"main", "shop"}), "main"))
    assert (verdict.safe, verdict.rule) == (False, rule), verdict.reason


def test_duckdb_workspace_reads_are_allowed():
    policy = RelationPolicy(frozenset({"main", "shop"}), "main")
    for sql in ("SELECT 1 /* /* nested */ , getenv('HOME') */",  # DuckDB nests comments: all of it is one
                "SELECT * FROM orders", "SELECT * FROM shop.main.orders", "FROM orders SELECT count(*)",
                "SELECT * FROM duckdb_columns()", "SELECT list_transform([1, 2], x -> x + 1)"):
        assert check_safety(sql, "duckdb", relations=policy).safe, sql


def test_parsers_must_agree_on_the_functions_called():
    """A call sqlglot sees but PostgreSQL does not means the text is read two ways."""
    verdict = check_safety(r"""SELECT U&"low\0065r"('X')""", "postgres")
    assert (verdict.safe, verdict.rule) == (False, "parsers_disagree"), verdict.reason


def test_cli_check_limits_reads_to_the_given_schemas():
    from typer.testing import CliRunner

    from baton.cli import build_app

    runner = CliRunner()
    outside = runner.invoke(build_app(), ["sql", "check", "-d", "postgres", "-s", "public", "SELECT * FROM hr.pay"])
    assert outside.exit_code == 1 and "relation_not_allowed" in outside.output
    inside = runner.invoke(build_app(), ["sql", "check", "-d", "postgres", "-s", "public", "SELECT * FROM pay"])
    assert inside.exit_code == 0, inside.output


@pytest.mark.parametrize("dialect", ["postgres", "duckdb"])
@pytest.mark.parametrize(("sql", "safe"), [
    ("SELECT current_setting('TimeZone')", True),
    ("SELECT current_setting('primary_conninfo')", False),
    ("SELECT current_setting('ssl_passphrase_command')", False),
    ("SELECT current_setting('app.jwt_secret')", False),
    ("SELECT current_setting('s3_secret_access_key')", False),
    ("SELECT current_setting('data_directory')", False),
    ("SELECT current_setting(name) FROM settings_to_read", False),  # chosen at run time
    ("SELECT current_setting('prim' || 'ary_conninfo')", False),
])
def test_settings_are_read_only_by_constant_harmless_names(sql, safe, dialect):
    verdict = check_safety(sql, dialect)
    assert verdict.safe is safe, verdict.reason
    if not safe:
        assert verdict.rule == "dangerous_function"


def test_a_lone_keyword_given_to_a_function_is_not_sql():
    """``has_largeobject_privilege(1, 'SELECT')`` names a privilege (PostgreSQL 18)."""
    assert check_safety("SELECT has_largeobject_privilege(1, 'SELECT')", "postgres").safe
