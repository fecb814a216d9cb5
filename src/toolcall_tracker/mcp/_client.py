"""The public factory of the contained HTTP client (private; see :mod:`toolcall_tracker.mcp`).

Kept apart from :mod:`._http`, which imports ``httpx2`` (installed with ``mcp``) at the top,
so that importing :mod:`toolcall_tracker.mcp` needs neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx2


def mcp_http_client(
    *,
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: httpx2.Auth | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
) -> httpx2.AsyncClient:
    """An HTTP client for ``streamable_http_client`` with which a dead server fails only
    its own requests.

    Pass it as ``streamable_http_client(url, http_client=mcp_http_client())``. Without
    it, the ``mcp`` client (2.x) lets the connection error of a new request to a server
    that is gone escape from its transport's task group, which cancels everything inside
    ``streamable_http_client`` (other servers' calls, your own work). With it, such a
    request fails like a closed connection: an MCP call then ends ``disconnected``
    (:class:`~toolcall_tracker.failures.McpFailed`), and nothing else is touched. A
    timeout before the response fails the request with ``REQUEST_TIMEOUT``.

    The client is configured as the ``mcp`` package's default one (30 s to connect,
    write and wait for a pooled connection, 300 s to read, since a server may hold a
    response stream open; no redirects followed by the client itself).

    Args:
        headers: headers sent with every request.
        timeout: an ``httpx2.Timeout`` in place of the default.
        auth: an ``httpx2.Auth`` for every request.
        transport: the transport to wrap (default: a new ``httpx2.AsyncHTTPTransport``).

    Returns:
        An ``httpx2.AsyncClient``; ``streamable_http_client`` does not close a client it
        was given, so open it with ``async with`` (or close it) yourself.

    Raises:
        ImportError: the ``mcp`` package (2.x) is not installed.
    """
    from ._tool import require_mcp

    require_mcp()
    import httpx2

    from ._http import ContainedTransport

    if timeout is None:
        timeout = httpx2.Timeout(30.0, read=300.0)
    options: dict[str, Any] = {"timeout": timeout}
    if headers is not None:
        options["headers"] = headers
    if auth is not None:
        options["auth"] = auth
    inner = httpx2.AsyncHTTPTransport() if transport is None else transport
    return httpx2.AsyncClient(transport=ContainedTransport(inner), **options)
