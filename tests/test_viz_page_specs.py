"""Specs the page's interactive charts draw (issue 14): tooltips format dates in UTC through a
UTC time unit (``formatType: "utc"`` compiles to Vega's date constructor: "NaN" on hover), and
a column name holding quotes, dots or brackets stays one flat field (else Vega cannot even
parse the spec, and the chart is lost)."""

from __future__ import annotations

import datetime as dt
import json

from baton.response import AIMessage, QueryResult
from baton.viz.presentation import present


def dressed(columns, rows, types):
    result = QueryResult(columns=columns, rows=rows, column_types=types)
    return present(AIMessage(content="x", data=result.records(), results=result, input="question"))


def test_date_tooltips_format_in_utc_through_a_time_unit():
    import vl_convert as vlc

    message = dressed(["month", "revenue"], [[dt.date(2025, m, 1), 100.0 + m] for m in range(1, 13)], ["DATE", "REAL"])
    (month,) = [t for t in message.viz_config["encoding"]["tooltip"] if t["field"] == "month"]
    assert month["timeUnit"] == "utcyearmonth" and month["format"] == "%b %Y" and "formatType" not in month
    compiled = json.dumps(vlc.vegalite_to_vega(message.viz_config))
    assert 'utcFormat(datum[\\"utcyearmonth_month\\"], \\"%b %Y\\")' in compiled and "utc(datum" not in compiled


def test_hostile_column_names_stay_one_field_and_the_chart_renders():
    import vl_convert as vlc

    name = '<img src=x onerror="window.__pwned = 1"> [a.b] \'q\''
    message = dressed([name, "amount"], [["<script>x</script>", 30.0], ["b", 20.0]], ["TEXT", "REAL"])
    assert message.viz_config and vlc.vegalite_to_svg(message.viz_config).lstrip().startswith("<svg")
