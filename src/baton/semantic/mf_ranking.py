"""How many group-by elements MetricFlow reads from a semantic model: how it ranks the models a
query with no metric could start from.

For ``mf query --group-by listing`` several semantic models hold the listing's key (the
listings, the bookings, the views, a mapping table); MetricFlow reads the rows of the one with
the fewest linkable elements that needs the fewest joins (its check query of
``distinct_values_query_with_metric_filter`` reads ``dim_lux_listing_id_mapping``). A model's
elements, as its source data set lists them: each dimension once per way to name it (bare, and
prefixed by each of its own primary, unique or natural entities), a time dimension at its own
grain, every coarser one and each date part at least as coarse; each entity once per such name
(not prefixed by itself). The date parts counted vary by MetricFlow version (``week``), so each
count is a range: a ranking is read only where it is beyond doubt (``Entity.elements``).
"""

from __future__ import annotations

from collections.abc import Mapping

_GRAINS = ("nanosecond", "microsecond", "millisecond", "second", "minute", "hour", "day", "week", "month", "quarter",
           "year")
_DATE_PARTS = {"year": "year", "quarter": "quarter", "month": "month", "day": "day", "dow": "day", "doy": "day"}
_LINKABLE = ("primary", "unique", "natural")


def _time_elements(grain: str) -> tuple[int, int]:
    at = _GRAINS.index(grain) if grain in _GRAINS else _GRAINS.index("day")
    parts = sum(1 for part in _DATE_PARTS.values() if _GRAINS.index(part) >= at)
    week_part = 1 if _GRAINS.index("week") >= at else 0  # a week date part, in some versions
    low = 1 + (len(_GRAINS) - 1 - at) + parts
    return low, low + week_part


def element_count(node: Mapping) -> tuple[int, int]:
    """(fewest, most) linkable elements MetricFlow's source data set of semantic model ``node`` has."""
    entities = [e for e in node.get("entities") or [] if isinstance(e, Mapping)]
    names = [str(e.get("name") or "") for e in entities]
    links = [n for n, e in zip(names, entities) if str(e.get("type") or "").lower() in _LINKABLE]
    primary = str(node.get("primary_entity") or "")
    if primary and primary not in links:
        links.append(primary)
    variants = 1 + len(links)
    low = high = 0
    for dim in node.get("dimensions") or []:
        if not isinstance(dim, Mapping):
            continue
        if str(dim.get("type") or "").lower() == "time":
            params = dim.get("type_params")
            grain = params.get("time_granularity") if isinstance(params, Mapping) else None
            a, b = _time_elements(str(grain or "day").lower())
        else:
            a = b = 1
        low, high = low + a * variants, high + b * variants
    entity_names = len(names) + sum(len(names) - (1 if link in names else 0) for link in links)
    return low + entity_names, high + entity_names


__all__ = ["element_count"]
