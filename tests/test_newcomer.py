"""A newcomer's run, with no API key: `baton demo` builds the demo, serves the page and
prints a link; through that link, in a real browser, a verified question shows a table and
a chart answered for real (no LLM anywhere)."""

import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from browser_support import launch, needs_chromium, shot
from live_server import free_port

BATON = Path(sys.executable).with_name("baton")


LINK_WAIT_S = 120  # building the demo from an empty BATON_HOME, on a busy CI machine
HEALTH_WAIT_S = 30


def _lines_of(process: subprocess.Popen) -> queue.Queue:
    """The child's output, one line at a time, read by a thread: the test waits on the queue
    with a timeout, so a child that prints nothing (or half a line) cannot hold it past its
    deadline the way a blocking ``readline()`` can. The thread also keeps draining the pipe
    while the tests run, so a chatty server never blocks on a full pipe."""
    lines: queue.Queue = queue.Queue()

    def pump() -> None:
        for line in process.stdout:
            lines.put(line)
        lines.put(None)  # the child closed its output: it has exited

    threading.Thread(target=pump, name="baton-demo-output", daemon=True).start()
    return lines


def _wait_for_link(process: subprocess.Popen, lines: queue.Queue) -> str:
    seen: list[str] = []
    deadline = time.monotonic() + LINK_WAIT_S
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        if line is None:
            pytest.fail(f"baton demo exited (code {process.wait()}) without printing a link:\n" + "".join(seen))
        seen.append(line)
        if match := re.search(r"(http://127\.0\.0\.1:\d+/#key=\S+)", line):
            return match.group(1)
    pytest.fail(f"baton demo printed no link within {LINK_WAIT_S} s:\n" + "".join(seen))


def _wait_until_healthy(process: subprocess.Popen, port: int) -> None:
    last = "no answer yet"
    deadline = time.monotonic() + HEALTH_WAIT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"baton demo exited (code {process.returncode}) after printing its link, before /health answered")
        try:
            health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=5)
            if health.status_code == 200:
                return
            last = f"HTTP {health.status_code}: {health.text[:200]}"
        except httpx.TransportError as error:
            last = f"{type(error).__name__}: {error}"
        time.sleep(0.1)
    pytest.fail(f"baton demo printed its link but /health did not answer 200 within {HEALTH_WAIT_S} s (last: {last})")


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory):
    """`baton demo` as a person runs it: a subprocess, a fresh BATON_HOME, no model, no key."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k not in ("BATON_MODEL", "BATON_DEMO_SMOKE", "BATON_DEMO_KEY")}
    env["BATON_HOME"] = str(tmp_path_factory.mktemp("home"))
    env["COLUMNS"] = "300"  # keep the printed link on one line
    port = free_port()
    process = subprocess.Popen([str(BATON), "demo", "--port", str(port)], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    try:
        lines = _lines_of(process)
        link = _wait_for_link(process, lines)
        _wait_until_healthy(process, port)
        yield link
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def test_the_printed_link_is_the_page_with_a_key_that_never_reaches_the_server_in_a_url(demo_server):
    base = demo_server.split("/#key=")[0]
    assert httpx.get(base + "/").status_code == 200
    assert httpx.get(base + "/v1/agents").status_code == 401


@pytest.mark.browser
@needs_chromium
def test_a_verified_question_through_the_page_shows_a_table_and_a_chart(demo_server):
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    expect = sync_api.expect
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
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
            shot(page, "newcomer-demo")
        finally:
            browser.close()
