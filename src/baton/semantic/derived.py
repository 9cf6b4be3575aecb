"""Metrics a draft derives across tables (``draft.py``): what no single column holds.

- ``average_values``: where a revenue reaches a header that is counted, its average value per
  header (``average_order_value`` = revenue / orders; "average invoice total");
- ``per_header``: each other summed number of a header or its lines per header ("average units
  per order");
- ``line_revenue``: a revenue that is a header's total cannot be broken down by what only its
  lines reach (an invoice's total by genre); where the lines hold a price and a quantity, the
  checklist offers their product instead.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from baton.semantic.columns import NUMERIC, is_key
from baton.semantic.words import phrase_plural, phrase_singular, said, snake

if TYPE_CHECKING:
    from baton.semantic.draft import _Drafter


def average_values(d: _Drafter) -> None:
    """Average value per counted entity: revenue / orders, where revenue reaches that entity."""
    revenue = [m for m in d.metrics if m["name"] == "revenue"]
    if len(revenue) != 1:
        return
    holder = revenue[0]["_entity"]
    parents = {holder} | {j["to"] for e in d.entities if e["name"] == holder for j in e.get("joins", ())}
    headers = {j["to"] for e in d.entities for j in e.get("joins", ())}  # what other rows belong to: an order, an invoice
    for table in d.tables.values():
        if table.entity not in parents or table.entity not in headers or table.time is None or not table.own_time:
            continue
        counted = phrase_plural(said(table.info.name))
        one = phrase_singular(said(table.info.name))
        name = snake(f"average {one} value")
        synonyms = [f"avg {one} value", f"mean {one} value", f"average revenue per {one}", f"revenue per {one}",
                    f"average {one} amount", f"average {one} total"]
        if table.entity == holder:  # the revenue is the header's own total: "average invoice total"
            synonyms += [f"average {one} {s}" for s in revenue[0]["synonyms"]]
        d.metrics.append({"name": name, "type": "ratio", "numerator": "revenue", "denominator": snake(counted),
                             "label": f"average {one} value", "synonyms": synonyms})
        d.decide(f"metric {name}: revenue / {snake(counted)}")

def per_header(d: _Drafter) -> None:
    """Each summed number of a header or its lines per header: "average units per order" (units / orders)."""
    headers = {j["to"] for e in d.entities for j in e.get("joins", ())}
    for table in d.tables.values():
        if table.entity not in headers or not table.own_time:
            continue
        lines = {e["name"] for e in d.entities if any(j["to"] == table.entity for j in e.get("joins", ()))}
        one, counted = phrase_singular(said(table.info.name)), snake(phrase_plural(said(table.info.name)))
        for metric in list(d.metrics):
            measure = next((m for m in d.measures if m["name"] == metric.get("measure")), None)
            if metric["name"] == "revenue" or measure is None or measure["agg"] != "sum" or \
                    measure["entity"] not in lines | {table.entity}:
                continue
            words = [said(metric["name"]), *metric.get("synonyms", ())]
            name = snake(f"average {words[0]} per {one}")
            d.metrics.append({"name": name, "type": "ratio", "numerator": metric["name"], "denominator": counted,
                                 "label": f"average {words[0]} per {one}",
                                 "synonyms": [f"{lead}{w} per {one}" for w in words for lead in ("average ", "avg ", "")][1:]})
            d.decide(f"metric {name}: {metric['name']} / {counted}")

def line_revenue(d: _Drafter) -> None:
    """A revenue that is a header's total cannot be broken down by what only its lines reach (an
    invoice's total by genre): where the lines hold a price and a quantity, the checklist offers them."""
    revenue = [m for m in d.metrics if m["name"] == "revenue"]
    if len(revenue) != 1:
        return
    holder = revenue[0]["_entity"]
    for table in d.tables.values():
        joins = [j["to"] for e in d.entities if e["name"] == table.entity for j in e.get("joins", ())]
        if holder not in joins or len(joins) < 2:
            continue
        numeric = [c.name for c in table.info.columns if NUMERIC.search(c.type or "") and not is_key(c.name, table.keys, table.foreign)]
        price = next((c for c in numeric if re.search("price", c, re.IGNORECASE)), "")
        quantity = next((c for c in numeric if re.search("quantity|qty|units", c, re.IGNORECASE)), "")
        if not price or not quantity:
            continue
        measure = {"name": f"{table.entity}_revenue", "entity": table.entity, "agg": "sum", "expr": f"{price} * {quantity}"}
        others = ", ".join(j for j in joins if j != holder)
        d.check("metric", "metric revenue", f"it is the total of {holder}, which cannot be broken down by what only "
                   f"{table.info.name} reaches ({others}); {table.info.name}.{price} * {quantity} can: use it",
                   {"op": "add", "path": ["measures"], "value": measure},
                   {"op": "set", "path": ["metrics", "revenue", "measure"], "value": measure["name"]})


__all__ = ["average_values", "line_revenue", "per_header"]
