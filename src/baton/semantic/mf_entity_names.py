"""An entity, as a dimension, answers to MetricFlow's entity-prefixed names too.

MetricFlow names an entity through the entity of the semantic model that holds it:
``listing__lux_listing`` is the ``lux_listing`` key of the model whose own entity is ``listing``
(a mapping table), reached from bookings through ``listing``; ``customer_id__customer_third_hop_id``
the other unique key of the customers' model; ``view__listing`` the listing key on the views'
own rows (a metric filter grouped by it). Baton reads an entity where its home model keeps it,
or on the rows of a model holding it as a plain column (``Dimension.local``): each such model's
own entities prefix a name it answers to. The path a longer name spells is checked where the
query is read (``mf_query``), as for any dimension.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from baton.semantic.mf_models import Reading


def entity_prefixed_names(reading: Reading) -> None:
    """Adds ``<own entity>__<entity>`` to each entity dimension's qualified names (module docstring)."""
    for name, dimension in list(reading.dimensions.items()):
        if dimension.qualified != (name,):  # not an entity's own dimension
            continue
        holders = (dimension.entity, *(model for model, _ in dimension.local))
        extra = [f"{own}__{name}" for holder in holders if holder in reading.models
                 for own in reading.models[holder].own if own != name]
        extra = [q for q in dict.fromkeys(extra) if q not in reading.by_qualified]
        if extra:
            reading.dimensions[name] = replace(dimension, qualified=(*dimension.qualified, *extra))
            for q in extra:
                reading.by_qualified[q] = name


__all__ = ["entity_prefixed_names"]
