"""The yardstick of ``bench/sql_false_refusals.py`` is tested too: its ground-truth
classifier (``sql_ground_truth``, ``sql_ground_truth_duckdb``) must call reads reads and
non-reads non-reads on hand-written statements, or every figure the bench prints is wrong.

Each PostgreSQL case runs with the families alone and, when a server is configured
(``BATON_TEST_POSTGRES_URL``), with that server's own ``pg_proc``. Nothing here calls the
safety check under test.
"""

from __future__ import annotations

import os

import pytest

from sql_corpora import PGLAST_MISSING

pytest.importorskip("pglast", reason=PGLAST_MISSING)

from sql_ground_truth import PostgresGroundTruth, split_psql_script
from sql_ground_truth_duckdb import DuckDBGroundTruth
from sql_side_effects import FunctionCatalog


@pytest.fixture(params=["families", "server catalog"])
def truth(request) -> PostgresGroundTruth:
    if request.param == "families":
        return PostgresGroundTruth(FunctionCatalog.families_only("postgres"))
    url = os.environ.get("BATON_TEST_POSTGRES_URL") or pytest.skip("BATON_TEST_POSTGRES_URL is not set")
    return PostgresGroundTruth(FunctionCatalog.from_postgres(url))


READS = [
    "SELECT 1",
    "select a, count(*) from t where b > 2 group by a having count(*) > 1 order by 2 desc limit 5",
    "WITH x AS (SELECT 1 AS a) SELECT * FROM x",
    "VALUES (1, 'a'), (2, 'b')",
    "SELECT 1 UNION ALL SELECT 2 EXCEPT (SELECT 3)",
    "SELECT random(), clock_timestamp(), timeofday(), currval('s')",  # volatile, yet reads
    "SELECT 'please DELETE FROM t; SELECT setseed(0)' AS text",  # data, not a statement
    "SELECT * FROM ts_stat('SELECT a FROM docs')",  # runs SQL text that is itself a read
    "SELECT jsonb_path_query('{\"a\": 1}', '$.a'), point(1, 2) <-> point(3, 4)",
]

NON_READS = {
    "INSERT INTO t VALUES (1)": "InsertStmt",
    "UPDATE t SET a = 1 WHERE b = 2": "UpdateStmt",
    "DELETE FROM t": "DeleteStmt",
    "MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN DELETE": "MergeStmt",
    "CREATE TABLE t (a int)": "CreateStmt",
    "DROP TABLE t": "DropStmt",
    "EXPLAIN SELECT 1": "ExplainStmt",
    "SET work_mem = '1MB'": "VariableSetStmt",
    "SELECT * INTO t2 FROM t": "SELECT INTO",
    "SELECT * FROM t FOR UPDATE": "locking clause",
    "SELECT * FROM (SELECT * FROM t FOR SHARE) s": "locking clause",
    "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d": "data-modifying WITH (DeleteStmt)",
    "SELECT setseed(0.5)": "setseed(): PRNG seed",
    "SELECT pg_advisory_lock(1)": "pg_advisory_lock(): advisory locks",
    "SELECT pg_catalog.nextval('s')": "nextval(): sequences",
    "SELECT count(*) FROM t WHERE a IN (SELECT pg_sleep(1))": "pg_sleep(): sleeps",
    # The identifier as PostgreSQL decodes it: pg_read_file.
    "SELECT U&\"pg\\005fread\\005ffile\"('/etc/passwd')": "pg_read_file(): server files",
    "SELECT pg_restore_relation_stats('relation', 't'::regclass)": "writes planner statistics",  # PostgreSQL 18
    "SELECT query_to_xml('SELECT setseed(0.1)', true, false, '')": "runs SQL that is not a read",
    "SELECT query_to_xml(q, true, false, '') FROM queries": "runs SQL built at run time",
    "SELECT 1; SELECT 2": "multiple statements",
}


@pytest.mark.parametrize("sql", READS)
def test_reads(truth, sql):
    verdict = truth.classify(sql)
    assert verdict is not None and (verdict.read, verdict.reasons, verdict.engine_guard) == (True, (), False)


@pytest.mark.parametrize("sql, reason", NON_READS.items(), ids=list(NON_READS))
def test_non_reads(truth, sql, reason):
    verdict = truth.classify(sql)
    assert verdict is not None and not verdict.read and not verdict.engine_guard
    assert reason in verdict.reasons[0]


def test_what_postgresql_cannot_parse_is_not_classified(truth):
    assert truth.classify("SELEC 1") is None
    assert truth.classify("SELECT :datoid") is None  # a psql variable


def test_user_defined_functions_are_judged_by_their_bodies(truth):
    definitions = [
        "CREATE FUNCTION w() RETURNS int LANGUAGE sql AS $$ INSERT INTO t VALUES (1) RETURNING a $$",
        "CREATE FUNCTION pure(x int) RETURNS int LANGUAGE sql AS 'SELECT x + 1'",
        "CREATE FUNCTION atomic_w() RETURNS void LANGUAGE sql BEGIN ATOMIC UPDATE t SET a = 2; END",
        "CREATE FUNCTION seq() RETURNS bigint AS $$ DECLARE v bigint; BEGIN v := nextval('s'); RETURN v; END $$"
        " LANGUAGE plpgsql",
        "CREATE FUNCTION dyn(q text) RETURNS void AS $$ BEGIN EXECUTE q; END $$ LANGUAGE plpgsql",
        "CREATE FUNCTION loop_read() RETURNS int AS $$ DECLARE n int; BEGIN SELECT count(*) INTO n FROM t;"
        " RAISE NOTICE 'insert %', n; RETURN n; END $$ LANGUAGE plpgsql",
        "CREATE FUNCTION via() RETURNS int LANGUAGE sql AS 'SELECT w()'",
        "CREATE FUNCTION c_volatile() RETURNS int AS 'regress.so' LANGUAGE c",
        "CREATE FUNCTION c_immutable() RETURNS int AS 'regress.so' LANGUAGE c IMMUTABLE",
    ]
    for sql in definitions:
        assert truth.observe(sql, "a.sql") is not None
    def judge(sql: str, scope: str = "a.sql"):
        return truth.resolve(truth.observe(sql, scope), scope)

    for name, reason in [("w", "body: InsertStmt"), ("atomic_w", "body: UpdateStmt"),
                         ("seq", "nextval(): sequences"), ("dyn", "dynamic SQL"), ("via", "via w()"),
                         ("c_volatile", "volatile c function")]:
        verdict = judge(f"SELECT {name}()")
        assert (verdict.read, verdict.engine_guard) == (False, True), name
        assert reason in verdict.reasons[0]
    for name in ("pure", "loop_read", "c_immutable", "never_defined"):
        assert judge(f"SELECT {name}(1)").read, name
    # A static reason wins: the statement is a non-read any check can see.
    assert not judge("SELECT w() FROM t FOR UPDATE").engine_guard


def test_a_function_is_looked_up_in_its_own_file_first(truth):
    truth.observe("CREATE FUNCTION f1() RETURNS int LANGUAGE sql AS 'SELECT 1'", "pure.sql")
    truth.observe("CREATE FUNCTION f1() RETURNS void LANGUAGE sql AS 'DELETE FROM t'", "writes.sql")
    assert truth.resolve(truth.observe("SELECT f1()", "pure.sql"), "pure.sql").read
    assert not truth.resolve(truth.observe("SELECT f1()", "writes.sql"), "writes.sql").read
    # A file that does not define it sees every definition: one writing body taints the name.
    assert not truth.resolve(truth.observe("SELECT f1()", "other.sql"), "other.sql").read


def test_psql_scripts_are_split_as_psql_runs_them():
    script = "\n".join([
        "\\set VERBOSITY terse",       # 1: a meta-command, not SQL
        "SELECT 1;",                   # 2
        "SELECT 2 \\gset",             # 3: \gset ends the statement
        "COPY t FROM stdin;",          # 4
        "1\t2",                        # 5: COPY data
        "\\.",                         # 6
        "SELECT 123abc;",              # 7: a scan error (the suite tests bad literals)
        "-- a comment",                # 8
        "SELECT 'x;y' AS \"a;b\";",    # 9
    ])
    statements = split_psql_script(script)
    assert [sql for _, sql in statements] == [
        "SELECT 1", "SELECT 2", "COPY t FROM stdin", "-- a comment\nSELECT 'x;y' AS \"a;b\""]
    assert [line for line, _ in statements] == [2, 3, 4, 8]


def test_the_server_catalog_has_no_unclassified_volatile_function(postgres_url):
    """Fails when the server gains a volatile built-in that no family names: the bench
    would count it as a side effect, and the families must say whether it is one."""
    catalog = FunctionCatalog.from_postgres(postgres_url)
    assert len(catalog.volatile) > 100
    assert catalog.unclassified() == []
    assert {"setseed", "pg_advisory_lock", "nextval", "pg_read_file", "lo_export"} <= set(catalog.side_effecting())
    assert not {"random", "clock_timestamp", "timeofday", "currval"} & set(catalog.side_effecting())


def test_duckdb_ground_truth():
    catalog = FunctionCatalog.from_duckdb()
    assert catalog.unclassified() == []
    truth = DuckDBGroundTruth(catalog)
    try:
        assert truth.classify("SELECT a, random() FROM t WHERE b IN (SELECT 1)").read
        assert truth.classify("FROM t SELECT a").read
        assert truth.classify("SELECT * FROM (DESCRIBE t)").read
        assert not truth.classify("DESCRIBE t").read and not truth.classify("SUMMARIZE t").read
        for sql, reason in [("SELECT setseed(0.5)", "PRNG seed"), ("SELECT nextval('s')", "sequences"),
                            ("SELECT * FROM read_csv('/etc/passwd')", "files"),
                            ("SELECT * FROM 'data.csv'", "a file read as a table"),
                            ("INSERT INTO t VALUES (1)", "INSERT"), ("SELECT 1; SELECT 2", "multiple statements")]:
            verdict = truth.classify(sql)
            assert not verdict.read and reason in verdict.reasons[0], sql
        assert truth.classify("SELEC 1") is None
    finally:
        truth.close()
