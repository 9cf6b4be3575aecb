"""State behind one PostgreSQL URL: what one process writes (a conversation, memory, a key)
another reads, and processes starting together on an empty database install it once."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa

from baton.llm import FunctionModel
from baton.state import ApiKeys
from baton.state.location import State
from baton.workspace.database import open_database_workspace
from workspace_doubles import routed, sales_db

pytestmark = pytest.mark.postgres


@pytest.fixture
def shop(tmp_path):
    return sales_db(tmp_path / "shop.sqlite", [("north", 10.0), ("south", 4.5), ("east", 7.0)])


model = routed("Sales by region.")


async def test_two_processes_on_one_state_share_conversations_memory_and_keys(state_db, shop, tmp_path):
    one = State.from_env({}, url=state_db, home=tmp_path / "one")  # two replicas: different homes, one URL
    two = State.from_env({}, url=state_db, home=tmp_path / "two")
    async with open_database_workspace(shop, FunctionModel(model), state=one) as a, \
            open_database_workspace(shop, FunctionModel(model), state=two) as b:
        first = await a.answer("Sales by region?")
        assert len(first.data) == 3
        top = await b.answer("Show only the top 2", first.session_id)  # the other replica continues it
        assert top.metadata["followup"] == "top_n" and [r["region"] for r in top.data] == ["north", "east"]
        confirmed = await b.feedback(top.turn_id, verdict="confirmed")
        record_id = confirmed["memory"]["record_id"]
        assert any(r.id == record_id for r in a.memory.list_records(a.memory_scope(), kind="benchmark"))
        assert [t.question for t in await a.sessions.turns("database", first.session_id)] == ["Sales by region?", "Show only the top 2"]
    keys_one, keys_two = one.keys(), two.keys()
    try:
        default = keys_one.default_key("database")
        assert keys_two.default_key("database") == default
        made = keys_one.create("database", "ci")
        accepting = ApiKeys(store=keys_two)
        assert accepting.resolve(made).workspace == "database" and accepting.resolve(default).workspace == "database"
        assert accepting.resolve("bt_not-a-key") is None
        assert keys_one.revoke(sa_digest(made)[:12], "database") == 1
        assert accepting.resolve(made) is None
    finally:
        keys_one.close()
        keys_two.close()


def sa_digest(key):
    from baton.state.keys import digest

    return digest(key)


def test_processes_starting_together_on_an_empty_database_install_it_once(state_db, tmp_path):
    from baton.memory import MemoryStore, TrustedAuthenticator
    from baton.state import SessionStore

    go = threading.Barrier(6, timeout=60)

    def start(i):
        state = State.from_env({}, url=state_db, home=tmp_path / str(i))
        go.wait()
        sessions, keys = SessionStore(state.url), state.keys()
        memory = MemoryStore(state.url, authenticator=TrustedAuthenticator())
        keys.default_key("demo")
        for part in (sessions, keys, memory):
            part.close()

    with ThreadPoolExecutor(max_workers=6) as pool:
        started = [pool.submit(start, i) for i in range(6)]
    failures = [repr(f.exception()) for f in started if f.exception() is not None]  # any failure is the finding
    assert failures == []
    engine = sa.create_engine(state_db)
    with engine.connect() as conn:
        versions = dict(conn.execute(sa.text("SELECT component, version FROM baton_schema_versions")).all())
        defaults = conn.execute(sa.text("SELECT COUNT(*) FROM baton_api_keys WHERE default_for = 'demo'")).scalar_one()
    engine.dispose()
    assert versions == {"sessions": 2, "keys": 1} and defaults == 1


def test_a_state_url_must_be_postgresql(tmp_path):
    from baton.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="PostgreSQL"):
        State.from_env({}, url=f"sqlite:///{tmp_path / 'x.sqlite'}")
    assert State.from_env({"BATON_STATE_URL": "postgresql://u@h/db"}).url == "postgresql+psycopg://u@h/db"
