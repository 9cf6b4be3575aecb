"""The workspace layer: ``Workspace`` owns a workspace's connections, memory, knowledge
index, sessions, pipelines, tracker and chart renderer, and offers the one answer path
(``answer`` / ``answer_stream``) every surface adapts. Where its stores keep things (the
state, conversations, API keys, buses, bulkheads) is the layer below, ``baton.state``.

Importing this package opens nothing; builders open what a workspace needs.
"""

from baton.workspace.charts import ChartRenderer, ChartSpecTooLargeError
from baton.workspace.core import Workspace, Workspaces

__all__ = ["ChartRenderer", "ChartSpecTooLargeError", "Workspace", "Workspaces"]
