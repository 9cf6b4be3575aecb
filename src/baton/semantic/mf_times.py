"""MetricFlow's time dimensions as the model's ``TimeDimension``s: what a query may group by
besides metric time (``listing__ds__month``, ``user__bio_added_ts__second``, a partition).

Each readable ``type: time`` dimension of a semantic model answers to ``<entity>__<name>`` for
each of the model's own entities (as MetricFlow qualifies it); its grain when a query names none
is its ``time_granularity`` (sub-daily ones included), else day; a custom grain's is left out. One whose expression Baton does
not read, or of a semantic model with SCD ``validity_params``, is left out (a query naming it is
told no such dimension exists, never answered another way).
"""

from __future__ import annotations

from baton.semantic.mf_models import Reading, mapping
from baton.semantic.model import TimeColumn, TimeDimension
from baton.semantic.timegrain import SUBDAILY
from baton.semantic.timegroup import ALL_GRAINS


def time_dimensions(reading: Reading) -> tuple[TimeDimension, ...]:
    """Every readable time dimension of the project (module docstring)."""
    out = []
    for info in reading.models.values():
        if info.scd:
            continue
        nodes = {str(d.get("name")): d for d in info.node.get("dimensions") or []}
        for name, time in info.times.items():
            if not isinstance(time, TimeColumn):
                continue
            declared = str(mapping(nodes[name].get("type_params")).get("time_granularity") or "day").lower()
            if declared not in ALL_GRAINS:  # a custom or nanosecond grain: not read
                continue
            grain = declared if declared in SUBDAILY and time.format in ("native", "timestamp") else time.finest
            out.append(TimeDimension(f"{info.name}__{name}", info.name, time,
                                     tuple(f"{entity}__{name}" for entity in info.own), grain, name in info.partitions))
    return tuple(out)


__all__ = ["time_dimensions"]
