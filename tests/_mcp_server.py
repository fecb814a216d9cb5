"""A real MCP server for the tests (``mcp``'s MCPServer), run as a subprocess.

    python tests/_mcp_server.py NAME stdio
    python tests/_mcp_server.py NAME http FD     # streamable HTTP on a listening socket

Over HTTP it serves on the socket inherited as file descriptor FD (bound by the test to a
free loopback port and listening before this process starts, so no readiness race).

Tools: ``echo`` (its text back), ``add`` (structured content), ``steps`` (progress, then
waits until ``release``), ``hang`` (progress, then waits forever, noting its cancellation),
``seen`` (waits until a cancellation was noted, returns the notes), ``fail`` (``isError``),
``die`` (progress, then the process exits mid-call).
"""

from __future__ import annotations

import os
import socket
import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

name = sys.argv[1]
server = MCPServer(name, log_level="WARNING")
released = anyio.Event()
cancelled = anyio.Event()
notes: list[str] = []


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return f"{name}:{text}"


@server.tool(name="math.add")
def add(a: int, b: int) -> dict[str, int]:
    """Add two integers."""
    return {"sum": a + b}


@server.tool()
async def steps(n: int, ctx: Context) -> str:
    """Report n progress steps, then wait for release."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"step {i}")
    await released.wait()
    return f"{n} steps"


@server.tool()
def release() -> str:
    """Let steps finish."""
    released.set()
    return "released"


@server.tool()
async def hang(label: str, ctx: Context) -> str:
    """Report that it started, then wait until cancelled."""
    try:
        await ctx.report_progress(0, None, "started")
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        notes.append(f"cancelled:{label}")
        cancelled.set()
        raise
    return "unreachable"


@server.tool()
async def seen() -> list[str]:
    """The cancellations this server saw (waits for the first)."""
    await cancelled.wait()
    return notes


@server.tool()
def fail(reason: str) -> str:
    """Fail with isError."""
    raise ToolError(f"refused: {reason}")


@server.tool()
async def die(ctx: Context) -> str:
    """Exit the process in the middle of the call."""
    await ctx.report_progress(0, None, "about to die")
    os._exit(3)


if __name__ == "__main__":
    if sys.argv[2] == "stdio":
        server.run("stdio")
    else:
        import uvicorn

        sock = socket.socket(fileno=int(sys.argv[3]))
        app = server.streamable_http_app()
        config = uvicorn.Config(app, log_level="warning", lifespan="on")
        anyio.run(uvicorn.Server(config).serve, [sock])
