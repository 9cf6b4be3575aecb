"""The demo company's database: four business units, deterministic, built in about a second.

Seed 000's finance case (Pokemon, Epson, Roadshows, General) as a SQLite file, with the
gotchas the SQL specialist's learning heuristics exist for, on purpose:

- ``monthly_revenue.revenue_cents`` stores cents (divide by 100 for currency);
- ``roadshow_events`` is soft-deleted: cancelled events keep a ``deleted_at`` timestamp and
  must be filtered with ``deleted_at IS NULL``;
- ``sales_transactions`` is the large table (hundreds of thousands of rows): queries on it
  want a date filter or a LIMIT.

The same seed always gives the same file content, so verified answers stay verified.
"""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from pathlib import Path

UNITS = [
    (1, "Pokemon", "Trading cards, plush and licensed merchandise"),
    (2, "Epson", "Printers, projectors and ink distribution"),
    (3, "Roadshows", "Touring product shows and ticketed events"),
    (4, "General", "Corporate overhead and shared services"),
]
PRODUCTS = {
    1: [("Booster Packs", "cards"), ("Elite Trainer Box", "cards"), ("Pikachu Plush", "plush"), ("Collector Binder", "accessories")],
    2: [("EcoTank L3250", "printers"), ("Projector EF-12", "projectors"), ("Ink Bottle 104", "ink"), ("Label Printer LW", "printers")],
    3: [("Ticket Sales", "tickets"), ("Sponsorships", "sponsorship"), ("Merch Booth", "merchandise")],
    4: [("Internal Services", "services")],
}
CITIES = ["Madrid", "Barcelona", "Lisbon", "Paris", "Lyon", "Berlin", "Munich", "Milan", "Rome", "Amsterdam", "Brussels", "Vienna"]
COST_CATEGORIES = ["salaries", "marketing", "logistics", "rent", "software"]
MONTHS = [f"{y}-{m:02d}" for y in (2024, 2025) for m in range(1, 13)]
SALES_ROWS = 240_000

SCHEMA = """
CREATE TABLE business_units (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, description TEXT);
CREATE TABLE products (
    id INTEGER PRIMARY KEY, unit_id INTEGER NOT NULL REFERENCES business_units(id),
    name TEXT NOT NULL, category TEXT NOT NULL);
CREATE TABLE monthly_revenue (
    month TEXT NOT NULL, unit_id INTEGER NOT NULL REFERENCES business_units(id),
    product_id INTEGER NOT NULL REFERENCES products(id), revenue_cents INTEGER NOT NULL,
    PRIMARY KEY (month, product_id));
CREATE TABLE monthly_costs (
    month TEXT NOT NULL, unit_id INTEGER NOT NULL REFERENCES business_units(id),
    category TEXT NOT NULL, amount REAL NOT NULL, PRIMARY KEY (month, unit_id, category));
CREATE TABLE roadshow_events (
    id INTEGER PRIMARY KEY, city TEXT NOT NULL, event_date TEXT NOT NULL,
    tickets_sold INTEGER NOT NULL, ticket_price REAL NOT NULL, venue_cost REAL NOT NULL,
    deleted_at TEXT);
CREATE TABLE sales_transactions (
    id INTEGER PRIMARY KEY, unit_id INTEGER NOT NULL REFERENCES business_units(id),
    product_id INTEGER NOT NULL REFERENCES products(id), sold_at TEXT NOT NULL,
    quantity INTEGER NOT NULL, amount_cents INTEGER NOT NULL);
CREATE INDEX sales_transactions_sold_at ON sales_transactions (sold_at);
"""


def build_demo_database(path: str | Path, *, seed: int = 7, sales_rows: int = SALES_ROWS) -> Path:
    """Write the demo database to ``path`` (replacing it) and return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.unlink(missing_ok=True)
    rng = random.Random(seed)
    with sqlite3.connect(tmp) as db:
        db.executescript(SCHEMA)
        db.executemany("INSERT INTO business_units VALUES (?, ?, ?)", UNITS)
        products: list[tuple[int, int, str, str]] = []
        for unit_id, items in PRODUCTS.items():
            for name, category in items:
                products.append((len(products) + 1, unit_id, name, category))
        db.executemany("INSERT INTO products VALUES (?, ?, ?, ?)", products)
        db.executemany("INSERT INTO monthly_revenue VALUES (?, ?, ?, ?)", _revenue(rng, products))
        db.executemany("INSERT INTO monthly_costs VALUES (?, ?, ?, ?)", _costs(rng))
        db.executemany("INSERT INTO roadshow_events VALUES (?, ?, ?, ?, ?, ?, ?)", _events(rng))
        db.executemany("INSERT INTO sales_transactions VALUES (?, ?, ?, ?, ?, ?)", _sales(rng, products, sales_rows))
        db.execute("ANALYZE")
    db.close()
    tmp.replace(path)
    return path


def _revenue(rng: random.Random, products):
    for index, month in enumerate(MONTHS):
        season = 1.0 + 0.25 * (month.endswith(("-11", "-12")))
        for product_id, unit_id, _name, _category in products:
            base = {1: 180_000, 2: 240_000, 3: 90_000, 4: 15_000}[unit_id]
            growth = 1.0 + 0.012 * index
            yield month, unit_id, product_id, int(base * growth * season * rng.uniform(0.8, 1.2) * 100)


def _costs(rng: random.Random):
    for month in MONTHS:
        for unit_id, *_ in UNITS:
            for category in COST_CATEGORIES:
                base = {1: 60_000, 2: 90_000, 3: 40_000, 4: 70_000}[unit_id]
                yield month, unit_id, category, round(base * rng.uniform(0.1, 0.4), 2)


def _events(rng: random.Random):
    start = dt.date(2024, 1, 6)
    for event_id in range(1, 121):
        day = start + dt.timedelta(days=6 * event_id + rng.randint(0, 3))
        cancelled = rng.random() < 0.15
        deleted_at = (dt.datetime.combine(day, dt.time(9)) - dt.timedelta(days=10)).isoformat() if cancelled else None
        yield (event_id, rng.choice(CITIES), day.isoformat(), rng.randint(300, 4000),
               round(rng.uniform(15, 60), 2), round(rng.uniform(8_000, 45_000), 2), deleted_at)


def _sales(rng: random.Random, products, rows: int):
    start = dt.datetime(2024, 1, 1)
    span = int((dt.datetime(2026, 1, 1) - start).total_seconds())
    for sale_id in range(1, rows + 1):
        product_id, unit_id, _name, _category = products[rng.randrange(len(products))]
        quantity = rng.randint(1, 5)
        sold_at = start + dt.timedelta(seconds=rng.randrange(span))
        yield sale_id, unit_id, product_id, sold_at.isoformat(sep=" "), quantity, quantity * rng.randint(500, 9_000)
