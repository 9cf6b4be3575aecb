"""Every turn is recorded by one ``record_turn`` (``baton.workspace.answer``): an answer's, edited
SQL's and a pipeline decision's turn are stored the same way — the answer serialised once (the
stored row is the JSON the reply sends), and one log line each."""

import json
import logging

import pytest

from baton.llm import FunctionModel
from baton.pipeline import CheckpointDecision
from baton.response import AIMessage
from baton.state.location import State
from baton.workspace.answer import STORED_JSON, stored_json
from baton.workspace.database import open_database_workspace
from baton.workspace.edited_sql import run_edited_sql
from baton.workspace.verified import save_verified_question
from workspace_doubles import TOTALS_SQL, pipeline_model, sales_db

pytestmark = pytest.mark.timeout(120)


def _recorded_like_an_answer(message: AIMessage, stored: AIMessage, caplog: pytest.LogCaptureFixture, fast_path: str | None) -> None:
    """What ``record_turn`` leaves: the reply's JSON is the stored row's, and its log line."""
    assert STORED_JSON in vars(message)  # serialised once, for the row and the reply
    assert json.loads(stored_json(message)) == stored.to_dict()
    assert stored.session_id == message.session_id and stored.turn_id == message.turn_id
    lines = [r.getMessage() for r in caplog.records if r.name == "baton.workspace" and "answered in workspace" in r.getMessage()]
    assert any(f"fast_path={fast_path}" in line for line in lines), lines


async def test_edited_sql_is_recorded_like_an_answer(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="baton.workspace")
    state = State.from_env(env={}, home=tmp_path / "home")
    async with open_database_workspace(sales_db(tmp_path / "shop.sqlite"), None, state=state) as ws:
        await save_verified_question(ws, "Totals by region", TOTALS_SQL)
        answer = await ws.answer("Totals by region")
        _recorded_like_an_answer(answer, (await ws.sessions.turns(ws.name, answer.session_id))[-1].answer, caplog, "verified_question")
        edited = await run_edited_sql(ws, answer.turn_id, "SELECT region FROM sales")
        turns = await ws.sessions.turns(ws.name, answer.session_id)
    assert [t.question for t in turns] == ["Totals by region", "Edited SQL of “Totals by region”"]
    _recorded_like_an_answer(edited, turns[-1].answer, caplog, "edited_sql")


async def test_a_pipeline_decision_is_recorded_like_an_answer(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="baton.workspace")
    state = State.from_env(env={}, home=tmp_path / "home")
    async with open_database_workspace(sales_db(tmp_path / "shop.sqlite"), FunctionModel(pipeline_model), state=state) as ws:
        paused = await ws.answer("First the total amount by region, then count the sales")
        assert paused.response_type == "stage_checkpoint"
        caplog.clear()
        done = await ws.decide(paused.workflow_id, CheckpointDecision("approve", stage_id="totals"), session_id=paused.session_id)
        assert done is not None and done.response_type == "pipeline_complete"
        turns = await ws.sessions.turns(ws.name, paused.session_id)
    assert [t.question for t in turns][-1] == "[approve]"
    _recorded_like_an_answer(done, turns[-1].answer, caplog, "None")
