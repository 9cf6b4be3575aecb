"""The page's "Draft a semantic model" (issue 28), in a real browser: a workspace with a
database and no semantic model offers it on the empty page; clicking it shows what the draft
decided and what to check, and the file it offers downloads as a model that loads."""

from __future__ import annotations

import asyncio
import threading

import pytest
import yaml

from baton.semantic.native import model_from_dict
from baton.server import ApiKeys, Workspaces, create_app
from baton.state.location import State
from baton.workspace.database import open_database_workspace
from browser_support import browser, needs_chromium, new_page, shot  # noqa: F401  (browser: a fixture)
from live_server import serve
from test_server_semantic_draft import shop_database

pytestmark = [pytest.mark.browser, needs_chromium]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
expect = sync_api.expect

KEY = "bt_draft_browser_key"


@pytest.fixture(scope="module")
def base_url(tmp_path_factory):
    directory = tmp_path_factory.mktemp("draft_page")
    ws = open_database_workspace(shop_database(directory / "shop.sqlite"), None,
                                 state=State.from_env(env={}, home=directory / "home"), name="shop")
    app = create_app(Workspaces([ws]), ApiKeys({KEY: "shop"}), owns_workspaces=False)
    with serve(app) as url:
        yield url
    closing = threading.Thread(target=lambda: asyncio.run(ws.aclose()))
    closing.start()  # a loop of its own: Playwright's runs in this thread
    closing.join(30)


def test_the_empty_page_drafts_a_model_that_downloads_and_loads(browser, base_url, tmp_path):
    errors: list[str] = []
    page = new_page(browser, base_url, errors)
    page.goto(f"/#key={KEY}")
    offer = page.locator(".example-group[data-kind=draft]")
    expect(offer.locator("button.draft-semantic")).to_be_visible()
    offer.locator("button.draft-semantic").click()
    download_link = offer.locator(".draft a.download")
    expect(download_link).to_have_text("Download semantic.yaml")
    expect(offer.locator(".draft code")).to_contain_text("--semantic semantic.yaml")
    expect(offer.locator(".draft li").first).to_be_visible()
    shot(page, "draft-01-offered-and-drafted")
    with page.expect_download() as downloaded:
        download_link.click()
    path = tmp_path / "semantic.yaml"
    downloaded.value.save_as(path)
    model = model_from_dict(yaml.safe_load(path.read_text(encoding="utf-8")))
    assert {m.name for m in model.metrics} >= {"orders", "customers"}
    page.context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"
