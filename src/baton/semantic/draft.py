"""Drafting a semantic model from a database's schema (``baton semantic init --database URL``).

The draft is meant to be asked at once, so it names things the way people ask for them and
aggregates them the way an analyst would; what it cannot know it says, in a checklist.

- **Entities**: one per table, joined along its foreign keys. Its **time** is its own event
  column (``ordered_at``, ``invoice_date``; never ``updated_at``, ``deleted_at``, a birth
  date), or, for a table with none, the time of the header it belongs to, reached through
  its joins (order lines are dated by their order's ``ordered_at``; a sign-up or hire date
  is no header's time).
- **Counts**: one metric per entity, named for what it counts (``customers``, ``orders``:
  "How many customers"), ``new <entities>`` too where its time is its own.
- **Numbers**: prices, rates, percentages, scores, lengths and sizes are **averaged**
  (``average_unit_price``), never summed; other numbers are summed. A metric is named from
  the business term its comment names ("Revenue of this line" -> ``revenue``), else from its
  column's words; its synonyms are the column's words, the comment's head ("units sold")
  and the usual words for the term (revenue: sales, turnover). Names shared by two tables
  get the table's name in front. ``*_cents`` is divided by 100.
- **Soft deletes** (``deleted_at``, ``is_deleted``): the table's own measures leave deleted
  rows out (``deleted_at IS NULL``), said in a comment and in the checklist.
- **Dimensions**: an entity's label (its ``name``, ``title``, first and last name) named
  for the entity (``customer``: "top 5 customers by revenue"); text columns of at most
  ``CATEGORICAL`` distinct values (read from the data) as categorical dimensions; others are
  left out, and listed in the checklist.
- **Across tables** (``derived.py``): average values and numbers per header
  (``average_order_value`` = revenue / orders, "average units per order"), and the lines'
  revenue offered where a header's total cannot be broken down.

``draft_model`` returns a ``Draft``: the model (the YAML's dict form), the decisions it made
(printed), and the checklist (``checklist.py``): what a person should check, each item with the
edit that follows its suggestion, for a script to apply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from baton.semantic.checklist import CheckItem
from baton.semantic.columns import (
    AVERAGED,
    EVENT_TIME,
    FRACTION,
    LABELS,
    NOT_A_DIMENSION,
    NOT_A_MEASURE,
    NOT_EVENT_TIME,
    NUMERIC,
    SINCE_TIME,
    SOFT_DELETE,
    TEMPORAL,
    TEXT,
    TITLES,
    distinct_count,
    is_key,
    plain,
    row_count,
    time_format,
)
from baton.semantic.derived import average_values, line_revenue, per_header
from baton.semantic.naming import unique_names
from baton.semantic.words import (
    SYNONYMS,
    comment_formula,
    comment_head,
    comment_term,
    name_words,
    phrase_plural,
    phrase_singular,
    said,
    snake,
)

if TYPE_CHECKING:
    from baton.specialists.sql.connection import SQLConnection
    from baton.specialists.sql.schema import ColumnInfo, TableInfo

CATEGORICAL = 100  # at most this many distinct values: a categorical dimension
LABEL_VALUES = 1000  # a label with more values is not indexed for questions
DRAFT_HEADER = (
    "# A draft semantic model written by `baton semantic init` from the database's schema and data.\n"
    "# It can be asked at once; check it with the checklist `baton semantic init` printed, then:\n"
    "# baton semantic check FILE --database URL\n"
)


@dataclass
class Draft:
    model: dict[str, Any]
    decisions: list[str] = field(default_factory=list)
    checklist: list[CheckItem] = field(default_factory=list)


@dataclass
class _Table:
    info: TableInfo
    entity: str
    keys: set[str]
    foreign: set[str]
    rows: int = 0
    time: dict[str, Any] | None = None
    own_time: bool = False
    soft_delete: str = ""
    label: str = ""


def _described(comment: str) -> dict[str, str]:
    """A database comment as a draft part's description (flattened, trimmed), if it has one."""
    text = " ".join(comment.split())[:300]
    return {"description": text} if text else {}


class _Drafter:
    def __init__(self, connection: SQLConnection, name: str) -> None:
        self.connection = connection
        self.name = name
        self.tables: dict[str, _Table] = {}
        self.entities: list[dict[str, Any]] = []
        self.measures: list[dict[str, Any]] = []
        self.metrics: list[dict[str, Any]] = []
        self.dimensions: list[dict[str, Any]] = []
        self.draft = Draft({})

    def decide(self, text: str) -> None:
        self.draft.decisions.append(text)

    def check(self, kind: str, target: str, suggestion: str, *apply: dict[str, Any]) -> None:
        self.draft.checklist.append(CheckItem(kind, target, suggestion, tuple(apply)))

    async def run(self) -> Draft:

        schema = await self.connection.schema()
        for info in sorted(schema.tables.values(), key=lambda t: t.name):
            if not plain(info.name):
                continue
            keys = {c.name for c in info.columns if c.primary_key}
            foreign = {col for fk in info.foreign_keys for col in fk.columns}
            entity = snake(info.name) or info.name
            table = _Table(info, entity, keys, foreign)
            table.label = self._label_column(table)
            table.rows = await row_count(self.connection, info.name)
            self.tables[info.name.lower()] = table
        for table in self.tables.values():
            await self._own_time(table)
        for table in self.tables.values():
            self._header_time(table)
        for table in self.tables.values():
            await self._entity(table)
        average_values(self)
        per_header(self)
        line_revenue(self)
        unique_names(self.metrics, self.dimensions, self.check)
        self.draft.model = {"name": self.name, "entities": self.entities, "measures": self.measures, "metrics": self.metrics,
                            "dimensions": self.dimensions}
        return self.draft

    # --- time -----------------------------------------------------------------------------------

    async def _own_time(self, table: _Table) -> None:
        found: list[tuple[int, str, str]] = []
        for column in table.info.columns:
            if not plain(column.name) or column.name in table.foreign or NOT_EVENT_TIME.search(column.name):
                continue
            if column.name in table.keys and len(table.keys) == 1:
                continue
            fmt = await time_format(self.connection, table.info.name, column)
            if fmt is not None:
                rank = 0 if EVENT_TIME.search(column.name) else 2 if SINCE_TIME.search(column.name) else 1
                found.append((rank, column.name, fmt))
        if found:
            _, column_name, fmt = min(found, key=lambda f: f[0])
            table.time = {"column": column_name, "format": fmt}
            table.own_time = True
        for column in table.info.columns:
            if SOFT_DELETE.match(column.name):
                table.soft_delete = column.name

    def _header_time(self, table: _Table) -> None:
        """A table with no time of its own is dated by the header it belongs to (module docstring)."""
        if table.time is not None:
            return
        headers: list[tuple[int, _Table, dict[str, Any]]] = []
        for fk in table.info.foreign_keys:
            parent = self.tables.get(fk.ref_table.lower())
            if parent is None or not parent.own_time or parent.time is None or SINCE_TIME.search(parent.time["column"]):
                continue
            headers.append((parent.rows, parent, parent.time))
        if not headers:
            return
        _, parent, time = max(headers, key=lambda h: h[0])
        table.time = {**time, "entity": parent.entity}
        self.decide(f"entity {table.entity}: dated by {parent.info.name}.{time['column']} (through its join)")
        for _, other, other_time in headers:
            if other is not parent:
                self.check("time", f"entity {table.entity}", f"dated by {parent.info.name}.{time['column']}; "
                           f"or by {other.info.name}.{other_time['column']}?")

    # --- one table ------------------------------------------------------------------------------

    async def _entity(self, table: _Table) -> None:
        info = table.info
        entity: dict[str, Any] = {"name": table.entity, "table": info.name, **_described(info.description)}
        if table.time is not None:
            entity["time"] = dict(table.time)
        joins = []
        for fk in info.foreign_keys:
            parent = self.tables.get(fk.ref_table.lower())
            if parent is not None and len(fk.columns) == len(fk.ref_columns) == 1:
                joins.append({"to": parent.entity, "on": dict(zip(fk.columns, fk.ref_columns))})
        if joins:
            entity["joins"] = joins
        self.entities.append(entity)
        row_filter = self._soft_delete(table)
        counted = phrase_plural(said(info.name))
        count: dict[str, Any] = {"name": f"{table.entity}_count", "entity": table.entity, "agg": "count", "expr": "1"}
        if row_filter:
            count["filter"] = row_filter
        self.measures.append(count)
        synonyms = [f"new {counted}"] if table.own_time else []
        self.metrics.append({"name": snake(counted), "measure": count["name"], "decimals": 0, "synonyms": synonyms,
                             "description": f"Number of {counted}" + (" (deleted rows left out)" if row_filter else "")})
        self.decide(f"metric {snake(counted)}: count of {info.name} rows" + (f" where {row_filter}" if row_filter else ""))
        time_column = table.time["column"] if table.own_time and table.time else None
        for column in info.columns:
            if not plain(column.name) or column.name == time_column or is_key(column.name, table.keys, table.foreign) or SOFT_DELETE.match(column.name):
                continue
            kind = column.type or ""
            if NUMERIC.search(kind) and not TEMPORAL.search(kind):
                self._measure(table, column, row_filter)
            elif TEXT.search(kind or "text") and column.name != table.label:
                await self._dimension(table, column)
        self._formulas(table, row_filter)
        await self._label(table)

    def _formulas(self, table: _Table, row_filter: str) -> None:
        """A business term a comment defines over this table's columns ("revenue is unit_price * quantity *
        (1 - discount)") becomes its own measure and metric: the owner's definition, checked as any expression."""
        from baton.semantic.errors import SemanticModelError
        from baton.semantic.expressions import columns_of

        done: set[str] = set()
        for source, comment in [(table.info.name, table.info.description), *((f"{table.info.name}.{c.name}", c.description)
                                                                             for c in table.info.columns)]:
            term, expr = comment_formula(" ".join(comment.split()))
            if not term or term in done:
                continue
            try:
                columns = columns_of(expr, f"the comment on {source}")
            except SemanticModelError:
                continue
            if not columns or any(table.info.column(c) is None for c in columns):
                continue
            done.add(term)
            measure = {"name": f"{table.entity}_{snake(term)}", "entity": table.entity, "agg": "sum", "expr": expr}
            if row_filter:
                measure["filter"] = row_filter
            self.measures.append(measure)
            self.metrics.append({"name": snake(term), "measure": measure["name"], "synonyms": list(SYNONYMS.get(term, ())),
                                 "description": f"{term} = {expr} (the comment on {source})", "_entity": table.entity})
            self.decide(f"metric {snake(term)}: sum of {table.info.name}.{expr}, as the comment on {source} defines it")

    def _soft_delete(self, table: _Table) -> str:
        if not table.soft_delete:
            return ""
        column = table.info.column(table.soft_delete)
        flag = column is not None and not table.soft_delete.lower().endswith(("_at", "_on")) and not TEXT.search(column.type or "text") \
            and not TEMPORAL.search(column.type or "")
        row_filter = f"{table.soft_delete} = 0" if flag else f"{table.soft_delete} IS NULL"
        self.decide(f"entity {table.entity}: rows with {table.soft_delete} set are deleted: its measures leave them out")
        self.check("soft-delete", f"entity {table.entity}", f"rows with {table.soft_delete} set are left out of its measures "
                   f"({row_filter}); remove the filter if deleted rows still count")
        return row_filter

    def _measure(self, table: _Table, column: ColumnInfo, row_filter: str) -> None:
        words = said(column.name)
        comment = " ".join(column.description.split())
        head, term = comment_head(comment), comment_term(comment)
        expr = column.name
        if words.endswith(" cents") or words == "cents":
            words = words[: -len("cents")].strip() or "amount"
            expr = f"{column.name} / 100.0"
            self.check("unit", f"column {table.info.name}.{column.name}", "cents: divided by 100 into the currency; keep it?")
        if NOT_A_MEASURE.search(column.name) and not AVERAGED.search(column.name):
            self.check("metric", f"column {table.info.name}.{column.name}", "a number that is no amount (left out); add a measure if it is one")
            return
        averaged = bool(AVERAGED.search(column.name) or AVERAGED.search(head) or FRACTION.search(comment))
        base = head if averaged and head and head not in ("price",) else words
        name_words_ = term if term and not averaged else base
        synonyms = [w for w in dict.fromkeys([words, head, *SYNONYMS.get(name_words_, ()), *SYNONYMS.get(words, ())]) if w and w != name_words_]
        measure = {"name": f"{table.entity}_{snake(words)}", "entity": table.entity, "agg": "avg" if averaged else "sum", "expr": expr,
                   **_described(comment)}
        if row_filter:
            measure["filter"] = row_filter
        self.measures.append(measure)
        if averaged:
            entity_word = phrase_singular(said(table.info.name))
            phrases = list(dict.fromkeys([name_words_, *synonyms, f"{entity_word} {name_words_}",
                                          f"{entity_word} {name_words_.split()[-1]}"]))  # "average product price"
            metric_synonyms = [f"{lead} {p}" for p in phrases for lead in ("average", "avg", "mean")]
            metric = {"name": snake(f"average {name_words_}"), "measure": measure["name"], "synonyms": metric_synonyms[1:],
                      "label": f"average {name_words_}", **_described(comment)}
            self.decide(f"metric {metric['name']}: average of {table.info.name}.{column.name} (a price, rate or measurement "
                        "is never summed)")
        else:
            metric = {"name": snake(name_words_), "measure": measure["name"], "synonyms": synonyms, **_described(comment)}
            self.decide(f"metric {metric['name']}: sum of {table.info.name}.{expr}" + (f" (its comment: {comment[:60]!r})" if comment else "")
                        + (f", synonyms: {', '.join(synonyms)}" if synonyms else ""))
        metric["_entity"] = table.entity
        self.metrics.append(metric)

    async def _dimension(self, table: _Table, column: ColumnInfo) -> None:
        if column.name.lower() in (*LABELS, *TITLES) or NOT_A_DIMENSION.search(column.name):
            return
        distinct = await distinct_count(self.connection, table.info.name, column.name)
        target = f"column {table.info.name}.{column.name}"
        words = said(column.name)
        entity_word = phrase_singular(said(table.info.name))
        dimension = {"name": snake(words), "entity": table.entity, "expr": column.name,
                     "synonyms": [f"{entity_word} {words}"] if not words.startswith(entity_word) else [],
                     **_described(column.description), "_entity": table.entity, "_values": distinct or 0}
        if distinct is not None and distinct <= 1 and table.rows > 1:
            self.check("dimension", target, f"{distinct} distinct value: left out")
            return
        if distinct is None or distinct > CATEGORICAL:
            self.check("dimension", target, f"{distinct if distinct is not None else 'unknown'} distinct values: left out; "
                       "add it if people group by it", {"op": "add", "path": ["dimensions"], "value": {
                           k: v for k, v in dimension.items() if not k.startswith("_")} | {"index_values": False}})
            return
        self.dimensions.append(dimension)
        self.decide(f"dimension {dimension['name']}: {table.info.name}.{column.name} ({distinct} distinct values)")

    def _label_column(self, table: _Table) -> str:
        """What names a row: ``name``, ``<table>_name`` (``category_name``), ``company_name``, first and last
        name, another ``*_name``, a title."""
        columns = {c.name.lower(): c.name for c in table.info.columns if plain(c.name) and TEXT.search(c.type or "text")}
        own = f"{snake(phrase_singular(said(table.info.name)))}_name"
        found = next((columns[n] for n in (*LABELS, own, "company_name") if n in columns), "")
        first = next((columns[n] for n in ("first_name", "firstname") if n in columns), "")
        last = next((columns[n] for n in ("last_name", "lastname", "surname") if n in columns), "")
        if not found and first and last:
            return f"{first} || ' ' || {last}"
        named = [v for k, v in columns.items() if k.endswith("_name") and k not in ("first_name", "last_name")]
        return found or (named[0] if named else "") or next((columns[n] for n in TITLES if n in columns), "")

    async def _label(self, table: _Table) -> None:
        """The entity's label (its name), as a dimension named for the entity: "top 5 customers by revenue"."""
        expr = table.label
        if not expr or not table.keys:
            return
        entity_word = phrase_singular(said(table.info.name))
        distinct = await distinct_count(self.connection, table.info.name, expr) if plain(expr) else table.rows
        label: dict[str, Any] = {"name": snake(entity_word), "entity": table.entity, "expr": expr,
                 "synonyms": [f"{entity_word} name", f"{entity_word} {said(expr)}"] if plain(expr) else [f"{entity_word} name"],
                 "index_values": (distinct or 0) <= LABEL_VALUES, "_entity": table.entity, "_label": True}
        label["_values"] = distinct or 0
        for other in self.tables.values():  # a key that says its role: customer.support_rep_id -> "support rep"
            for fk in other.info.foreign_keys:
                role = " ".join(w for w in name_words(fk.columns[0]) if w not in ("id", "key", "fk")) if len(fk.columns) == 1 else ""
                if fk.ref_table.lower() == table.info.name.lower() and other is not table and role and role not in (
                        entity_word, said(table.info.name)):
                    label["synonyms"].append(role)
        if distinct is not None and distinct < table.rows and len(table.keys) == 1:  # two tracks of one name stay two rows
            key = {"name": snake(f"{entity_word} id"), "entity": table.entity, "expr": next(iter(table.keys)), "index_values": False}
            label["shown_with"] = [key["name"]]
            self.dimensions.append(key)
            self.decide(f"dimension {label['name']}: shown with its key {table.info.name}.{key['expr']} ({distinct} names "
                        f"for {table.rows} rows)")
        self.dimensions.append(label)
        self.decide(f"dimension {label['name']}: {table.info.name}.{expr}, the label of its rows")


def draft_text(draft: Draft) -> str:
    """The draft as the YAML file ``baton semantic init`` writes: a header, the checklist as comments, the model."""
    import yaml

    lines = [DRAFT_HEADER, *(f"# {item.line}\n" for item in draft.checklist)]
    return "".join(lines) + yaml.safe_dump(draft.model, sort_keys=False, allow_unicode=True)


async def draft_model(connection: SQLConnection, name: str = "draft") -> Draft:
    """A draft model of the database (module docstring)."""
    return await _Drafter(connection, name).run()


__all__ = ["CATEGORICAL", "CheckItem", "DRAFT_HEADER", "Draft", "draft_model", "draft_text"]
