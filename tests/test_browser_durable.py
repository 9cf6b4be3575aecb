"""The page with durable pipelines, as ``baton serve`` runs them by default (DBOS on SQLite
in the serving process): a multi-step question pauses at its checkpoint, the page shows it
with approve / edit / reject, and approving it continues the run to its end."""

from __future__ import annotations

import re

import pytest

from baton.llm import FunctionModel
from baton.server import create_app
from baton.state import ApiKeys
from baton.state.location import State
from baton.workspace import Workspaces
from baton.workspace.database import open_database_workspace
from baton.workspace.pipeline_host import PipelineHost
from baton.workspace.planning import durable_pipelines
from live_server import serve
from test_browser import ask, browser, expect, last_turn, login, page, pytestmark, shot  # noqa: F401 - fixtures and marks
from workspace_doubles import pipeline_model, sales_db

KEY = "bt_durable_pipeline_key"


@pytest.fixture(scope="module")
def base_url(tmp_path_factory):
    import asyncio
    import threading

    home = tmp_path_factory.mktemp("durable")
    url = sales_db(home / "shop.sqlite")
    state = State.from_env({}, home=home / "home")
    host = PipelineHost.for_state(state, queue_polling_interval_s=0.1)
    ws = open_database_workspace(url, FunctionModel(pipeline_model), state=state, pipelines=durable_pipelines(host))
    ws.own(host)
    app = create_app(Workspaces([ws]), ApiKeys({KEY: ws.name}), owns_workspaces=False)
    with serve(app) as url:
        yield url
    closing = threading.Thread(target=asyncio.run, args=(ws.aclose(),))  # this thread runs Playwright's loop
    closing.start()
    closing.join(30)


def test_the_page_approves_a_durable_checkpoint_and_the_run_completes(page):
    login(page, KEY)
    ask(page, "First the total amount by region, then count the sales")
    turn = last_turn(page)
    checkpoint = turn.locator(".checkpoint")
    expect(checkpoint).to_be_visible(timeout=30_000)
    expect(checkpoint.get_by_role("button")).to_have_text(["Approve", "Edit", "Reject"])
    expect(turn.locator(".answer [role=tab]")).to_have_text(["totals"])
    shot(page, "20-durable-checkpoint")
    with page.expect_request(re.compile(r"/v1/pipelines/[^/]+/decision$")) as sent:
        checkpoint.get_by_role("button", name="Approve").click()
    assert sent.value.response().ok
    done = turn.locator(".answer").nth(1)
    expect(done.locator("[role=tab]")).to_have_text(["totals", "counts"], timeout=30_000)
    shot(page, "21-durable-complete")
