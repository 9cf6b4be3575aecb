"""The HTTP surface: API, Server-Sent Events, OpenAI-compatible endpoint, the web page.

A thin adapter over ``baton.workspace``: routes authenticate, pick the caller's workspace
and call its answer path; no route answers on its own.
"""

from baton.server.app import create_app
from baton.state import ApiKeys, Principal, SessionStore
from baton.workspace import Workspace, Workspaces

__all__ = ["ApiKeys", "Principal", "SessionStore", "Workspace", "Workspaces", "create_app"]
