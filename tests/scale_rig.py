"""A rig for Baton at scale on this machine: a shop database, a stub model server that
answers by content (so any number of processes may ask it at once), and ``baton serve`` /
``baton worker`` subprocesses on one state. Used by the multi-process test and by
``bench/replicas.py``.

The stub plays three roles, told apart by the tools a request offers: the orchestrator
(routes to the ``database`` specialist), the SQL specialist (``run_sql`` with SQL chosen by
words of the question), and nothing else. A question containing ``slowly`` is held at the
stub until ``release`` is set (the first time only), and ``slow_started`` says it arrived:
a test can kill the worker running that stage at a known moment, by events.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from baton_processes import BatonProcess
from live_server import free_port
from stub_llm_server import StubLLMServer, openai_text, openai_tool_calls

REGIONS = ["north", "south", "east", "west", "centre", "islands", "coast", "hills"]
SQL = {
    "region": "SELECT region, SUM(amount) AS total FROM sales GROUP BY region ORDER BY total DESC",
    "month": "SELECT month, COUNT(*) AS sales FROM sales GROUP BY month ORDER BY month",
    "product": "SELECT product, SUM(amount) AS total FROM sales GROUP BY product ORDER BY total DESC",
}


def build_shop(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE sales (region TEXT, month TEXT, product TEXT, amount REAL)")
        rows = [(region, f"2025-{m:02d}", ("tea", "coffee", "cake")[(i + m) % 3], float(10 * (i + 1) + m))
                for i, region in enumerate(REGIONS) for m in range(1, 7)]
        conn.executemany("INSERT INTO sales VALUES (?, ?, ?, ?)", rows)
    return f"sqlite:///{path}"


class StubModel:
    def __init__(self) -> None:
        self.server = StubLLMServer()
        self.server.responder = self.respond
        self.sql_questions: Counter[str] = Counter()
        self.slow_started = threading.Event()
        self.release = threading.Event()
        self._lock = threading.Lock()
        self._held = False

    def start(self) -> StubModel:
        self.server.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self.server.stop()

    @property
    def model_string(self) -> str:
        return f"openai-compatible:{self.server.openai_base_url}#stub-model"

    def respond(self, kind: str, body: Any):
        if kind != "openai":
            return None
        messages = body.get("messages") or []
        tools = {t["function"]["name"] for t in body.get("tools") or ()}
        last = messages[-1] if messages else {}
        question = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
        if "run_sql" in tools:
            if last.get("role") == "tool":
                return openai_text("Here is what the data says.")
            with self._lock:
                self.sql_questions[question] += 1
                hold = "slowly" in question and not self._held
                self._held = self._held or hold
            if hold:
                self.slow_started.set()
                self.release.wait(120)
            key = next((k for k in SQL if k in question.lower()), "region")
            return openai_tool_calls([("call_sql", "run_sql", json.dumps({"sql": SQL[key]}))])
        if tools:  # the orchestrator: route to the one specialist, then pass its answer on
            if last.get("role") == "tool":
                return openai_text(str(last.get("content") or ""))
            return openai_tool_calls([("call_route", "database", json.dumps({"question": question}))])
        return openai_text("{}")


def serve(name: str, env: dict[str, str], *args: str) -> BatonProcess:
    port = free_port()
    return BatonProcess(name, ["serve", "--port", str(port), "--log-level", "warning", *args], env, port=port)


def worker(name: str, env: dict[str, str], *args: str) -> BatonProcess:
    return BatonProcess(name, ["worker", "--executor-id", name, *args], env)


def process_env(home: Path, state_url: str | None, model: str | None) -> dict[str, str]:
    return {"BATON_HOME": str(home), "BATON_STATE_URL": state_url or "", "BATON_MODEL": model or "", "BATON_API_KEYS": "",
            "BATON_DEMO_KEY": "", "PYTHONUNBUFFERED": "1", "COLUMNS": "300", "OTEL_SDK_DISABLED": "true",
            "BATON_LLM_TIMEOUT": "120"}
