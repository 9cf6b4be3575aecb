"""A newcomer's run, with no API key: `baton demo` builds the demo, serves the page and
prints a link; through that link, in a real browser, a verified question shows a table and
a chart answered for real (no LLM anywhere)."""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from live_server import free_port

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts" / "browser"
BATON = Path(sys.executable).with_name("baton")


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory):
    """`baton demo` as a person runs it: a subprocess, a fresh BATON_HOME, no model, no key."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k not in ("BATON_MODEL", "BATON_DEMO_SMOKE", "BATON_DEMO_KEY")}
    env["BATON_HOME"] = str(tmp_path_factory.mktemp("home"))
    env["COLUMNS"] = "300"  # keep the printed link on one line
    port = free_port()
    process = subprocess.Popen([str(BATON), "demo", "--port", str(port)], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    link, seen = None, []
    deadline = time.monotonic() + 120
    while link is None and time.monotonic() < deadline and process.poll() is None:
        line = process.stdout.readline()
        seen.append(line)
        match = re.search(r"(http://127\.0\.0\.1:\d+/#key=\S+)", line)
        link = match.group(1) if match else None
    try:
        assert link, "baton demo printed no link:\n" + "".join(seen)
        for _ in range(100):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        yield link
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


def test_the_printed_link_is_the_page_with_a_key_that_never_reaches_the_server_in_a_url(demo_server):
    base = demo_server.split("/#key=")[0]
    assert httpx.get(base + "/").status_code == 200
    assert httpx.get(base + "/v1/agents").status_code == 401


@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"Chromium not found at {CHROMIUM} (apt-get install chromium)")
def test_a_verified_question_through_the_page_shows_a_table_and_a_chart(demo_server):
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    expect = sync_api.expect
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(20_000)
            page.goto(demo_server)
            expect(page.locator("#agents li").first).to_be_visible()
            agents = set(page.locator("#agents li").all_inner_texts())
            assert {"pokemon_finance", "epson_finance", "roadshows_finance", "general_finance", "finance_docs"} <= agents
            page.fill("#question", "What was Pokemon revenue by month in 2025?")
            page.click("#ask-button")
            answer = page.locator("#chat .turn .answer").last
            expect(answer.locator("table tbody tr")).to_have_count(12)
            chart = answer.locator(".chart")
            expect(chart).to_have_attribute("data-mode", "interactive")  # drawn by the Vega runtime shipped in the package
            expect(chart.locator("svg").first).to_be_visible()
            assert chart.locator("svg").first.bounding_box()["width"] > 100
            expect(answer.locator("details.sql")).to_contain_text("monthly_revenue")
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "newcomer-demo.png"), full_page=True)
        finally:
            browser.close()
