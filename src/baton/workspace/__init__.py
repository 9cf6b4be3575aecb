"""The workspace layer: ``Workspace`` owns a workspace's connections, memory, knowledge
index, sessions, pipelines, tracker and chart renderer, and offers the one answer path
(``answer`` / ``answer_stream``) every surface adapts.

Importing this package opens nothing; builders open what a workspace needs.
"""

from baton.workspace.charts import ChartRenderer, ChartSpecTooLargeError
from baton.workspace.core import Workspace, Workspaces
from baton.workspace.keys import ApiKeys, Principal, new_key
from baton.workspace.sessions import SessionNotFound, SessionStore

__all__ = [
    "ApiKeys", "ChartRenderer", "ChartSpecTooLargeError", "Principal", "SessionNotFound", "SessionStore",
    "Workspace", "Workspaces", "new_key",
]
