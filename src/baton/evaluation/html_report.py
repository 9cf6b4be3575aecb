"""The HTML report: one self-contained file to open anywhere, CI artifact or laptop.

No script, no CDN, no external font or image: inline CSS only. Question text, SQL, rows,
answers and trace values come from golden sets and models, so all of it is untrusted: every
value goes through ``html.escape`` (quotes included), and a Content-Security-Policy meta tag
(``default-src 'none'``) forbids scripts, frames and any network fetch, so even a value that
slipped through could neither run nor phone home.

Layout: the figures; the failures, each with its question, why it failed, expected vs
produced SQL and rows, routing, the answer's text and error, and the step trace; then the
skipped questions and gold errors with their reasons; then every question in one table.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from html import escape
from pathlib import Path
from typing import Any

from baton.evaluation.results import EvalRun, QuestionResult, Table
from baton.evaluation.summary import Summary, summarise

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; form-action 'none'; base-uri 'none'"
STYLE = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1200px;color:#1d2330;padding:0 16px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #dde1e8;padding-bottom:4px}
table{border-collapse:collapse;margin:6px 0} td,th{border:1px solid #dde1e8;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f6f9} pre{background:#f6f8fa;padding:8px;white-space:pre-wrap;word-break:break-word;margin:4px 0}
.figures td:first-child{font-weight:600} .muted{color:#667085} .pass{color:#067647} .fail{color:#b42318} .skipped{color:#93370d}
.failure{border:1px solid #f3c6c2;border-radius:6px;padding:10px 14px;margin:12px 0;background:#fffafa}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:12px} .reason{font-weight:600;color:#b42318}
details{margin:6px 0} summary{cursor:pointer}
"""


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def _figures(run: EvalRun, s: Summary) -> str:
    rows = [
        ("Questions", f"{s.questions} ({s.passed} passed, {s.failed} failed, {s.skipped} skipped, {s.gold_errors} gold errors)"),
        ("Execution accuracy", str(s.execution)),
        ("Routing accuracy", str(s.routing)),
        ("Valid SQL", str(s.valid_sql)),
        ("Repairs", f"{s.repaired_questions} questions ({s.repair_attempts} failed attempts before the query that ran)"),
        ("Safety refusals", str(s.safety_refusals)),
        ("Latency p50 / p95", f"{_seconds(s.latency_p50_s)} / {_seconds(s.latency_p95_s)}"),
        ("LLM calls", f"{s.llm_calls} ({_per(s, s.llm_calls)} per question)"),
        ("Tokens", f"{s.tokens} ({s.input_tokens} in, {s.output_tokens} out; {_per(s, s.tokens)} per question)"),
        ("Cost", f"${s.cost_usd:.4f} (${(s.per_question(s.cost_usd) or 0):.5f} per question)"
                 + (f"; {s.unpriced_calls} calls without a price" if s.unpriced_calls else "")),
        ("Model", run.model or "none configured"),
        ("Set", f"{run.set_name} ({run.source})"),
        ("Started", f"{run.started_at}, {run.duration_s:.1f} s, concurrency {run.concurrency}"),
    ]
    if run.budget_usd is not None:
        rows.append(("Budget", f"${run.budget_usd:.4f}" + (" (reached: scheduling stopped)" if run.budget_stopped else "")))
    body = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in rows)
    return f'<table class="figures">{body}</table>'


def _per(s: Summary, total: float) -> str:
    value = s.per_question(total)
    return "n/a" if value is None else f"{value:.1f}"


def _table(table: Table | None, title: str) -> str:
    if table is None:
        return f"<div><b>{_e(title)}</b><p class=\"muted\">none</p></div>"
    head = "".join(f"<th>{_e(c)}</th>" for c in table.columns)
    body = "".join("<tr>" + "".join(f"<td>{_e(v)}</td>" for v in row) + "</tr>" for row in table.rows)
    more = table.row_count - len(table.rows)
    note = f'<p class="muted">{table.row_count} rows{f", first {len(table.rows)} shown" if more > 0 else ""}' \
           f'{", cut by the row cap" if table.truncated else ""}</p>'
    return f"<div><b>{_e(title)}</b><table><tr>{head}</tr>{body}</table>{note}</div>"


def _trace(trace: list[dict[str, Any]]) -> str:
    if not trace:
        return '<p class="muted">no events</p>'
    start = trace[0].get("ts") or 0
    rows = []
    for event in trace:
        offset = (event.get("ts") or start) - start
        data = json.dumps(event.get("data") or {}, ensure_ascii=False, default=str)
        rows.append(f"<tr><td>+{offset * 1000:.0f} ms</td><td>{_e(event.get('type'))}</td><td><code>{_e(data)}</code></td></tr>")
    return f"<table><tr><th>at</th><th>step</th><th>data</th></tr>{''.join(rows)}</table>"


def _failure(index: int, r: QuestionResult) -> str:
    reasons = "".join(f'<li class="reason">{_e(x)}</li>' for x in r.reasons) or '<li class="reason">failed</li>'
    routing = ""
    if r.expected_specialists:
        routing = (f"<p>Routing: expected <b>{_e(', '.join(r.expected_specialists))}</b>, "
                   f"routed to <b>{_e(', '.join(r.routed_to) or 'no specialist')}</b></p>")
    cost = f"{_seconds(r.latency_s)}, {r.llm_calls} LLM calls, {r.tokens} tokens, ${r.cost_usd:.5f}"
    return f"""
<section class="failure" id="failure-{index}">
  <h3>{_e(r.question)}</h3>
  <p class="muted">id {_e(r.id)}{(' · tags ' + _e(', '.join(r.tags))) if r.tags else ''} · {_e(cost)}</p>
  <ul>{reasons}</ul>
  {routing}
  <div class="pair">
    <div><b>Expected SQL</b><pre>{_e(r.expected_sql or '(expected rows given)')}</pre></div>
    <div><b>Produced SQL</b><pre>{_e(r.produced_sql or '(none)')}</pre></div>
  </div>
  <div class="pair">{_table(r.expected, 'Expected rows')}{_table(r.produced, 'Produced rows')}</div>
  <p><b>Answer</b></p><pre>{_e(r.answer_text or '(no text)')}</pre>
  {f'<p><b>Error</b></p><pre>{_e(r.answer_error)}</pre>' if r.answer_error else ''}
  <details><summary>Step trace ({len(r.trace)} events)</summary>{_trace(r.trace)}</details>
</section>"""


def _listing(results: Iterable[QuestionResult], reason: str) -> str:
    rows = "".join(f"<tr><td>{_e(r.id)}</td><td>{_e(r.question)}</td><td>{_e(getattr(r, reason) if reason == 'skip_reason' else '; '.join(r.reasons))}</td></tr>"
                   for r in results)
    return f"<table><tr><th>id</th><th>question</th><th>why</th></tr>{rows}</table>"


def _verdict(value: bool | None) -> str:
    return "" if value is None else ("✓" if value else "✗")


def _all(results: list[QuestionResult]) -> str:
    rows = "".join(
        f'<tr><td>{_e(r.id)}</td><td>{_e(r.question)}</td><td class="{_e(r.status)}">{_e(r.status)}</td>'
        f"<td>{_verdict(r.execution)}</td><td>{_verdict(r.routing)}</td><td>{_e(_seconds(r.latency_s))}</td>"
        f"<td>{r.llm_calls}</td><td>{r.tokens}</td><td>${r.cost_usd:.5f}</td></tr>"
        for r in results
    )
    return ("<table><tr><th>id</th><th>question</th><th>status</th><th>execution</th><th>routing</th><th>latency</th>"
            f"<th>LLM calls</th><th>tokens</th><th>cost</th></tr>{rows}</table>")


def render_html(run: EvalRun) -> str:
    s = summarise(run.results)
    failures = [r for r in run.results if r.status == "fail"]
    skipped = [r for r in run.results if r.status == "skipped"]
    gold = [r for r in run.results if r.status == "gold_error"]
    notes = "".join(f"<p><b>{_e(n)}</b></p>" for n in run.notes)
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_e(CSP)}">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>Baton eval: {_e(run.set_name)}</title><style>{STYLE}</style></head><body>",
        f"<h1>Baton eval: {_e(run.set_name)}</h1>",
        notes,
        _figures(run, s),
        f'<h2 id="failures">Failures ({len(failures)})</h2>',
        "".join(_failure(i, r) for i, r in enumerate(failures, start=1)) or '<p class="muted">none</p>',
    ]
    if skipped:
        parts += [f'<h2 id="skipped">Skipped ({len(skipped)})</h2>', _listing(skipped, "skip_reason")]
    if gold:
        parts += [f'<h2 id="gold-errors">Gold errors ({len(gold)})</h2>', _listing(gold, "reasons")]
    parts += [f'<h2 id="questions">All questions ({len(run.results)})</h2>', _all(run.results), "</body></html>"]
    return "\n".join(parts)


def write_html(run: EvalRun, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(run), encoding="utf-8")
    return path
