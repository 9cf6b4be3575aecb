"""Specialist agents: SQL over databases (``baton.specialists.sql``), SQL over DataFrames
(``dataframe``), knowledge retrieval (``knowledge``), MCP servers (``mcp``). Each subpackage
exports its own names (and ``baton`` the ones most programs need); this package none.
"""

__all__: list[str] = []
