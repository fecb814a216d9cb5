"""An HTTP client for ``streamable_http_client`` that keeps a dead server's failures its own
(private; the public name is in :mod:`toolcall_tracker.mcp`).

Why it is needed: the ``mcp`` client (2.x) sends each request's POST in a task of the
transport's own task group (``StreamableHTTPTransport.post_writer`` starts
``_run_request_post`` there), and ``_handle_post_request`` lets the connection error of a
POST (``httpx2.ConnectError`` to a server that is gone, ``ReadError`` on a pooled
connection it closed) propagate. The task group then fails, and everything inside
``async with streamable_http_client(...)`` is cancelled: the other servers' calls, the
application's work, not only the calls of the dead server.

What it does: its transport answers a POST whose exchange fails before the response
headers with a JSON-RPC error response of its own (status 503, ``application/json``),
which the client reads as the request's answer (the branch for a server returning a
JSON-RPC error with a non-2xx status): the request fails with ``CONNECTION_CLOSED`` (a
timeout: ``REQUEST_TIMEOUT``), and nothing else is touched. A body that breaks off later
raises ``httpx2.StreamError``, which the client's readers of JSON bodies catch (its
readers of event streams catch every error). Other methods (the GET stream, the DELETE
at the end) are passed through: the client catches their errors itself.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx2
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT


class ConnectionLost(httpx2.StreamError):
    """A response body broke off: the connection to the MCP server was lost."""


class _Body(httpx2.AsyncByteStream):
    """A response body whose transport errors become :class:`ConnectionLost`."""

    def __init__(self, inner: httpx2.AsyncByteStream) -> None:
        self._inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                yield chunk
        except httpx2.TransportError as exc:
            raise ConnectionLost(
                f"the connection to the MCP server was lost ({_text(exc)})"
            ) from exc

    async def aclose(self) -> None:
        await self._inner.aclose()


class ContainedTransport(httpx2.AsyncBaseTransport):
    """Wraps a transport: a POST that fails answers a JSON-RPC error (see the module doc)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method != "POST":
            return await self._inner.handle_async_request(request)
        try:
            response = await self._inner.handle_async_request(request)
        except httpx2.TransportError as exc:
            return _failed(request, exc)
        if not isinstance(response.stream, httpx2.AsyncByteStream):
            return response  # pragma: no cover (an async transport streams asynchronously)
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=_Body(response.stream),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


def _failed(request: httpx2.Request, exc: httpx2.TransportError) -> httpx2.Response:
    """The error response standing for a POST that got no response."""
    if isinstance(exc, httpx2.TimeoutException):
        code, why = REQUEST_TIMEOUT, "the MCP server did not answer in time"
    else:
        code, why = CONNECTION_CLOSED, "the MCP server could not be reached"
    error = {"code": code, "message": f"{why} ({_text(exc)})"}
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error})
    return httpx2.Response(
        503, headers={"content-type": "application/json"}, content=body.encode(), request=request
    )


def _text(exc: BaseException) -> str:
    try:
        message = str(exc)
    except Exception:  # an exception that cannot be printed
        message = ""
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
