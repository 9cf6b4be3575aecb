"""What pre-validation and the safety check cost, next to running the query.

For each of the 22 TPC-H queries (sqlglot's fixture, fetched by
``scripts/fetch_test_data.py``) this times, on DuckDB:

- validation: ``check_safety`` + ``prevalidate`` against the introspected schema (the
  agent's steps 1 and 2, with the schema already cached, as the agent has it), and
- execution: running the query and fetching every row,

each as the median of several runs, and prints per-query times and the ratio
validation / execution, then the total. Target: validation < 10 % of execution.

Data: DuckDB's tpch extension (``CALL dbgen``) when it is installed; it cannot be
downloaded here, so otherwise the eight TPC-H tables are generated in DuckDB with the
specification's row counts, key relations and value domains (a deterministic stand-in
for dbgen, not its exact text).

    .venv/bin/python bench/sql_validation.py [--sf 1] [--repeat 5]

The ratio depends on the data size (validation cost does not): SF 1 is TPC-H's smallest
official scale factor and the default; smaller ones are useful to see the fixed costs.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import statistics
import sys
import time
from pathlib import Path

import duckdb

from baton.specialists.sql.prevalidate import prevalidate
from baton.specialists.sql.safety import check_safety
from baton.specialists.sql.schema import ColumnInfo, SchemaInfo, TableInfo

ROOT = Path(__file__).resolve().parent.parent

NATIONS = [("ALGERIA", 0), ("ARGENTINA", 1), ("BRAZIL", 1), ("CANADA", 1), ("EGYPT", 4), ("ETHIOPIA", 0),
           ("FRANCE", 3), ("GERMANY", 3), ("INDIA", 2), ("INDONESIA", 2), ("IRAN", 4), ("IRAQ", 4),
           ("JAPAN", 2), ("JORDAN", 4), ("KENYA", 0), ("MOROCCO", 0), ("MOZAMBIQUE", 0), ("PERU", 1),
           ("CHINA", 2), ("ROMANIA", 3), ("SAUDI ARABIA", 4), ("VIETNAM", 2), ("RUSSIA", 3),
           ("UNITED KINGDOM", 3), ("UNITED STATES", 1)]
REGIONS = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"]


def _pick(options: list[str], seed: str) -> str:
    """A SQL expression choosing one of ``options`` deterministically from ``seed``."""
    quoted = ", ".join("'" + o.replace("'", "''") + "'" for o in options)
    return f"([{quoted}])[1 + (hash({seed}) % {len(options)})::BIGINT]"


def _rand(seed: str, low: int, high: int) -> str:
    """A deterministic integer in [low, high] from ``seed``."""
    return f"({low} + (hash({seed}) % {high - low + 1})::BIGINT)"


def generate_tpch(connection: duckdb.DuckDBPyConnection, sf: float) -> str:
    try:
        connection.execute("LOAD tpch")
        connection.execute(f"CALL dbgen(sf={sf})")
        return "DuckDB tpch extension (dbgen)"
    except duckdb.Error:
        pass
    suppliers, parts, customers, orders = (max(1, int(n * sf)) for n in (10_000, 200_000, 150_000, 1_500_000))
    words = ["almond", "antique", "aquamarine", "azure", "beige", "bisque", "black", "blue", "blush", "brown",
             "burlywood", "chartreuse", "chocolate", "coral", "cornsilk", "cream", "cyan", "dark", "forest",
             "frosted", "gainsboro", "ghost", "goldenrod", "green", "grey", "honeydew", "hot", "indian", "ivory",
             "khaki", "lace", "lavender", "lemon", "light", "lime", "linen", "magenta", "maroon", "medium",
             "metallic", "midnight", "mint", "misty", "moccasin", "navajo", "navy", "olive", "orange", "orchid"]
    comment_words = ["furiously", "special", "requests", "carefully", "final", "deposits", "packages", "blithely",
                     "Customer", "Complaints", "ironic", "accounts", "pending", "quickly", "regular", "theodolites"]

    def comment(seed: str) -> str:
        return " || ' ' || ".join(_pick(comment_words, f"{seed}, {i}") for i in range(4))

    nations = ", ".join(f"({i}, '{n}', {r}, 'nation comment')" for i, (n, r) in enumerate(NATIONS))
    regions = ", ".join(f"({i}, '{r}', 'region comment')" for i, r in enumerate(REGIONS))
    statements = [
        "CREATE TABLE region (r_regionkey INTEGER, r_name VARCHAR, r_comment VARCHAR)",
        f"INSERT INTO region VALUES {regions}",
        "CREATE TABLE nation (n_nationkey INTEGER, n_name VARCHAR, n_regionkey INTEGER, n_comment VARCHAR)",
        f"INSERT INTO nation VALUES {nations}",
        f"""CREATE TABLE supplier AS SELECT i::INTEGER AS s_suppkey, 'Supplier#' || lpad(i::VARCHAR, 9, '0') AS s_name,
            'addr ' || i AS s_address, {_rand("i, 's1'", 0, 24)}::INTEGER AS s_nationkey,
            ({_rand("i, 's1'", 0, 24)} + 10)::VARCHAR || '-' || {_rand("i, 's2'", 100, 999)} || '-555-0100' AS s_phone,
            ({_rand("i, 's3'", -99999, 999999)} / 100.0)::DECIMAL(15,2) AS s_acctbal, {comment("i, 's4'")} AS s_comment
            FROM range(1, {suppliers} + 1) t(i)""",
        f"""CREATE TABLE part AS SELECT i::INTEGER AS p_partkey,
            {" || ' ' || ".join(_pick(words, f"i, 'pn{k}'") for k in range(5))} AS p_name,
            'Manufacturer#' || m AS p_mfgr, 'Brand#' || m || {_rand("i, 'pb'", 1, 5)} AS p_brand,
            {_pick(["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"], "i, 'pt1'")} || ' ' ||
            {_pick(["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"], "i, 'pt2'")} || ' ' ||
            {_pick(["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"], "i, 'pt3'")} AS p_type,
            {_rand("i, 'ps'", 1, 50)}::INTEGER AS p_size,
            {_pick(["SM", "LG", "MED", "JUMBO", "WRAP"], "i, 'pc1'")} || ' ' ||
            {_pick(["CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"], "i, 'pc2'")} AS p_container,
            ((90000 + (i / 10) % 20001 + 100 * (i % 1000)) / 100.0)::DECIMAL(15,2) AS p_retailprice,
            {comment("i, 'pm'")} AS p_comment
            FROM (SELECT i, {_rand("i, 'pm0'", 1, 5)} AS m FROM range(1, {parts} + 1) t(i))""",
        f"""CREATE TABLE partsupp AS SELECT p.p_partkey AS ps_partkey,
            ((p.p_partkey + k * ({suppliers} // 4 + (p.p_partkey - 1) // {suppliers})) % {suppliers} + 1)::INTEGER
              AS ps_suppkey,
            {_rand("p.p_partkey, k, 'pa'", 1, 9999)}::INTEGER AS ps_availqty,
            ({_rand("p.p_partkey, k, 'pc'", 100, 100000)} / 100.0)::DECIMAL(15,2) AS ps_supplycost,
            {comment("p.p_partkey, k, 'psm'")} AS ps_comment
            FROM part p, range(4) r(k)""",
        f"""CREATE TABLE customer AS SELECT i::INTEGER AS c_custkey, 'Customer#' || lpad(i::VARCHAR, 9, '0') AS c_name,
            'addr ' || i AS c_address, n::INTEGER AS c_nationkey,
            (n + 10)::VARCHAR || '-' || {_rand("i, 'c2'", 100, 999)} || '-555-0100' AS c_phone,
            ({_rand("i, 'c3'", -99999, 999999)} / 100.0)::DECIMAL(15,2) AS c_acctbal,
            {_pick(["AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD"], "i, 'c4'")} AS c_mktsegment,
            {comment("i, 'c5'")} AS c_comment
            FROM (SELECT i, {_rand("i, 'c1'", 0, 24)} AS n FROM range(1, {customers} + 1) t(i))""",
        # Only customers whose key is not a multiple of 3 place orders, as in dbgen.
        f"""CREATE TABLE orders AS SELECT i::INTEGER AS o_orderkey,
            (c - (CASE WHEN c % 3 = 0 THEN 1 ELSE 0 END))::INTEGER AS o_custkey,
            'O' AS o_orderstatus, 0::DECIMAL(15,2) AS o_totalprice,
            (DATE '1992-01-01' + {_rand("i, 'od'", 0, 2405)}::INTEGER) AS o_orderdate,
            {_pick(["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"], "i, 'op'")} AS o_orderpriority,
            'Clerk#' || lpad({_rand("i, 'ok'", 1, max(1, int(1000 * sf)))}::VARCHAR, 9, '0') AS o_clerk,
            0 AS o_shippriority, {comment("i, 'oc'")} AS o_comment
            FROM (SELECT i, {_rand("i, 'oc0'", 2, max(2, customers))} AS c FROM range(1, {orders} + 1) t(i))""",
        f"""CREATE TABLE lineitem AS SELECT o_orderkey AS l_orderkey, pk::INTEGER AS l_partkey,
            ((pk + s * ({suppliers} // 4 + (pk - 1) // {suppliers})) % {suppliers} + 1)::INTEGER AS l_suppkey,
            (n + 1)::INTEGER AS l_linenumber, qty::DECIMAL(15,2) AS l_quantity,
            (qty * (90000 + (pk / 10) % 20001 + 100 * (pk % 1000)) / 100.0)::DECIMAL(15,2) AS l_extendedprice,
            ({_rand("o_orderkey, n, 'ld'", 0, 10)} / 100.0)::DECIMAL(15,2) AS l_discount,
            ({_rand("o_orderkey, n, 'lt'", 0, 8)} / 100.0)::DECIMAL(15,2) AS l_tax,
            CASE WHEN receipt <= DATE '1995-06-17' THEN {_pick(["R", "A"], "o_orderkey, n, 'lr'")} ELSE 'N' END
              AS l_returnflag,
            CASE WHEN ship > DATE '1995-06-17' THEN 'O' ELSE 'F' END AS l_linestatus,
            ship AS l_shipdate, (o_orderdate + {_rand("o_orderkey, n, 'lc'", 30, 90)}::INTEGER) AS l_commitdate,
            receipt AS l_receiptdate,
            {_pick(["DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"], "o_orderkey, n, 'li'")}
              AS l_shipinstruct,
            {_pick(["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"], "o_orderkey, n, 'lm'")} AS l_shipmode,
            {comment("o_orderkey, n, 'lx'")} AS l_comment
            FROM (SELECT o_orderkey, o_orderdate, n,
                    {_rand("o_orderkey, n, 'lp'", 1, parts)} AS pk, {_rand("o_orderkey, n, 'ls'", 0, 3)} AS s,
                    {_rand("o_orderkey, n, 'lq'", 1, 50)} AS qty,
                    o_orderdate + {_rand("o_orderkey, n, 'lsd'", 1, 121)}::INTEGER AS ship,
                    o_orderdate + {_rand("o_orderkey, n, 'lsd'", 1, 121)}::INTEGER
                      + {_rand("o_orderkey, n, 'lrd'", 1, 30)}::INTEGER AS receipt
                  FROM orders, range(7) r(n) WHERE n < {_rand("o_orderkey, 'lines'", 1, 7)})""",
        """UPDATE orders SET o_totalprice = t.total, o_orderstatus = t.status FROM (
             SELECT l_orderkey, SUM(l_extendedprice * (1 + l_tax) * (1 - l_discount))::DECIMAL(15,2) AS total,
               CASE WHEN bool_and(l_linestatus = 'F') THEN 'F' WHEN bool_and(l_linestatus = 'O') THEN 'O'
                    ELSE 'P' END AS status
             FROM lineitem GROUP BY l_orderkey) t WHERE o_orderkey = t.l_orderkey""",
    ]
    for statement in statements:
        connection.execute(statement)
    return "generated in DuckDB (dbgen-like domains; the tpch extension is not installed)"


def introspect(connection: duckdb.DuckDBPyConnection) -> SchemaInfo:
    schema = SchemaInfo("duckdb")
    rows = connection.execute("SELECT table_name, column_name, data_type FROM information_schema.columns "
                              "ORDER BY table_name, ordinal_position").fetchall()
    for table, column, data_type in rows:
        if schema.table(table) is None:
            schema.add(TableInfo(table))
        schema.table(table).columns.append(ColumnInfo(column, data_type))
    return schema


def _median_seconds(action, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement; the median is kept")
    args = parser.parse_args()
    logging.getLogger("sqlglot").setLevel(logging.ERROR)

    spec = importlib.util.spec_from_file_location("fetch_test_data", ROOT / "scripts" / "fetch_test_data.py")
    corpora = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(corpora)
    if not corpora.present():
        corpora.fetch()
    queries = corpora.tpch_queries()

    connection = duckdb.connect()
    start = time.perf_counter()
    origin = generate_tpch(connection, args.sf)
    rows = connection.execute("SELECT count(*) FROM lineitem").fetchone()[0]
    print(f"TPC-H SF {args.sf}: {rows:,} lineitem rows, {origin}, {time.perf_counter() - start:.1f} s")
    schema = introspect(connection)
    threads = connection.execute("SELECT current_setting('threads')").fetchone()[0]
    import sqlglot.parser

    compiled = "compiled (sqlglotc)" if sqlglot.parser.__file__.endswith(".so") else "pure Python"
    print(f"DuckDB {duckdb.__version__}, {threads} threads; sqlglot {sqlglot.__version__} {compiled}; "
          f"median of {args.repeat} runs each\n")

    def validate(sql: str) -> None:
        verdict = check_safety(sql, "duckdb")  # parses once; pre-validation reuses the tree
        issues = prevalidate(verdict.statement, schema, "duckdb") if verdict.safe else []
        if not verdict.safe or issues:
            raise SystemExit(f"validation rejected a TPC-H query: {verdict.reason} {issues}")

    print(f"{'query':<9} {'validate ms':>12} {'execute ms':>11} {'ratio':>7}")
    total_validate = total_execute = 0.0
    ratios = []
    for name, sql, _ in queries:
        validate_s = _median_seconds(lambda: validate(sql), args.repeat)
        connection.execute(sql).fetchall()  # warm-up
        execute_s = _median_seconds(lambda: connection.execute(sql).fetchall(), args.repeat)
        total_validate += validate_s
        total_execute += execute_s
        ratios.append(validate_s / execute_s)
        print(f"{name:<9} {validate_s * 1000:>12.2f} {execute_s * 1000:>11.2f} {validate_s / execute_s:>7.1%}")
    ratio = total_validate / total_execute
    print(f"\ntotal     {total_validate * 1000:>12.2f} {total_execute * 1000:>11.2f} {ratio:>7.1%}")
    print(f"per-query ratio: median {statistics.median(ratios):.1%}, max {max(ratios):.1%}")
    verdict = "MET" if ratio < 0.10 else "NOT MET"
    print(f"target validation < 10 % of execution (total): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
