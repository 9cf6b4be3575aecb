"""The HTTP surface: API, Server-Sent Events, OpenAI-compatible endpoint, the web page."""

from baton.server.app import create_app
from baton.server.auth import ApiKeys, Principal
from baton.server.sessions import SessionStore
from baton.server.workspace import Workspace, Workspaces

__all__ = ["ApiKeys", "Principal", "SessionStore", "Workspace", "Workspaces", "create_app"]
