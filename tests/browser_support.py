"""What the browser tests share: the system Chromium for Playwright (it cannot download its own
here, FACTS.md), screenshots kept under ``test-artifacts/browser/`` (git-ignored)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-quic",
]
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"

needs_chromium = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"Chromium not found at {CHROMIUM} (apt-get install chromium)")


def shot(page, name: str, folder: str = "browser") -> None:
    """A full-page screenshot kept as a test artifact (``test-artifacts/<folder>/<name>.png``)."""
    (ARTIFACTS / folder).mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / folder / f"{name}.png"), full_page=True)


def launch(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


@pytest.fixture(scope="module")
def browser():
    """One Chromium per test module (import this fixture by name)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    with sync_api.sync_playwright() as playwright:
        launched = launch(playwright)
        yield launched
        launched.close()


def new_page(browser, base_url: str, errors: list[str]):
    """A page in a fresh context (fresh cookies), its JavaScript errors collected in ``errors``."""
    context = browser.new_context(base_url=base_url, viewport={"width": 1280, "height": 900}, accept_downloads=True)
    context.set_default_timeout(15_000)
    page = context.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return page


def ask(page, question: str):
    """Ask, wait until the new turn has its answer and the ask box is free again; the answer."""
    from playwright.sync_api import expect

    turns = page.locator("#chat .turn")
    before = turns.count()
    page.fill("#question", question)
    page.click("#ask-button")
    expect(turns).to_have_count(before + 1)
    expect(turns.nth(before).locator(".answer").first).to_be_visible()
    expect(page.locator("#ask-button")).to_be_enabled()
    return turns.nth(before).locator(".answer").last


def last_answer(page):
    """The last answer of the last turn."""
    return page.locator("#chat .turn").last.locator(".answer").last


def column(answer, name: str) -> list[str]:
    """The cells of an answer's table column ``name``, top to bottom."""
    heads = answer.locator(".dataset-table thead th").all_inner_texts()
    index = heads.index(name)
    return [row.locator("td").nth(index).inner_text() for row in answer.locator(".dataset-table tbody tr").all()]


def gated_agent():
    """An agent that answers only when the test opens its gate (``agent.gate.set()``), so the
    page is seen while a question runs."""
    import asyncio
    import threading

    from baton.agents import AgentContext, AgentResult, BaseAgent
    from baton.response import AIMessage

    class GatedAgent(BaseAgent):
        def __init__(self) -> None:
            super().__init__("gated", "Answers when the test says so")
            self.gate = threading.Event()

        async def run(self, context: AgentContext, *, question: str, **kw) -> AgentResult:
            opened = await asyncio.to_thread(self.gate.wait, 30)
            text = "The gate opened." if opened else "The gate never opened."
            return AgentResult(agent_name=self.name, task=question, result=text,
                               ai_message=AIMessage(content=text, data=[{"gate": "open"}]))

    return GatedAgent()
