"""The HTML report of ``baton eval`` opened in a real browser (the system Chromium through
Playwright): every failure is shown with its question, expected and produced SQL and rows,
and the step trace; hostile question text, SQL, column names and values stay text: no
script runs, no element is injected, no request leaves the page.

Screenshots land in ``test-artifacts/eval/`` (git-ignored).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from baton.evaluation import GoldenQuestion, GoldenSet, load_golden_set, write_html
from browser_support import launch, needs_chromium, shot
from eval_doubles import PLAN, build_spider, run_spider, spider_model

pytestmark = [pytest.mark.browser, needs_chromium]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

HOSTILE_QUESTION = "Which singer </script><img src=x onerror=\"document.title='pwned'\"> sings <iframe src=https://evil.example/q></iframe>?"
HOSTILE_VALUE = "</td></table><script>window.__pwned = 1</script><img src=https://evil.example/v.png onerror=alert(1)>"
HOSTILE_COLUMN = "<b onmouseover=alert(2)>col</b>"
HOSTILE_EXPECTED = "<svg onload=alert(3)>"
HOSTILE_SQL = f"SELECT '{HOSTILE_VALUE}' AS \"{HOSTILE_COLUMN}\""


@pytest.fixture
def report(tmp_path: Path) -> tuple[Path, list]:
    spider = build_spider(tmp_path)
    golden = load_golden_set(spider / "dev.json")
    concert = golden.questions[0].database
    hostile = GoldenQuestion(id="hostile\"><img src=x onerror=alert(4)>", question=HOSTILE_QUESTION, rows=((HOSTILE_EXPECTED,),),
                             tags=("<i>tag</i>",), database=concert)
    golden = GoldenSet(golden.name, [*golden.questions, hostile], source=golden.source)
    plan = {**PLAN, HOSTILE_QUESTION: [HOSTILE_SQL]}
    run, _ = asyncio.run(run_spider(spider, tmp_path / "home", spider_model(plan), golden=golden))
    failures = [r for r in run.results if r.status == "fail"]
    assert len(failures) == 10 and failures[-1].question == HOSTILE_QUESTION
    assert failures[-1].produced.rows == [[HOSTILE_VALUE]] and failures[-1].produced.columns == [HOSTILE_COLUMN]
    return write_html(run, tmp_path / "report.html"), failures


def test_the_report_shows_every_failure_and_runs_nothing_it_shows(report):
    path, failures = report
    dialogs, requests, errors = [], [], []
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            page = browser.new_page()
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.on("request", lambda r: requests.append(r.url))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(path.as_uri())
            page.wait_for_load_state("load")

            sections = page.locator("section.failure")
            assert sections.count() == len(failures) == 10
            for i, failure in enumerate(failures):
                section = sections.nth(i)
                assert section.locator("h3").inner_text() == failure.question
                text = section.inner_text()
                assert "Expected SQL" in text and "Produced SQL" in text and "Expected rows" in text and "Produced rows" in text
                for reason in failure.reasons:
                    assert reason in text
                if failure.expected_sql:
                    assert failure.expected_sql in text
                if failure.produced_sql:
                    assert failure.produced_sql in text
                section.locator("summary").click()  # the step trace opens
                sync_api.expect(section.locator("details table")).to_be_visible()
                assert "agent.routed" in section.locator("details").inner_text()

            hostile = sections.nth(9)
            text = hostile.inner_text()
            assert HOSTILE_VALUE in text and HOSTILE_COLUMN in text and HOSTILE_EXPECTED in text and HOSTILE_SQL in text
            assert "<i>tag</i>" in text
            # nothing the page shows became markup, ran, or fetched anything
            assert page.locator("img, iframe, script, svg, b[onmouseover], i").count() == 0
            assert page.evaluate("typeof window.__pwned") == "undefined"
            assert page.title() == "Baton eval: dev"
            assert dialogs == [] and errors == []
            assert requests == [path.as_uri()]
            assert "Execution accuracy" in page.locator("table.figures").inner_text()
            shot(page, "report", folder="eval")
        finally:
            browser.close()
