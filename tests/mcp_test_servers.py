"""Small MCP servers for the MCP tests, written out as scripts and started over stdio.

``FINANCE`` is a real MCP server on the official SDK (a structured ``revenue`` tool, a
tool that must never be called, one that hangs, one that fails, one that kills its
process); ``GARBAGE`` speaks JSON-RPC by hand so it can answer what the SDK would never
send (structured content that is not an object, NaN, non-JSON lines, silence).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from pathlib import Path

REVENUE = {
    "pokemon": [{"month": "2025-01", "revenue": 752670.22}, {"month": "2025-02", "revenue": 838714.33}],
    "epson": [{"month": "2025-01", "revenue": 410000.5}],
}

FINANCE = '''
import asyncio, json, os, sys
from mcp.server import MCPServer
from mcp.types import CallToolResult, ImageContent, TextContent

CALLS = sys.argv[1]
REVENUE = json.loads(sys.argv[2])
mcp = MCPServer("finance-test")


def record(tool, arguments):
    with open(CALLS, "a") as f:
        f.write(json.dumps({"tool": tool, "arguments": arguments}) + "\\n")


@mcp.tool()
def revenue(unit: str, year: int = 2025) -> CallToolResult:
    """Monthly revenue of one business unit."""
    record("revenue", {"unit": unit, "year": year})
    rows = REVENUE.get(unit, [])
    return CallToolResult(content=[TextContent(type="text", text=f"{len(rows)} months of {unit} revenue")],
                          structured_content={"unit": unit, "year": year, "rows": rows})


@mcp.tool()
def lookup(question: str) -> CallToolResult:
    """Look a question up."""
    record("lookup", {"question": question})
    pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
    return CallToolResult(content=[TextContent(type="text", text="looked up"), ImageContent(type="image", data=pixel, mime_type="image/png")],
                          structured_content={"question": question, "answer": 42})


@mcp.tool()
def drop_everything() -> str:
    """Must never be called: it is not on any allowlist."""
    record("drop_everything", {})
    return "dropped"


@mcp.tool()
async def hang() -> str:
    """Never answers."""
    record("hang", {})
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        record("hang.cancelled", {})
        raise
    return "never"


@mcp.tool()
def fail() -> CallToolResult:
    """Reports a failure."""
    record("fail", {})
    return CallToolResult(content=[TextContent(type="text", text="the ledger is closed")], is_error=True)


@mcp.tool()
def crash() -> str:
    """Kills its own process mid-call."""
    record("crash", {})
    os._exit(5)


mcp.run()
'''

GARBAGE = '''
import json, math, sys, time
mode = sys.argv[1]


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\\n")
    sys.stdout.flush()


for line in sys.stdin:
    if mode == "silent":
        continue
    msg = json.loads(line)
    method, ident = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": ident, "result": {"protocolVersion": msg["params"]["protocolVersion"],
              "capabilities": {"tools": {}}, "serverInfo": {"name": "garbage", "version": "1"}}})
    elif method == "server/discover":
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "Method not found"}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": [{"name": "t", "inputSchema": {"type": "object",
              "properties": {"q": {"type": "string"}}}}]}})
    elif method == "tools/call":
        results = {
            "list": {"content": [{"type": "text", "text": "x"}], "structuredContent": [1, 2, 3]},
            "string": {"content": [{"type": "text", "text": "x"}], "structuredContent": "rows"},
            "nan": {"content": [{"type": "text", "text": "x"}], "structuredContent": {"value": math.nan}},
            "badcontent": {"content": "not a list of blocks"},
            "badimage": {"content": [{"type": "image", "data": "%%% not base64 %%%", "mimeType": "image/png"}]},
        }
        if mode == "nonjson":
            sys.stdout.write("this is not JSON at all\\n")
            sys.stdout.flush()
        elif mode == "error":
            send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32603, "message": "internal failure"}})
        else:
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": ident, "result": results[mode]}) + "\\n")
            sys.stdout.flush()
'''


def finance_command(tmp: Path) -> tuple[list[str], Path]:
    """The argv starting the finance server, and the file its calls are recorded in."""
    script = tmp / "finance_server.py"
    script.write_text(FINANCE)
    calls = tmp / "calls.jsonl"
    calls.touch()
    return [sys.executable, str(script), str(calls), json.dumps(REVENUE)], calls


def garbage_command(tmp: Path, mode: str) -> list[str]:
    script = tmp / "garbage_server.py"
    script.write_text(GARBAGE)
    return [sys.executable, str(script), mode]


def calls_in(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@contextlib.asynccontextmanager
async def served(app, *, lifespan: str = "off", path: str = "/mcp"):
    """``app`` on a real socket, served by uvicorn on the caller's event loop; yields the
    URL of ``path``."""
    import uvicorn

    from live_server import free_port

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan=lifespan,
                                           timeout_graceful_shutdown=2))
    task = asyncio.ensure_future(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        server.should_exit = True
        await task
