"""A database outage, as the server's users see it: a 503 with ``error_code:
database_unavailable`` and a plain sentence, never the database's host, port, a path or the
driver's words (``baton.public_errors``); the log keeps the full text.

The outage is real: ``baton serve`` over a PostgreSQL database reached through a TCP proxy
(``fault_proxy``), which is then closed, so the next connection is refused on a closed port.
Decided: the generic words "could not be reached" are what a user reads; "connection
refused", the host, the port and the driver's error names are not."""

from __future__ import annotations

import json
import re

import httpx
import pytest
import sqlalchemy as sa

from baton.public_errors import public_event, public_text, redact
from fault_proxy import FaultProxy
from pg_fresh import fresh_database
from scale_rig import REGIONS, StubModel, process_env, serve

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(240)]
DRIVER_WORDS = ("psycopg", "OperationalError", "sqlalchemy", "Connection refused", "connection to server")


def _shop(url: str) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE sales (region TEXT, month TEXT, product TEXT, amount REAL)")
        for i, region in enumerate(REGIONS):
            conn.exec_driver_sql(f"INSERT INTO sales VALUES ('{region}', '2025-01', 'tea', {10.0 * (i + 1)})")
    engine.dispose()


def _private(text: str, port: int) -> list[str]:
    """What ``text`` leaks: a driver's word, the host, or a port as a number of its own (not digits inside
    an id or a timestamp: ``"...00:33.185432"`` is no port)."""
    found = [word for word in (*DRIVER_WORDS, "127.0.0.1", "localhost") if word.lower() in text.lower()]
    return found + [number for number in (str(port), "5432") if re.search(rf"(?<![0-9A-Za-z]){number}(?![0-9A-Za-z])", text)]


def test_a_refused_database_connection_is_a_503_with_a_typed_code_and_no_host(tmp_path, postgres_url):
    stub = StubModel().start()
    with fresh_database(postgres_url, prefix="baton_outage") as url:
        _shop(url)
        target = sa.make_url(url)
        proxy = FaultProxy(target.host or "127.0.0.1", target.port or 5432).start()
        through = proxy.url_for(url)
        server = serve("outage", process_env(tmp_path / "home", None, stub.model_string), "--database", through,
                       "--unsafe-allow-privileged-role", "--log-level", "info")
        closed = False
        try:
            server.wait_ready()
            headers = {"Authorization": f"Bearer {server.key()}"}
            with httpx.Client(base_url=server.url, headers=headers, timeout=60) as client:
                working = client.post("/v1/ask", json={"question": "Total sales by region?"})
                assert working.status_code == 200 and working.json()["data"], working.text
                proxy.stop()  # the database's port is closed: every new connection is refused
                closed = True

                asked = client.post("/v1/ask", json={"question": "Total sales by region?"})
                chat = client.post("/v1/chat/completions", json={"model": "database", "messages": [
                    {"role": "user", "content": "How many sales per month?"}]})
        finally:
            server.stop()
            stub.stop()
            if not closed:
                proxy.stop()

    assert asked.status_code == 503, asked.text
    body = asked.json()
    assert body["error_code"] == "database_unavailable" and "could not be reached" in body["error"]
    assert chat.status_code == 503 and chat.json()["error"]["code"] == "database_unavailable", chat.text
    for text in (asked.text, chat.text):
        assert _private(text, proxy.port) == [], text[:3000]
    assert str(proxy.port) in server.output  # the log keeps what happened


@pytest.mark.parametrize("text", [
    'connection failed: connection to server at "10.20.30.40", port 6543 failed: Connection refused',
    "(pymysql.err.OperationalError) (2003, \"Can't connect to MySQL server on 'db.internal' ([Errno 111] Connection refused)\")",
    'connection to server on socket "/var/run/postgresql/.s.PGSQL.6543" failed: No such file or directory',
    "could not open postgresql+psycopg://admin:hunter2@db.example.com:6543/prod",
    'IO Error: Cannot open file "/srv/secret/other.duckdb": No such file or directory',
    "(sqlite3.OperationalError) unable to open database file C:\\data\\x.sqlite",
])
def test_hosts_ports_paths_urls_and_driver_names_never_pass(text):
    shown = redact(text)
    for secret in ("10.20.30.40", "6543", "db.internal", "/var/run", "hunter2", "db.example.com", "/srv/secret", "C:\\data",
                   "psycopg", "pymysql", "sqlite3", "OperationalError"):
        assert secret not in shown, shown


def test_an_answer_failure_keeps_its_reason_and_a_dependency_failure_reads_as_its_code():
    refused = "unsafe_sql: COPY ... TO PROGRAM is not allowed; column \"x\" does not exist at 12:30:45, x::text"
    assert redact(refused) == refused
    assert public_text('connection to server at "10.0.0.1", port 5432 failed', "database_unavailable") == "The database could not be reached."
    assert public_text("KeyError: '/home/me/.baton/state.sqlite'", "agent_failed") == "A specialist failed while answering."
    event = {"type": "agent.retry", "data": {"agent": "sales", "reason": 'server at "10.0.0.1", port 5432 refused', "attempt": 1}}
    assert "10.0.0.1" not in json.dumps(public_event(event)) and public_event(event)["data"]["attempt"] == 1


def test_linear_in_the_texts_length():
    """Every pattern runs over at most ``MAX_TEXT`` characters: a hostile 1 MB message costs
    no more than its first 500 characters."""
    from baton.public_errors import MAX_TEXT

    hostile = ("a." * 500_000) + "com:" + "1" * 10
    assert len(redact(hostile)) <= MAX_TEXT


def test_a_pipeline_runs_outcome_is_public_too():
    from baton.public_errors import public_run

    view = {"workflow_id": "w", "status": "ERROR", "error": "could not reach postgresql://u:p@10.1.2.3:5432/x",
            "outcome": {"error": 'sales: connection to server at "10.1.2.3", port 5432 failed', "error_code": "database_unavailable",
                        "metadata": {"agent_errors": [{"agent": "sales", "error": 'server at "10.1.2.3" failed',
                                                       "error_code": "database_unavailable"}]}}}
    shown = json.dumps(public_run(view))
    assert "10.1.2.3" not in shown and "5432" not in shown and "sales: The database could not be reached." in shown
    assert public_run({"workflow_id": "w", "outcome": None}) == {"workflow_id": "w", "outcome": None}


async def test_an_mcp_tool_result_carries_the_public_text_too():
    from baton.mcp.server import answer_result
    from baton.response import AIMessage, ResponseType

    failed = AIMessage(content="The database could not be reached.", response_type=ResponseType.ERROR, error_code="database_unavailable",
                       error='sales: connection to server at "10.9.8.7", port 6543 failed: Connection refused',
                       metadata={"agent_errors": [{"agent": "sales", "error_type": "SQLExecutionError", "error_code": "database_unavailable",
                                                   "error": 'connection to server at "10.9.8.7", port 6543 failed'}]})
    result = await answer_result(failed, chart_image=False)
    shown = json.dumps(result.structured_content) + "".join(getattr(c, "text", "") for c in result.content)
    assert result.is_error and "10.9.8.7" not in shown and "6543" not in shown
    assert result.structured_content["error"]["code"] == "database_unavailable"
    assert failed.error.startswith("sales: connection to server")  # the answer itself is untouched
