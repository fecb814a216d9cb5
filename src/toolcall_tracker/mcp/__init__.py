"""MCP tools: the tools of MCP servers, run by the runner like your own.

Needs the ``[mcp]`` extra (``mcp>=2``). The application opens a ``mcp.ClientSession``
(over stdio, streamable HTTP...) and owns it; :func:`mcp_tools` lists its tools and makes
each one a :class:`~toolcall_tracker.Tool` (an :class:`McpTool`) whose JSON Schema is the
server's, so the provider tool definitions (``openai_chat_tools`` and the others) carry it
and the runner checks the arguments against it before the call.

An MCP call then goes through the runner like any tool: head start (``eager``), the gate
for the end of the turn, approval, the concurrency caps, timeouts and the run's deadline.
The server's progress notifications become the call's progress (an :class:`McpProgress`
per ``ProgressUpdate``); cancelling the call (``RunControl.cancel``, a timeout, the run's
cancellation) sends ``notifications/cancelled`` to the server. A result with ``isError``,
an error response and a closed connection end the call with an ``mcp_error`` failure
(:class:`~toolcall_tracker.failures.McpFailed`), which the feedback builders render for
the model; a server that disconnects fails its own calls only, and the later calls of
its session fail ``disconnected`` at once, without a request. Over streamable HTTP, open
the session with ``streamable_http_client(url, http_client=mcp_http_client())``: the
``mcp`` client otherwise lets a new request's connection error to a server that died
unnoticed cancel everything inside ``streamable_http_client``.
"""

from __future__ import annotations

from ._call import PROGRESS_BUFFER, McpProgress
from ._client import mcp_http_client
from ._tool import McpTool, mcp_tools

__all__ = ["PROGRESS_BUFFER", "McpProgress", "McpTool", "mcp_http_client", "mcp_tools"]
