"""Follow-ups that always work (issue 29, item 1), on the demo (SQLite, no model).

Each test pins one bug the issue found: a new question taken as an edit, the offered
follow-ups of a semantic answer failing, internal columns in the shown SQL, a verified
question filed under the wrong specialist, an empty result with no hint of the data's dates,
a "largest change" claimed on a cut table, an edited answer keeping the old chart title."""

from __future__ import annotations

import json
import shutil

import pytest

from baton.demo.data import build_demo_database
from baton.demo.workspace import build_demo_workspace
from baton.followup_sql import HIDDEN
from baton.workspace.data_range import range_query
from baton.workspace.edited_sql import run_edited_sql
from baton.workspace.followup_intents import is_new_question
from baton.workspace.verified import save_verified_question

EPSON_MONTHS = "What was Epson revenue by month in 2025?"  # a verified question (epson_finance)
SEMANTIC_MONTHS = "What was total revenue by month in 2025?"  # the semantic layer (metrics)
SEMANTIC_PRODUCTS = "Revenue by product in 2025"
STARTS = [EPSON_MONTHS, SEMANTIC_MONTHS, SEMANTIC_PRODUCTS, "Which Epson products sold the most in 2025?",
          "What was the profit of each roadshow city?", "What were total costs by category in 2025?",
          "Epson revenue by product in 2025"]


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("demo-always")
    build_demo_database(directory / "finance.sqlite", sales_rows=300)
    return directory


@pytest.fixture
async def demo(demo_dir):
    async with build_demo_workspace(demo_dir) as ws:
        yield ws


def _answered(answer) -> bool:
    return not answer.error and answer.meta.get("followup") not in (None, "needs_model", "semantic_edit_refused")


@pytest.mark.parametrize("question", ["How many orders by month in 2025?", "What was revenue by year?",
                                      "Which Epson products sold the most in 2025?"])
@pytest.mark.parametrize("first", [SEMANTIC_PRODUCTS, SEMANTIC_MONTHS, EPSON_MONTHS])
async def test_a_complete_new_question_is_never_an_edit_of_the_previous_answer(demo, first, question):
    previous = await demo.answer(first)
    answer = await demo.answer(question, previous.session_id)
    assert answer.meta.get("followup") is None, answer.content
    assert "previous answer stands" not in answer.content


def test_what_reads_as_a_new_question():
    assert is_new_question("How many orders by month in 2025?") and is_new_question("What was revenue by year?")
    for edit in ["What about Epson?", "What was it in 2024?", "What were costs instead?", "What is the trend over time?",
                 "Show only the top 5", "by quarter", "Why did it drop in March?"]:
        assert not is_new_question(edit), edit


@pytest.mark.parametrize("first", STARTS)
async def test_every_offered_follow_up_is_answered_and_offers_at_least_three(demo, first):
    """Two levels deep: each follow-up an answer offers is answered (never refused, never an
    error, never "needs a model"), and every answer with a table offers at least three."""
    start = await demo.answer(first)
    assert start.results is not None and start.results.row_count > 1
    assert len(start.suggested_followups) >= 3, start.suggested_followups
    for offered in start.suggested_followups:
        answer = await demo.answer(offered, (await demo.answer(first)).session_id)
        assert _answered(answer), (first, offered, answer.content)
        if answer.results is not None and answer.results.row_count > 1:
            assert len(answer.suggested_followups) >= 3, (first, offered, answer.suggested_followups)
        for again in answer.suggested_followups:
            second = await demo.answer(again, answer.session_id)
            assert _answered(second), (first, offered, again, second.content)
            answer = await demo.answer(offered, (await demo.answer(first)).session_id)


@pytest.mark.parametrize("followup", ["Break this down by year", "Show percentage breakdown", "Sort by revenue descending",
                                      "Compare with the previous period", "Show only the top 5"])
async def test_the_issues_follow_ups_of_a_semantic_answer_are_answered(demo, followup):
    months = await demo.answer(SEMANTIC_MONTHS)
    assert months.meta.get("semantic_query")
    answer = await demo.answer(followup, months.session_id)
    assert _answered(answer) and answer.results is not None and answer.results.row_count >= 1, answer.content
    assert answer.meta["llm_calls"] == 0


@pytest.mark.parametrize("followup", ["Show only the top 5", "Show percentage breakdown", "Sort by revenue descending",
                                      "Compare with the previous period"])
@pytest.mark.parametrize("first", [EPSON_MONTHS, SEMANTIC_MONTHS])
async def test_internal_columns_never_appear_in_the_shown_sql(demo, first, followup):
    previous = await demo.answer(first)
    answer = await demo.answer(followup, previous.session_id)
    assert answer.query and HIDDEN not in answer.query
    assert not any(HIDDEN in str(c) for c in answer.results.columns)
    assert HIDDEN not in json.dumps(answer.to_dict(), default=str)  # nowhere in what is stored and sent
    edited = await run_edited_sql(demo, answer.turn_id, answer.query)  # the shown SQL is the editable SQL: it runs
    assert edited.data == answer.data


async def test_the_top_5s_largest_change_says_it_is_among_the_kept_rows(demo):
    for first in (EPSON_MONTHS, SEMANTIC_MONTHS):
        top = await demo.answer("Show only the top 5", (await demo.answer(first)).session_id)
        change = next(i for i in top.insights if i["kind"] == "largest_change")
        assert "among the 5 rows shown (of 12)" in change["text"] and change["values"]["rows_total"] == 12
        assert "among the 5 rows shown (of 12)" in top.content


async def test_an_edited_answer_has_its_own_title(demo):
    months = await demo.answer(EPSON_MONTHS)
    edited = await run_edited_sql(demo, months.turn_id, months.query.replace("unit_id = 2", "unit_id = 1"))
    assert edited.viz_config["title"]["text"] != months.viz_config["title"]["text"]
    assert edited.viz_config["title"]["text"] == f"{EPSON_MONTHS} — edited SQL"
    top = await demo.answer("Show only the top 5", months.session_id)  # its follow-ups start from it
    assert top.viz_config["title"]["text"].startswith(f"{EPSON_MONTHS} — edited SQL")
    quarters = await demo.answer("Break this down by quarter", (await demo.answer(SEMANTIC_MONTHS)).session_id)
    assert quarters.viz_config["title"]["text"] == "Revenue by quarter; where time in 2025"  # not "Break this down ..."


@pytest.mark.parametrize("question", ["What was total revenue in 2019?", "What was Epson revenue by month in 2019?"])
async def test_an_empty_result_with_a_time_filter_says_the_range_that_exists(demo, question):
    answer = await demo.answer(question)
    assert answer.results is not None and not any(v is not None for row in answer.results.rows for v in row)
    assert "There is no data for that period: monthly_revenue.month runs from 2024-01 to 2025-12." in answer.content
    assert ": ." not in answer.content
    assert answer.metadata["data_range"] == {"table": "monthly_revenue", "column": "month", "from": "2024-01", "to": "2025-12"}
    later = await demo.answer("for 2030 instead", (await demo.answer(SEMANTIC_MONTHS)).session_id)  # an edit that empties it
    assert "runs from 2024-01 to 2025-12" in later.content


async def test_a_result_that_is_not_empty_or_has_no_time_filter_gets_no_range(demo):
    assert "data_range" not in (await demo.answer(EPSON_MONTHS)).metadata
    assert range_query("SELECT name FROM products WHERE name = 'Nothing'", "sqlite") is None
    assert range_query("SELECT * FROM (SELECT month FROM t) AS s WHERE s.month >= '2019-01'", "sqlite") is None  # a derived table


@pytest.mark.parametrize("question", ["What was Epson revenue in Q4 2025?", "Epson revenue by product in 2025"])
async def test_save_as_verified_files_the_question_under_the_specialist_that_answered(demo_dir, tmp_path, question):
    shutil.copy(demo_dir / "finance.sqlite", tmp_path / "finance.sqlite")
    async with build_demo_workspace(tmp_path) as ws:
        answer = await ws.answer(question)
        assert answer.meta.get("semantic_query")  # the semantic layer answered: its SQL is kept by the Epson specialist
        saved = await save_verified_question(ws, "", answer=answer, source="page")
        assert saved.agent == "epson_finance"
        top = await ws.answer("Show only the top 3", answer.session_id)
        if top.query:
            assert (await save_verified_question(ws, "Top 3 Epson products of 2025", answer=top)).agent == "epson_finance"
        verified = await ws.answer(EPSON_MONTHS)
        assert (await save_verified_question(ws, "", answer=verified)).agent == "epson_finance"


@pytest.mark.parametrize("question", ["What is a roadshow?", "How is profit defined?", "How are cancelled roadshow events handled?"])
async def test_a_document_answer_offers_known_questions_on_its_subject_and_each_is_answered(demo, question):
    answer = await demo.answer(question)
    assert answer.results is None and answer.meta.get("agents_consulted") == ["finance_docs"]
    offers = answer.suggested_followups
    assert offers and question not in offers
    subject = {"What is a roadshow?": "roadshow", "How is profit defined?": "profit",
               "How are cancelled roadshow events handled?": "roadshow"}[question]
    assert all(subject in offer.lower() for offer in offers), offers
    for offer in offers:
        followed = await demo.answer(offer, answer.session_id)
        assert not followed.error and "No language model is configured, so I answer only" not in followed.content, followed.content
        assert followed.results is not None or followed.meta.get("agents_consulted") == ["finance_docs"]


async def test_a_document_answer_with_nothing_on_its_subject_offers_nothing_unrelated(demo):
    answer = await demo.answer("What is an EcoTank?")
    assert answer.suggested_followups == []


@pytest.mark.parametrize(("first", "followup", "offered"), [
    ("What was total revenue in 2025?", None, ["Break this down by month", "Break this down by quarter"]),
    (SEMANTIC_MONTHS, "Break this down by year", ["Break this down by quarter", "Break this down by month"]),
])
async def test_a_semantic_value_or_single_row_offers_a_finer_breakdown_that_is_answered(demo, first, followup, offered):
    answer = await demo.answer(first)
    if followup:
        answer = await demo.answer(followup, answer.session_id)
    assert answer.results.row_count == 1 and answer.suggested_followups == offered
    for text in offered:
        finer = await demo.answer(text, answer.session_id)
        assert finer.meta.get("followup") == "semantic_edit" and finer.results.row_count > 1, finer.content


async def test_save_as_verified_files_under_the_answering_specialist_with_a_model_configured(demo, demo_dir, tmp_path):
    from baton.llm import ScriptedModel

    answer = await demo.answer("What was Epson revenue in Q4 2025?")  # the semantic layer's answer, as stored
    shutil.copy(demo_dir / "finance.sqlite", tmp_path / "finance.sqlite")
    model = ScriptedModel([])  # configured, never called: filing needs no model
    async with build_demo_workspace(tmp_path, model=model) as ws:
        assert (await save_verified_question(ws, "", answer=answer)).agent == "epson_finance"
    assert model.calls == []
