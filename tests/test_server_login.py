"""The page's login session (issue 14): the cookie holds a session token, never the API key;
host-only, Path=/, HttpOnly, SameSite=Strict, named after the port; logout revokes it; the
tokens live in the state, so a replica and a restarted server accept them, and revoking the
key ends every session made from it."""

from __future__ import annotations

from http.cookies import SimpleCookie

import httpx
import pytest

from baton.agents import OrchestratorAgent
from baton.server import ApiKeys, SessionStore, Workspace, Workspaces, create_app
from baton.state.keystore import KeyStore
from baton.state.login_tokens import LoginTokens

KEY = "bt_login_test_key"


def app_with(keys: ApiKeys, name: str = "acme"):
    return create_app(Workspaces([Workspace(name, OrchestratorAgent(f"{name}-o"), SessionStore())]), keys)


def client(app, base: str = "http://test:8765") -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base)


def cookie_of(response: httpx.Response) -> SimpleCookie:
    jar = SimpleCookie()
    jar.load(response.headers["set-cookie"])
    return jar


async def test_the_cookie_holds_a_session_token_scoped_to_this_server():
    async with client(app_with(ApiKeys({KEY: "acme"}))) as c:
        response = await c.post("/login", json={"key": KEY}, headers={"Origin": "http://test:8765"})
        assert response.status_code == 204
        raw = response.headers["set-cookie"]
        (name, morsel), = cookie_of(response).items()
        assert name == "baton_session_8765"
        assert morsel.value.startswith("bs_") and KEY not in raw and len(morsel.value) > 40
        assert morsel["path"] == "/" and morsel["httponly"] and morsel["samesite"].lower() == "strict"
        assert not morsel["domain"] and not morsel["secure"] and int(morsel["max-age"]) == 14 * 24 * 3600
        assert (await c.get("/v1/agents")).status_code == 200  # the cookie authenticates the page
        c.cookies.clear()
        c.cookies.set("baton_key", KEY)  # the key itself in a cookie opens nothing
        c.cookies.set("baton_session_8765", KEY)
        assert (await c.get("/v1/agents")).status_code == 401


async def test_over_https_the_cookie_is_secure_and_host_prefixed():
    async with client(app_with(ApiKeys({KEY: "acme"})), "https://baton.example") as c:
        response = await c.post("/login", json={"key": KEY})
        (name, morsel), = cookie_of(response).items()
        assert name == "__Host-baton_session_443" and morsel["secure"] and morsel["path"] == "/" and not morsel["domain"]
        assert (await c.get("/v1/agents")).status_code == 200


async def test_logout_revokes_the_token_not_only_the_cookie():
    async with client(app_with(ApiKeys({KEY: "acme"}))) as c:
        await c.post("/login", json={"key": KEY})
        token = c.cookies.get("baton_session_8765")
        out = await c.post("/logout")
        assert out.status_code == 204 and 'baton_session_8765=""' in out.headers["set-cookie"]
        assert (await c.get("/v1/agents")).status_code == 401
        c.cookies.set("baton_session_8765", token)  # a copy kept from before the logout
        assert (await c.get("/v1/agents")).status_code == 401


async def test_cross_site_login_and_logout_are_refused():
    async with client(app_with(ApiKeys({KEY: "acme"}))) as c:
        assert (await c.post("/login", json={"key": KEY}, headers={"Origin": "https://evil.example"})).status_code == 403
        assert "set-cookie" not in (await c.post("/login", json={"key": KEY}, headers={"Origin": "https://evil.example"})).headers
        await c.post("/login", json={"key": KEY})
        assert (await c.post("/logout", headers={"Origin": "https://evil.example"})).status_code == 403
        assert (await c.get("/v1/agents")).status_code == 200  # still logged in


@pytest.mark.parametrize("value", ["", "x" * 5000, "bs_' OR 1=1 --", "bs_\u00e9\u0000".encode("utf-8"), "%00%0d%0aSet-Cookie: a=b"])
async def test_hostile_cookie_values_are_simply_not_logged_in(value):
    raw = value if isinstance(value, bytes) else value.encode()
    async with client(app_with(ApiKeys({KEY: "acme"}))) as c:
        response = await c.get("/v1/agents", headers={"Cookie": b"baton_session_8765=" + raw})
        assert response.status_code == 401 and "set-cookie" not in response.headers


async def test_replicas_and_restarts_accept_the_token_and_revoking_the_key_ends_the_session(tmp_path):
    url = f"sqlite:///{tmp_path / 'state.sqlite'}"
    first_store = KeyStore.open(url)
    key = first_store.default_key("acme")
    replica_a = app_with(ApiKeys(store=first_store))
    replica_b = app_with(ApiKeys(store=KeyStore.open(url)))
    async with client(replica_a) as a, client(replica_b) as b:
        await a.post("/login", json={"key": key})
        token = a.cookies.get("baton_session_8765")
        b.cookies.set("baton_session_8765", token)
        assert (await b.get("/v1/agents")).status_code == 200  # issued by one replica, accepted by the other
    restarted = app_with(ApiKeys(store=KeyStore.open(url)))
    async with client(restarted) as c:
        c.cookies.set("baton_session_8765", token)
        assert (await c.get("/v1/agents")).status_code == 200  # a restart keeps visitors logged in
        store = KeyStore.open(url)
        (entry,) = store.list("acme")
        assert store.revoke(entry["id"], "acme") == 1
        store.close()
    after = app_with(ApiKeys(store=KeyStore.open(url)))
    async with client(after) as c:
        c.cookies.set("baton_session_8765", token)
        assert (await c.get("/v1/agents")).status_code == 401  # no session outlives its key


def test_tokens_are_kept_as_digests_and_expire(tmp_path):
    import sqlalchemy as sa

    tokens = LoginTokens.open(f"sqlite:///{tmp_path / 't.sqlite'}", ttl_s=-1)
    token = tokens.issue("acme", "f" * 64)
    with tokens.engine.connect() as conn:
        stored = conn.execute(sa.text("SELECT digest FROM baton_login_sessions")).scalars().all()
    assert token not in stored and len(stored) == 1
    assert tokens.lookup(token) is None  # expired at once (ttl -1)
    live = LoginTokens(tokens.engine)
    fresh = live.issue("acme", "f" * 64)
    assert live.lookup(fresh) == ("acme", "f" * 64)
    assert live.revoke(fresh) and live.lookup(fresh) is None and not live.revoke(fresh)
    tokens.close()


async def test_keys_given_by_the_environment_can_keep_sessions_in_the_state(tmp_path):
    """``BATON_API_KEYS`` servers (no key store): ``create_app(login_tokens=...)`` puts the
    sessions in the state all worker processes share."""
    url = f"sqlite:///{tmp_path / 'state.sqlite'}"
    workers = [create_app(Workspaces([Workspace("acme", OrchestratorAgent("o"), SessionStore())]), ApiKeys({KEY: "acme"}),
                          login_tokens=LoginTokens.open(url)) for _ in range(2)]
    async with client(workers[0]) as a, client(workers[1]) as b:
        await a.post("/login", json={"key": KEY})
        b.cookies.set("baton_session_8765", a.cookies.get("baton_session_8765"))
        assert (await b.get("/v1/agents")).status_code == 200


async def test_baton_serve_with_environment_keys_shares_login_sessions_across_its_processes(tmp_path, monkeypatch):
    """``serve --workers N`` with ``BATON_API_KEYS``: each worker builds its app through
    ``server_app``; a session made on one is accepted by another (the embedded state holds it)."""
    import sqlite3

    from baton.cli.serving import server_app
    from baton.cli.specs import with_flags
    from baton.state.location import State

    with sqlite3.connect(tmp_path / "shop.sqlite") as db:
        db.execute("CREATE TABLE orders (id INTEGER)")
    monkeypatch.setenv("BATON_API_KEYS", f"{KEY}=database")
    state = State(home=tmp_path / "home")
    spec = with_flags(None, database=f"sqlite:///{tmp_path / 'shop.sqlite'}")
    workers = [server_app([spec], None, state)[0] for _ in range(2)]
    try:
        async with client(workers[0]) as a, client(workers[1]) as b:
            assert (await a.post("/login", json={"key": KEY})).status_code == 204
            b.cookies.set("baton_session_8765", a.cookies.get("baton_session_8765"))
            assert (await b.get("/v1/agents")).status_code == 200
    finally:
        for app in workers:
            await app.state.workspaces.aclose()
            app.state.login_tokens.close()


async def test_a_frozen_token_store_fails_a_login_in_seconds_on_the_key_lookups_own_threads():
    import threading

    from baton.state.bulkheads import Bulkhead

    release = threading.Event()
    ran_on: list[str] = []

    class FrozenTokens(LoginTokens):  # the state database stopped answering
        def issue(self, workspace: str, key_digest: str) -> str:
            ran_on.append(threading.current_thread().name)
            release.wait(10)
            return super().issue(workspace, key_digest)

    app = create_app(Workspaces([Workspace("acme", OrchestratorAgent("acme-o"), SessionStore())]), ApiKeys({KEY: "acme"}),
                     login_tokens=FrozenTokens.in_memory())
    try:
        async with app.router.lifespan_context(app), client(app) as c:
            app.state.key_lookups = Bulkhead("keys", threads=1, queue=4, timeout_s=0.3)
            response = await c.post("/login", json={"key": KEY})
            assert response.status_code == 503 and "set-cookie" not in response.headers
            assert ran_on and ran_on[0].startswith("baton-keys")  # never the threads every other part shares
            assert (await c.get("/v1/agents", headers={"Authorization": f"Bearer {KEY}"})).status_code == 200
    finally:
        release.set()


@pytest.mark.parametrize("trusted", ["", "127.0.0.1"])
def test_a_forwarded_https_is_believed_only_from_the_proxies_the_operator_names(monkeypatch, trusted):
    """Over plain http the cookie is neither ``Secure`` nor ``__Host-`` (browsers would refuse
    it); ``X-Forwarded-Proto: https`` makes it both only when ``BATON_FORWARDED_ALLOW_IPS``
    names the sender (any process on a shared host can send that header)."""
    from baton.cli.serving import proxy_options
    from live_server import serve

    monkeypatch.setenv("BATON_FORWARDED_ALLOW_IPS", trusted)
    with serve(app_with(ApiKeys({KEY: "acme"})), **proxy_options()) as base:
        port = int(base.rsplit(":", 1)[1])
        url = f"{base}/login"
        plain = httpx.post(url, json={"key": KEY})
        forwarded = httpx.post(url, json={"key": KEY}, headers={"X-Forwarded-Proto": "https"})
    assert plain.status_code == forwarded.status_code == 204
    (name, morsel), = cookie_of(plain).items()
    assert name == f"baton_session_{port}" and not morsel["secure"]
    (name, morsel), = cookie_of(forwarded).items()
    if trusted:
        assert name == f"__Host-baton_session_{port}" and morsel["secure"] and morsel["path"] == "/" and not morsel["domain"]
    else:
        assert name == f"baton_session_{port}" and not morsel["secure"]
