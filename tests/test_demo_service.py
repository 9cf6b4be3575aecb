"""The demo as a service (issue 14): one demo per BATON_HOME. A second ``baton demo`` prints the
running one's link (the same key, which logs in to the running server) and exits 0;
``--rebuild`` refuses while one runs and deletes nothing; the key and the browser's login
survive a restart; the page says the server cannot be reached when it has stopped."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import httpx
import pytest

from baton.demo.service import LOCK_FILE, RUNNING_FILE, DemoService
from baton_processes import BATON, BatonProcess
from browser_support import launch, needs_chromium, new_page, shot
from live_server import free_port

CLEAN_ENV = ("BATON_MODEL", "BATON_API_KEYS", "BATON_DEMO_KEY", "BATON_STATE_URL", "BATON_DEMO_SMOKE")


def test_one_claim_per_folder_and_it_ends_with_its_holder(tmp_path):
    first, second = DemoService(tmp_path), DemoService(tmp_path)
    assert first.claim("http://127.0.0.1:1") is None and first.claimed
    first.publish("bt_the_key")
    running = second.claim("http://127.0.0.1:2")  # refused: the folder is claimed
    assert running is not None and not second.claimed
    assert running.url == "http://127.0.0.1:1" and running.pid == os.getpid()
    assert running.link("bt_the_key") == "http://127.0.0.1:1/#key=bt_the_key"
    assert running.link("bt_another_key") is None  # never a link that would get 401
    assert "bt_the_key" not in (tmp_path / RUNNING_FILE).read_text()  # only its digest is written
    first.release()
    assert second.running() is None and not (tmp_path / RUNNING_FILE).exists()
    assert second.claim("http://127.0.0.1:2") is None  # free again
    second.release()


def test_a_claim_held_by_a_killed_process_is_free(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, sys, time; h = open(sys.argv[1], 'a+'); fcntl.flock(h, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)"),
        str(tmp_path / LOCK_FILE)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert DemoService(tmp_path).running() is not None
    finally:
        holder.kill()
        holder.wait(10)
    service = DemoService(tmp_path)
    assert service.running() is None and service.claim("http://127.0.0.1:3") is None  # the kernel let go of it
    service.release()


def run_demo(args: list[str], home, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in CLEAN_ENV} | {"BATON_HOME": str(home), "COLUMNS": "200"}
    return subprocess.run([str(BATON), "demo", *args], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.browser
@needs_chromium
def test_a_second_demo_prints_the_running_ones_link_and_rebuild_refuses(tmp_path, monkeypatch):
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    expect = sync_api.expect
    for name in CLEAN_ENV:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    port = free_port()
    first = BatonProcess("demo", ["demo", "--port", str(port)], {"BATON_HOME": str(home), "COLUMNS": "200"}, port=port)
    try:
        first.wait_ready()
        key = first.key()
        url = f"http://127.0.0.1:{port}"
        asked = httpx.post(f"{url}/v1/ask", json={"question": "What was Epson revenue by month in 2025?"},
                           headers={"Authorization": f"Bearer {key}"}, timeout=60)
        assert asked.status_code == 200
        database = home / "demo" / "finance.sqlite"
        built = database.stat().st_mtime_ns

        second = run_demo(["--port", str(free_port())], home)
        assert second.returncode == 0, second.stdout + second.stderr
        assert "already running" in second.stdout and f"{url}/#key={key}" in second.stdout

        rebuild = run_demo(["--rebuild", "--port", str(free_port())], home)
        assert rebuild.returncode == 1 and "A demo is running" in rebuild.stdout and "--rebuild" in rebuild.stdout
        assert database.stat().st_mtime_ns == built  # nothing was deleted under the running server
        sessions = httpx.get(f"{url}/v1/sessions", headers={"Authorization": f"Bearer {key}"}, timeout=10).json()["sessions"]
        assert len(sessions) == 1

        with sync_api.sync_playwright() as playwright:
            browser = launch(playwright)
            errors: list[str] = []
            page = new_page(browser, url, errors)
            link = re.search(r"(http://\S+#key=\S+)", second.stdout).group(1)
            page.goto(link)  # the second start's link logs in to the running server
            expect(page.locator("#agents li").first).to_be_visible()
            expect(page.locator("#sessions .session")).to_have_count(1)
            shot(page, "demo-01-second-start-link")

            first.stop()
            assert DemoService(home / "demo").running() is None  # the claim ended with the process
            page.fill("#question", "What was Pokemon revenue by month in 2025?")
            page.click("#ask-button")
            failed = page.locator("#chat .turn").last.locator(".answer.error")
            expect(failed).to_contain_text("The Baton server cannot be reached")
            assert "Failed to fetch" not in failed.inner_text()
            shot(page, "demo-02-server-down")

            first = BatonProcess("demo", ["demo", "--port", str(port)], {"BATON_HOME": str(home), "COLUMNS": "200"}, port=port)
            first.wait_ready()
            assert first.key() == key  # the key survives a restart
            page.goto("about:blank")
            page.goto(url + "/")  # no key in the address: the login cookie from before the restart
            expect(page.locator("#agents li").first).to_be_visible()
            expect(page.locator("#login")).to_be_hidden()
            page.context.close()
            browser.close()
            assert not errors, errors
    finally:
        first.stop()
