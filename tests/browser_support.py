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
