"""The page's login and logout: an API key buys a session token, and the cookie holds the token.

``POST /login`` (body ``{"key": ...}``, posted by the page from the ``/#key=...`` link or the
key form) checks the key and sets a cookie holding a new login token
(``baton.state.login_tokens``), never the key: a cookie is stored on disk by the browser
and sent with every request, and a leaked cookie must not be a leaked key (which also opens
the API, MCP and OpenAI-compatible routes, and does not expire). ``POST /logout`` revokes
the token and clears the cookie. Only the page's cookie is a token: API clients present
their key (``Authorization: Bearer``, ``X-API-Key``).

The cookie:

- **host-only** (no ``Domain``), ``Path=/``, ``HttpOnly`` (scripts cannot read it),
  ``SameSite=Strict`` (no other site's page can make the browser send it), ``Secure`` and
  the ``__Host-`` prefix over HTTPS, ``Max-Age`` the token's lifetime;
- named after the server's **port** (``baton_session_8765``): browsers scope cookies by
  host, not by port, so two Baton servers on one host would otherwise overwrite each
  other's login; each token is anyway valid only where its state database is. The name is
  no boundary: over http every server on another port of the same host receives the cookie
  (README "Serving over HTTPS").

HTTPS is the request's scheme. Behind a reverse proxy that ends TLS, the scheme comes from
``X-Forwarded-Proto`` only when the operator names the proxy's address in
``BATON_FORWARDED_ALLOW_IPS`` (``baton.cli.serving.proxy_options``); otherwise the header is
ignored, as any process on the host could send it. Over plain http the cookie is neither
``Secure`` nor ``__Host-`` (browsers refuse a ``__Host-`` cookie without ``Secure``).

A cross-site ``POST /login`` or ``/logout`` (an ``Origin`` that is not this host) is
refused, so no other site can log a visitor into its own workspace or out of theirs.

Where tokens are kept (``tokens_for``): in the key store's database when the app's keys
come from one (``$BATON_HOME/state.sqlite`` or the PostgreSQL state URL: every replica
accepts them, restarts keep them); else in the state database ``BATON_STATE_URL`` names;
else in the process (an app built in code with its keys given, as tests do).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import Response

from baton.server.schemas import LoginRequest
from baton.settings import Settings
from baton.state.keys import ApiKeys, Principal, digest
from baton.state.login_tokens import MISS, LoginTokens

COOKIE_PREFIX = "baton_session"
T = TypeVar("T")


def cookie_name(request: Request) -> str:
    https = request.url.scheme == "https"
    port = request.url.port or (443 if https else 80)
    return f"{'__Host-' if https else ''}{COOKIE_PREFIX}_{port}"


def tokens_for(keys: ApiKeys) -> LoginTokens:
    store = getattr(keys, "store", None)
    if store is not None and getattr(store, "engine", None) is not None:
        return LoginTokens(store.engine)
    url = Settings.from_env().state_url
    if url:
        from baton.state.location import normalise_url

        return LoginTokens.open(normalise_url(url))
    return LoginTokens.in_memory()


async def session_principal(request: Request) -> Principal | None:
    """The caller the page's login cookie names: a live token, made from a key that is still
    valid, for a workspace this server serves. The state is read off the event loop, and
    only when this process's cache does not know the token."""
    token = request.cookies.get(cookie_name(request))
    tokens: LoginTokens | None = getattr(request.app.state, "login_tokens", None)
    if not token or tokens is None:
        return None
    known = tokens.cached(token)
    found = await _state(request, tokens.lookup, token) if known is MISS else known
    if found is None:
        return None
    workspace, key_digest = found
    keys: ApiKeys = request.app.state.keys
    principal = keys.resolve_digest(key_digest, store=False)
    if principal is None and keys.store is not None:  # a key kept in the state store: a query, off the loop
        principal = await _state(request, keys.resolve_digest, key_digest)
    if principal is None or principal.workspace != workspace or workspace not in request.app.state.workspaces.names():
        return None
    return principal


def _state(request: Request, fn: Callable[..., T], *args: Any) -> Awaitable[T]:
    """``fn(*args)`` (a read or write of keys and login tokens, in the state database) on the
    key lookups' own bulkhead: a slow state database fails a login in seconds
    (``DependencyUnavailable``, 503) and never holds the threads everything else shares."""
    return request.app.state.key_lookups.run(fn, *args)


def _same_site(request: Request) -> None:
    origin = request.headers.get("origin")
    if origin is not None and urlsplit(origin).netloc != request.headers.get("host"):
        raise HTTPException(status_code=403, detail="cross-site request refused")


def register_login_routes(app: FastAPI, tokens: LoginTokens | None = None) -> None:
    app.state.login_tokens = tokens or tokens_for(app.state.keys)

    @app.post("/login", include_in_schema=False)
    async def login(body: LoginRequest, request: Request) -> Response:
        """Exchange a key for a login session (module docstring)."""
        _same_site(request)
        keys: ApiKeys = request.app.state.keys
        principal = await _state(request, keys.resolve, body.key)
        if principal is None or principal.workspace not in request.app.state.workspaces.names():
            raise HTTPException(status_code=401, detail="missing or invalid API key")
        token = await _state(request, request.app.state.login_tokens.issue, principal.workspace, digest(body.key))
        response = Response(status_code=204)
        https = request.url.scheme == "https"
        response.set_cookie(cookie_name(request), token, max_age=int(request.app.state.login_tokens.ttl_s), path="/",
                            httponly=True, samesite="strict", secure=https)
        return response

    @app.post("/logout", include_in_schema=False)
    async def logout(request: Request) -> Response:
        """End this browser's login session: the token is revoked, the cookie cleared."""
        _same_site(request)
        name = cookie_name(request)
        await _state(request, request.app.state.login_tokens.revoke, request.cookies.get(name))
        response = Response(status_code=204)
        response.delete_cookie(name, path="/", httponly=True, samesite="strict", secure=request.url.scheme == "https")
        return response

