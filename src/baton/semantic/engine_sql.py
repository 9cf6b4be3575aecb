"""What the semantic layer asks of the engine it compiles for, by dialect name.

Metric SQL is compiled for a dialect string; how it differs from one engine to the next (a
week's Monday, percentiles, the generated time spine, typed NULLs in a UNION...) is the
engine's ``metric_sql`` (``baton.specialists.sql.engines.metric_sql``), so no module here
compares a dialect name. A dialect no engine answers to is refused by name
(``UnsupportedDialectError``); no dialect at all (a part compiled for none, as a conversion
metric's measures) renders nothing engine-specific, so whatever needs it is refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from baton.semantic.errors import SemanticQueryError

if TYPE_CHECKING:
    from baton.specialists.sql.engines.metric_sql import MetricSQL


def metric_sql(dialect: str) -> MetricSQL:
    """How metric SQL is written on ``dialect``'s engine (``Engine.metric_sql``)."""
    from baton.specialists.sql.engines import Engine, engine_named

    return engine_named(dialect).metric_sql if dialect else Engine.metric_sql  # the default: nothing engine-specific


def engine_title(dialect: str) -> str:
    """The engine's name for people (``MySQL/MariaDB``), for a refusal."""
    from baton.specialists.sql.engines import engine_named

    return engine_named(dialect).title if dialect else "this engine"


def template(value: str | None, what: str, dialect: str) -> str:
    """The engine's template for ``what`` (``MetricSQL``), or ``SemanticQueryError`` where it has none."""
    if value is None:
        raise SemanticQueryError(f"{what} on {dialect or 'this engine'}, which Baton does not compute yet")
    return value


__all__ = ["engine_title", "metric_sql", "template"]
