"""Presentation-layer costs: choosing a chart, rendering it offline, finding insights.

Run: .venv/bin/python bench/viz_presentation.py
Prints figures; asserts nothing (speed targets live here, not in tests).
"""

from __future__ import annotations

import datetime as dt
import random
import statistics
import time
from decimal import Decimal

from baton.response import AIMessage, QueryResult
from baton.viz import choose_chart, render_png, render_svg
from baton.viz.insights import find_insights
from baton.viz.presentation import present


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def line(name: str, samples: list[float]) -> None:
    print(f"{name:<52} median {statistics.median(samples):8.2f} ms   max {max(samples):8.2f} ms   (n={len(samples)})")


def main() -> None:
    rng = random.Random(0)
    small = QueryResult(["region", "revenue"], [[f"region {i}", Decimal(rng.randint(100, 999))] for i in range(8)])
    monthly = QueryResult(["month", "revenue"], [[f"{2015 + m // 12}-{m % 12 + 1:02d}", rng.random() * 1e5] for m in range(120)])
    big = QueryResult(["day", "orders"], [[dt.date(2000, 1, 1) + dt.timedelta(days=i), rng.randint(0, 500)] for i in range(50_000)])

    start = time.perf_counter()
    render_svg(choose_chart(small).viz_config)
    print(f"{'first render_svg in process (engine start)':<52} {1000 * (time.perf_counter() - start):8.2f} ms")

    line("choose_chart, 8 categories", timed(lambda: choose_chart(small), 50))
    line("choose_chart, 120 months", timed(lambda: choose_chart(monthly), 50))
    line("choose_chart, 50,000 days (5,000 inlined)", timed(lambda: choose_chart(big), 5))
    spec_small, spec_month, spec_big = (choose_chart(r).viz_config for r in (small, monthly, big))
    line("render_svg, bar of 8", timed(lambda: render_svg(spec_small), 20))
    line("render_svg, line of 120 months", timed(lambda: render_svg(spec_month), 20))
    line("render_svg, line of 5,000 points", timed(lambda: render_svg(spec_big), 5))
    line("render_png scale 2, line of 120 months", timed(lambda: render_png(spec_month, scale=2), 10))
    line("find_insights, 120 months", timed(lambda: find_insights(monthly), 20))
    line("find_insights, 50,000 days", timed(lambda: find_insights(big), 3))
    message = AIMessage(content="x", input="Revenue by region", query="SELECT region, SUM(x) FROM t GROUP BY 1", results=small)
    line("present(), 8-row answer", timed(lambda: present(message, seed=1), 50))


if __name__ == "__main__":
    main()
