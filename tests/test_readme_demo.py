"""The README's demo script works as written: every question it tells a new user to try in
``baton demo`` (the italic ones of its "try ..." list) is answered on the demo with no model,
and each follow-up does what it says (a chart it names is drawn as that chart). The script is
read from README.md itself, so the text and this test cannot drift apart."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from baton.demo.data import build_demo_database
from baton.demo.workspace import build_demo_workspace

README = Path(__file__).resolve().parents[1] / "README.md"


def demo_script() -> tuple[list[tuple[str, list[str]]], list[str]]:
    """The "(try ...)" list of the paragraph on ``baton demo``: clauses ``*Q*, then *F* or
    *F*`` (a question and its follow-ups, each tried on the question's answer), separated by
    ``;``; and the document questions of the same paragraph, after it."""
    text = README.read_text(encoding="utf-8")
    paragraph = " ".join(text[text.index("`baton demo` builds"):].split("\n\n", 1)[0].split())
    tried = re.search(r"\(try (.*?)\)", paragraph)
    assert tried, "the demo paragraph lists questions to try"
    script = []
    for clause in tried.group(1).split(";"):
        question, _, followups = clause.partition(", then ")
        script.append((re.findall(r"\*([^*]+)\*", question)[0], re.findall(r"\*([^*]+)\*", followups)))
    documents = re.findall(r"\*([^*]+)\*", paragraph[tried.end():])
    return script, documents


SCRIPT, DOCUMENT_QUESTIONS = demo_script()


@pytest.fixture
async def demo(tmp_path):
    build_demo_database(tmp_path / "demo" / "finance.sqlite", sales_rows=2_000)
    workspace = build_demo_workspace(tmp_path / "demo")
    yield workspace
    await workspace.aclose()


def test_the_readme_lists_a_script():
    assert len(SCRIPT) >= 2 and all(followups for _, followups in SCRIPT) and DOCUMENT_QUESTIONS


@pytest.mark.parametrize(("question", "followup"), [(q, f) for q, fs in SCRIPT for f in fs])
async def test_each_follow_up_of_the_readme_works_on_its_question(demo, question, followup):
    first = await demo.answer(question)
    assert first.error is None and first.data and first.metadata.get("llm_calls") == 0, first.content
    then = await demo.answer(followup, first.session_id)
    assert then.error is None and then.data, then.content
    assert then.metadata.get("followup"), f"{followup!r} was not taken as a follow-up: {then.content}"
    chart = re.search(r"as an? (\w+) chart", followup)
    if chart:
        assert then.viz_type == chart.group(1), then.content  # drawn as asked, not as another chart with a note


@pytest.mark.parametrize("question", DOCUMENT_QUESTIONS)
async def test_the_readme_document_questions_are_answered_with_passages(demo, question):
    answer = await demo.answer(question)
    assert answer.error is None and "[1]" in answer.content, answer.content
