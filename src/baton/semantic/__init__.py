"""The semantic layer: metrics and dimensions defined once, any metric question answered without a model.

A semantic model (``model.py``; Baton's YAML in ``native.py``; a dbt MetricFlow project in
``metricflow.py`` — its files read by ``mf_project.py``, semantic models by ``mf_models.py``,
metrics by ``mf_metrics.py``, filter Jinja by ``mf_filters.py``, MetricFlow queries and saved
queries by ``mf_query.py``; what Baton does not compute is a named ``Refusal``) declares entities and joins, measures (aggregation + expression, with the
filters that belong to them: cents -> currency, soft-deleted rows never counted), metrics
(simple, ratio, derived) and dimensions (categorical, and time with grains day ... year,
derived from text dates where the database keeps text). A question is then a choice of
metrics x dimensions x filters x grain x order/limit — a ``SemanticQuery`` (``query.py``) —
compiled deterministically to SQL for the connection's engine (``compiler.py``).

- ``parser.py``: question -> semantic query with no model, or an ask-back with the readings
  it considered (never a guess); ``render.py`` says a reading as a question that reads back.
- ``layer.py``: a model over one connection: value index, compile, run through the same
  validation pass as any SQL (safety check with the connection's ``relation_policy``,
  pre-validation, the read-only engine guard).
- ``agent.py``: ``SemanticAgent``, the no-model specialist the lexical router sends metric
  questions to; ``tool.py``: the ``semantic_query`` tool a model fills in the SQL specialist;
  ``followups.py``: "by quarter instead", "only Epson", "compare with 2024", "top 5" as
  edits of the previous semantic query; ``loading.py``: reading a model file, its saved
  queries as verified questions; ``check.py``: ``baton semantic check`` / ``init``. Wiring
  a model into a workspace is the workspace's (``baton.workspace.semantic``).

**Why compile with sqlglot, not a semantic-layer library** (evaluated 2026-12):

- *dbt MetricFlow* (``metricflow``/``dbt-metricflow``, BUSL-1.1) needs dbt-core, a dbt project,
  an adapter and a time-spine table; its SQL renderers cover DuckDB and PostgreSQL (and cloud
  warehouses) but neither SQLite nor MySQL/MariaDB, and it executes through dbt adapters,
  outside the workspace's engine guard. Its YAML is the analysts' standard, so Baton *reads*
  it (``metricflow.py``) instead.
- *boring-semantic-layer* (PyPI 0.3.18, pins ibis-framework 11 plus returns, toolz,
  atpublic, parsy) defines models as Python lambdas over ibis tables; compiling to text for
  all four engines would go through ibis's own backends, and the text-date grains and the
  per-engine behaviour Baton needs (integer division, ROUND on PostgreSQL, no FULL OUTER
  JOIN on MySQL) would still be ours to handle. A heavy dependency for the part that is easy.
- *Cube*, *WrenAI*: servers, not libraries.

sqlglot is already Baton's second SQL parser (the safety check, pre-validation, follow-ups),
generates every dialect the project runs, and lets the compiler build trees (never splice
text): a few hundred lines we can read, and the same SQL checks after.
"""

from baton.semantic.errors import SemanticModelError
from baton.semantic.model import SemanticModel
from baton.semantic.query import SemanticQuery, SemanticQueryError

__all__ = ["SemanticModel", "SemanticModelError", "SemanticQuery", "SemanticQueryError"]
