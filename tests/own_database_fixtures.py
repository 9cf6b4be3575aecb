"""The two databases of the "your own database, without a model" benchmark (issue 28), and their questions.

- **shop**, ours: countries, customers (a soft-delete column), categories, products, orders
  (time and status on the header) and order_items (quantity, unit_price, line_total on the
  lines), the meaning in table and column comments. Generated from a fixed seed (the same
  rows every time, dates over 2023-2025) on PostgreSQL, MariaDB and DuckDB: ``build_shop``.
- **chinook**, nobody here wrote it: Luis Rocha's Chinook 1.4.5 PostgreSQL script (MIT,
  notice in ``fixtures/own_database/chinook/``), with the comments listed in the README
  there added: ``build_chinook``.
- **northwind**, nobody here wrote it either, held-out questions only: pthom/northwind_psql
  (Ms-PL, licence in ``fixtures/own_database/northwind/``), money as exact numbers and the
  comments listed in the README added: ``build_northwind``.

Each builder writes into a database its caller made (a fresh PostgreSQL or MariaDB database,
a DuckDB file), so tests and the bench never share tables with anyone. The questions
(``fixtures/own_database/<db>_questions.yaml``) carry gold SQL with time macros
(``{month(x)}``, ``{quarter(x)}``, ``{year(x)}``) expanded per engine by ``gold_sql``, so a
grain comes back as the same text the semantic layer writes (``2025-03``, ``2025-Q1``,
``2025``); ``run_gold`` runs one on an administrator connection.
"""

from __future__ import annotations

import contextlib
import gzip
import random
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "own_database"
CHINOOK_SQL = FIXTURES / "chinook" / "Chinook_PostgreSql.sql.gz"
SEED = 20251205
START, END = datetime(2023, 1, 1), datetime(2026, 1, 1)
ENGINES = ("postgres", "mysql", "duckdb")

# --- shop: schema ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # int | text | code | money | timestamp
    comment: str
    nullable: bool = False
    key: bool = False
    references: str | None = None  # "table(column)"


@dataclass(frozen=True)
class Table:
    name: str
    comment: str
    columns: tuple[Column, ...]


SHOP = (
    Table("countries", "Countries our customers live in", (
        Column("code", "code", "ISO 3166 two-letter country code", key=True),
        Column("name", "text", "Country name in English"),
        Column("region", "text", "Sales region the country belongs to"),
    )),
    Table("customers", "People and companies who signed up to the shop", (
        Column("customer_id", "int", "Customer number", key=True),
        Column("name", "text", "Customer's full name, or the company's name"),
        Column("email", "text", "Contact email address"),
        Column("country_code", "code", "Country the customer lives in", references="countries(code)"),
        Column("segment", "text", "Customer segment: consumer or business"),
        Column("signed_up_at", "timestamp", "When the customer signed up (a new customer)"),
        Column("deleted_at", "timestamp", "Soft delete: when the customer closed the account. Closed accounts are not "
                                          "counted as customers; their past orders still count in revenue", nullable=True),
    )),
    Table("categories", "Product categories of the catalogue", (
        Column("category_id", "int", "Category number", key=True),
        Column("name", "text", "Category name"),
    )),
    Table("products", "Products we sell", (
        Column("product_id", "int", "Product number", key=True),
        Column("name", "text", "Product name"),
        Column("category_id", "int", "Category of the product", references="categories(category_id)"),
        Column("list_price", "money", "Catalogue price of one unit, in euros"),
    )),
    Table("orders", "Orders placed by customers (the order header)", (
        Column("order_id", "int", "Order number", key=True),
        Column("customer_id", "int", "Customer who placed the order", references="customers(customer_id)"),
        Column("ordered_at", "timestamp", "When the order was placed"),
        Column("status", "text", "Fulfilment status: processing, shipped or delivered"),
        Column("shipping_fee", "money", "Shipping charged to the customer for the order, in euros"),
    )),
    Table("order_items", "Lines of an order: one product, its quantity and price", (
        Column("order_item_id", "int", "Order line number", key=True),
        Column("order_id", "int", "Order the line belongs to", references="orders(order_id)"),
        Column("product_id", "int", "Product sold on this line", references="products(product_id)"),
        Column("quantity", "int", "Units sold on this line"),
        Column("unit_price", "money", "Price of one unit on this line, in euros, after discount"),
        Column("line_total", "money", "Revenue of this line in euros (quantity times unit price)"),
    )),
)

_TYPES = {
    "postgres": {"int": "INTEGER", "text": "VARCHAR(120)", "code": "CHAR(2)", "money": "NUMERIC(12,2)", "timestamp": "TIMESTAMP"},
    "mysql": {"int": "INT", "text": "VARCHAR(120)", "code": "CHAR(2)", "money": "DECIMAL(12,2)", "timestamp": "DATETIME"},
    "duckdb": {"int": "INTEGER", "text": "VARCHAR", "code": "VARCHAR", "money": "DECIMAL(12,2)", "timestamp": "TIMESTAMP"},
}


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def shop_ddl(kind: str) -> list[str]:
    """CREATE TABLE statements (with foreign keys and comments) for ``kind``."""
    types = _TYPES[kind]
    statements: list[str] = []
    for table in SHOP:
        parts = []
        for c in table.columns:
            part = f"{c.name} {types[c.type]}{'' if c.nullable else ' NOT NULL'}"
            if kind == "mysql":
                part += f" COMMENT {_quote(c.comment)}"
            parts.append(part)
        parts += [f"PRIMARY KEY ({c.name})" for c in table.columns if c.key]
        parts += [f"FOREIGN KEY ({c.name}) REFERENCES {c.references}" for c in table.columns if c.references]
        tail = f" COMMENT={_quote(table.comment)}" if kind == "mysql" else ""
        statements.append(f"CREATE TABLE {table.name} (\n  " + ",\n  ".join(parts) + f"\n){tail}")
        if kind != "mysql":
            statements.append(f"COMMENT ON TABLE {table.name} IS {_quote(table.comment)}")
            statements += [f"COMMENT ON COLUMN {table.name}.{c.name} IS {_quote(c.comment)}" for c in table.columns]
    return statements


# --- shop: data -----------------------------------------------------------------------------

_COUNTRIES = [("DE", "Germany", "Europe", 18), ("FR", "France", "Europe", 12), ("GB", "United Kingdom", "Europe", 11),
              ("ES", "Spain", "Europe", 7), ("IT", "Italy", "Europe", 7), ("NL", "Netherlands", "Europe", 5),
              ("US", "United States", "North America", 20), ("CA", "Canada", "North America", 6),
              ("BR", "Brazil", "South America", 4), ("JP", "Japan", "Asia", 5), ("IN", "India", "Asia", 3),
              ("AU", "Australia", "Oceania", 2)]
_FIRST = ["Anna", "Ben", "Clara", "David", "Elena", "Felix", "Greta", "Hugo", "Ines", "Jonas", "Karin", "Luca", "Maya",
          "Noah", "Olga", "Paul", "Rosa", "Sami", "Tara", "Ugo", "Vera", "Wim", "Yara", "Zoe", "Aiko", "Bruno", "Chloe",
          "Diego", "Emma", "Farid"]
_LAST = ["Adler", "Berg", "Costa", "Dubois", "Eriksen", "Fischer", "Garcia", "Hansen", "Ito", "Jensen", "Keller",
         "Laurent", "Moreau", "Nakamura", "Olsen", "Petrov", "Quinn", "Rossi", "Schmidt", "Tanaka", "Umar", "Vogel",
         "Weber", "Xu", "Young", "Zimmer", "Silva", "Patel", "Murphy", "Novak"]
_COMPANY = ["Works", "Trading", "Studio", "Labs", "Supplies", "Partners"]
_CATALOGUE = {
    "Books": (["Atlas", "Cookbook", "Novel", "Field Guide", "Poetry Book", "Biography", "Comic", "Dictionary", "Travel Guide",
               "Art Book"], (8, 45)),
    "Electronics": (["Headphones", "Speaker", "Charger", "Keyboard", "Mouse", "Webcam", "Monitor", "Router", "Power Bank",
                     "Smartwatch"], (15, 320)),
    "Garden": (["Hose", "Rake", "Planter", "Seed Kit", "Shears", "Gloves", "Sprinkler", "Lantern", "Bird Feeder", "Compost Bin"],
               (6, 90)),
    "Kitchen": (["Kettle", "Knife Set", "Pan", "Blender", "Toaster", "Mug Set", "Cutting Board", "Grinder", "Teapot", "Scale"],
                (9, 150)),
    "Toys": (["Puzzle", "Kite", "Robot Kit", "Board Game", "Plush Bear", "Train Set", "Yo-yo", "Building Blocks", "Doll House",
              "Marble Run"], (5, 80)),
    "Sports": (["Yoga Mat", "Dumbbells", "Tennis Racket", "Football", "Bike Helmet", "Water Bottle", "Jump Rope", "Running Cap",
                "Swim Goggles", "Climbing Chalk"], (5, 130)),
}
N_CUSTOMERS, N_ORDERS = 700, 3000
_CENT = Decimal("0.01")


def _moment(rng: random.Random, lo: datetime, hi: datetime) -> datetime:
    return lo + timedelta(seconds=rng.randrange(int((hi - lo).total_seconds())))


def shop_rows() -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows, the same on every call (seeded)."""
    rng = random.Random(SEED)
    countries = [(code, name, region) for code, name, region, _ in _COUNTRIES]
    weights = [w for *_, w in _COUNTRIES]
    names: set[str] = set()
    customers = []
    for cid in range(1, N_CUSTOMERS + 1):
        business = rng.random() < 0.2
        while True:
            name = f"{rng.choice(_LAST)} {rng.choice(_COMPANY)}" if business else f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"
            if name not in names:
                break
        names.add(name)
        country = rng.choices(countries, weights)[0][0]
        signed = _moment(rng, START - timedelta(days=200) if cid <= 120 else START, END - timedelta(days=20))
        deleted = _moment(rng, max(signed, START), END) if rng.random() < 0.05 else None
        email = f"{name.lower().replace(' ', '.')}@example.com"
        customers.append((cid, name, email, country, "business" if business else "consumer", signed, deleted))
    categories = [(i, name) for i, name in enumerate(_CATALOGUE, 1)]
    products = []
    pid = 0
    for cat_id, (_, (items, (lo, hi))) in enumerate(_CATALOGUE.items(), 1):
        for item in items:
            pid += 1
            products.append((pid, item, cat_id, Decimal(rng.uniform(lo, hi)).quantize(_CENT)))
    loyalty = [rng.paretovariate(1.3) for _ in customers]
    orders, items_rows = [], []
    line = 0
    for oid in range(1, N_ORDERS + 1):
        customer = rng.choices(customers, loyalty)[0]
        lo = max(customer[5], START)
        hi = min(customer[6] or END, END - timedelta(hours=1))
        when = _moment(rng, lo, hi if hi > lo + timedelta(hours=1) else lo + timedelta(hours=1))
        subtotal = Decimal(0)
        for product in rng.sample(products, rng.choice([1, 1, 2, 2, 3, 4])):
            quantity = rng.choices([1, 2, 3, 4, 5], [50, 25, 12, 8, 5])[0]
            price = product[3] if rng.random() > 0.15 else (product[3] * Decimal("0.9")).quantize(_CENT)
            line += 1
            total = (price * quantity).quantize(_CENT)
            subtotal += total
            items_rows.append((line, oid, product[0], quantity, price, total))
        status = "delivered" if when < END - timedelta(days=30) else rng.choice(["processing", "shipped", "delivered"])
        status = "shipped" if status == "delivered" and rng.random() < 0.04 else status
        fee = Decimal("0.00") if subtotal >= 100 else Decimal("4.99")
        orders.append((oid, customer[0], when.replace(microsecond=0), status, fee))
    return {"countries": countries, "customers": customers, "categories": categories, "products": products,
            "orders": orders, "order_items": items_rows}


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, (int, Decimal)):
        return str(value)
    return _quote(str(value))


def build_shop(kind: str, target: str) -> None:
    """Create and fill the shop in ``target``: a SQLAlchemy admin URL of an empty database
    (PostgreSQL, MariaDB) or a DuckDB file path."""
    rows = shop_rows()
    if kind == "duckdb":
        import duckdb

        con = duckdb.connect(target)
        try:  # literal multi-row INSERTs: DuckDB's executemany takes a round trip per row
            for statement in shop_ddl(kind):
                con.execute(statement)
            for table in SHOP:
                for start in range(0, len(rows[table.name]), 1000):
                    values = ", ".join("(" + ", ".join(map(_literal, row)) + ")" for row in rows[table.name][start:start + 1000])
                    con.execute(f"INSERT INTO {table.name} VALUES {values}")
        finally:
            con.close()
        return
    import sqlalchemy as sa

    engine = sa.create_engine(target, poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as c:
            for statement in shop_ddl(kind):
                c.exec_driver_sql(statement)
            for table in SHOP:
                marks = ", ".join("%s" for _ in table.columns)
                c.exec_driver_sql(f"INSERT INTO {table.name} VALUES ({marks})", rows[table.name])
    finally:
        engine.dispose()


# --- chinook ----------------------------------------------------------------------------------

CHINOOK_COMMENTS = {  # listed in fixtures/own_database/chinook/README.md
    "invoice": "Invoices: one per purchase by a customer",
    "invoice.total": "Amount invoiced, in US dollars: the revenue of the invoice",
    "invoice.invoice_date": "When the purchase was made",
    "invoice_line": "Lines of an invoice: one track bought",
    "invoice_line.unit_price": "Price of one unit of the track on this line, in US dollars",
    "invoice_line.quantity": "Units sold on this line",
    "track.milliseconds": "Length of the track in milliseconds",
    "track.bytes": "Size of the track's file in bytes",
    "track.unit_price": "Catalogue price of the track, in US dollars",
    "customer.support_rep_id": "Employee who supports the customer",
}


def chinook_statements() -> str:
    """The Chinook script, without its own DROP/CREATE DATABASE and ``\\c`` (the caller's database is used)."""
    text = gzip.decompress(CHINOOK_SQL.read_bytes()).decode("utf-8")
    kept = [line for line in text.splitlines()
            if not re.match(r"\s*(DROP DATABASE|CREATE DATABASE|\\c)\b", line, re.IGNORECASE)]
    return "\n".join(kept)


def build_chinook(target: str) -> None:
    """Load Chinook into the empty PostgreSQL database at ``target`` (admin URL), comments added."""
    import sqlalchemy as sa

    engine = sa.create_engine(target, poolclass=sa.pool.NullPool)
    raw = engine.raw_connection()
    try:  # the driver's own cursor: the script's text is not a template for parameters
        with raw.cursor() as cursor:
            cursor.execute(chinook_statements())
            for part, comment in CHINOOK_COMMENTS.items():
                kind = "COLUMN" if "." in part else "TABLE"
                cursor.execute(f"COMMENT ON {kind} {part} IS {_quote(comment)}")
        raw.commit()
    finally:
        raw.close()
        engine.dispose()


# --- northwind (held out: nobody here wrote it, and no question of the first sets reads it) ----

NORTHWIND_SQL = FIXTURES / "northwind" / "northwind.sql.gz"
NORTHWIND_COMMENTS = {  # listed in fixtures/own_database/README.md
    "orders": "Orders placed by customers (the order header)",
    "orders.order_date": "When the order was placed",
    "orders.freight": "Freight charged for the order, in US dollars",
    "order_details": "Lines of an order: one product, its quantity, price and discount",
    "order_details.unit_price": "Price of one unit on this line, in US dollars, before the discount",
    "order_details.quantity": "Units sold on this line",
    "order_details.discount": "Discount on this line, a fraction (0.15 is 15 %); revenue is unit_price * quantity * (1 - discount)",
    "products.unit_price": "Catalogue price of one unit, in US dollars",
    "products.units_in_stock": "Units in stock",
    "products.discontinued": "1 when the product is no longer sold",
}
# Money and the discount stored as exact numbers instead of ``real`` (float4), as a careful owner
# would, so a sum reads the same whatever order an engine adds in (listed in the README).
NORTHWIND_NUMERIC = {"order_details.unit_price": "NUMERIC(10,2)", "order_details.discount": "NUMERIC(4,2)",
                     "orders.freight": "NUMERIC(10,2)", "products.unit_price": "NUMERIC(10,2)"}


def build_northwind(target: str) -> None:
    """Load Northwind (pthom/northwind_psql) into the empty PostgreSQL database at ``target``
    (admin URL): its script as published, then exact money types and the comments above."""
    import sqlalchemy as sa

    engine = sa.create_engine(target, poolclass=sa.pool.NullPool)
    raw = engine.raw_connection()
    try:
        with raw.cursor() as cursor:
            cursor.execute(gzip.decompress(NORTHWIND_SQL.read_bytes()).decode("utf-8"))
            for part, kind in NORTHWIND_NUMERIC.items():
                table, column = part.split(".")
                cursor.execute(f"ALTER TABLE {table} ALTER COLUMN {column} TYPE {kind} USING ROUND({column}::numeric, 2)")
            for part, comment in NORTHWIND_COMMENTS.items():
                cursor.execute(f"COMMENT ON {'COLUMN' if '.' in part else 'TABLE'} {part} IS {_quote(comment)}")
        raw.commit()
    finally:
        raw.close()
        engine.dispose()


@contextlib.contextmanager
def fresh_mysql_database(server_url: str, prefix: str = "baton_own") -> Iterator[str]:
    """A new, empty MariaDB/MySQL database (its admin URL), dropped afterwards."""
    import sqlalchemy as sa

    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(server_url, poolclass=sa.pool.NullPool)
    with admin.begin() as c:
        c.exec_driver_sql(f"CREATE DATABASE {name}")
    try:
        yield sa.make_url(server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.begin() as c:
            c.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}")
        admin.dispose()


# --- questions and gold -----------------------------------------------------------------------

_MACROS = {
    "postgres": {"month": "TO_CHAR({x}, 'YYYY-MM')", "year": "TO_CHAR({x}, 'YYYY')", "quarter": "TO_CHAR({x}, 'YYYY-\"Q\"Q')"},
    "mysql": {"month": "DATE_FORMAT({x}, '%Y-%m')", "year": "DATE_FORMAT({x}, '%Y')",
              "quarter": "CONCAT(YEAR({x}), '-Q', QUARTER({x}))"},
    "duckdb": {"month": "STRFTIME({x}, '%Y-%m')", "year": "STRFTIME({x}, '%Y')",
               "quarter": "STRFTIME({x}, '%Y') || '-Q' || CAST(QUARTER({x}) AS VARCHAR)"},
}
_MACRO = re.compile(r"\{(month|year|quarter)\(([^(){}]+)\)\}")


@dataclass(frozen=True)
class Case:
    question: str
    sql: str  # with macros; ``gold_sql`` expands them
    ordered: bool = False
    sql_by_engine: tuple[tuple[str, str], ...] = ()

    def gold_sql(self, kind: str) -> str:
        sql = dict(self.sql_by_engine).get(kind, self.sql)
        return _MACRO.sub(lambda m: _MACROS[kind][m.group(1)].format(x=m.group(2).strip()), sql)


def load_questions(database: str, held_out: bool = False) -> list[Case]:
    """The questions of ``database`` (``shop``, ``chinook``; ``northwind`` has only held-out ones); ``held_out``: the held-out set
    (``<db>_heldout.yaml``, written without reading the first set or the parser, so nothing
    was fitted to it)."""
    data = yaml.safe_load((FIXTURES / f"{database}_{'heldout' if held_out else 'questions'}.yaml").read_text(encoding="utf-8"))
    return [Case(q["q"], q["sql"], bool(q.get("ordered")), tuple(sorted((q.get("sql_by_engine") or {}).items())))
            for q in data["questions"]]


def run_gold(kind: str, target: str, sql: str) -> list[list[Any]]:
    """Rows of ``sql`` on ``target`` (an admin SQLAlchemy URL, or a DuckDB file path)."""
    if kind == "duckdb":
        import duckdb

        con = duckdb.connect(target, read_only=True)
        try:
            return [list(r) for r in con.execute(sql).fetchall()]
        finally:
            con.close()
    import sqlalchemy as sa

    engine = sa.create_engine(target, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as c:
            return [list(r) for r in c.exec_driver_sql(sql.replace("%", "%%") if kind == "mysql" else sql).fetchall()]
    finally:
        engine.dispose()


__all__ = ["CHINOOK_COMMENTS", "ENGINES", "NORTHWIND_COMMENTS", "SHOP", "Case", "build_chinook", "build_northwind", "build_shop",
           "chinook_statements", "fresh_mysql_database", "load_questions", "run_gold", "shop_ddl", "shop_rows"]
