"""One MCP tool call, as an async-generator tool (private).

The generator sends ``tools/call`` on the application's session in a task of its own, and
yields each progress notification the server sends for it (an :class:`McpProgress`), then
the call's result: so the runner publishes the server's progress as the call's progress
(``RunControl.progress``), and the last value, the result, is also the last update.

Cancellation goes the other way: when the runner cancels the call (``RunControl.cancel``,
a timeout, the run's deadline, the run's own cancellation), the request's task is
cancelled, and the ``mcp`` client then sends ``notifications/cancelled`` for it (the 1.x
SDK never did; the extra requires ``mcp>=2``).

Outcomes: a result with ``isError`` raises :class:`~toolcall_tracker.errors.FailCall`
with an :class:`~toolcall_tracker.failures.McpFailed` (``tool_error``), as does an error
response (``protocol_error``) and a closed connection (``disconnected``: only this
session's calls fail). A session that reported a closed connection is remembered as gone
(:data:`_GONE`, keyed weakly by the session): its later calls fail ``disconnected`` at once,
without a request. That keeps a dead server's failures its own over streamable HTTP too,
where the ``mcp`` client's transport raises a new request's connection error from the
transport's task group, cancelling everything inside ``streamable_http_client``
(``StreamableHTTPTransport._handle_post_request`` sends the POST in a task of that group
and nothing catches ``httpx2.TransportError`` on the way; see ``mcp_http_client`` for a
client that turns such errors into error responses).

A successful result is its structured content when the server gave one, else its text
(text blocks joined), else its content blocks as JSON values.

Progress is superseded by the next update, so the queue between the session's task and the
generator keeps the latest :data:`PROGRESS_BUFFER` updates and drops the older ones.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import anyio

from ..errors import FailCall
from ..failures import McpFailed

if TYPE_CHECKING:
    from mcp import ClientSession

PROGRESS_BUFFER: Final = 64
"""At most this many progress updates wait between the session and the runner."""

_CONNECTION_CLOSED: Final = -32000  # mcp_types.CONNECTION_CLOSED

_GONE: Final[weakref.WeakKeyDictionary[ClientSession, str]] = weakref.WeakKeyDictionary()
"""Sessions whose connection a call found closed, with what the client said."""


@dataclass(frozen=True)
class McpProgress:
    """A progress notification an MCP server sent for a call (the value of its
    :class:`~toolcall_tracker.runner.ProgressUpdate`).

    Attributes:
        progress: how far the call is (increases with each update).
        total: the total ``progress`` will reach, if the server knows it.
        message: what the server says it is doing, if anything.
    """

    progress: float
    total: float | None = None
    message: str | None = None


class _Updates:
    """The latest progress updates of one call, from the session's task to the generator."""

    def __init__(self) -> None:
        self._items: deque[McpProgress] = deque(maxlen=PROGRESS_BUFFER)
        self._wake = anyio.Event()
        self._closed = False

    async def put(self, progress: float, total: float | None, message: str | None) -> None:
        if not self._closed:
            self._items.append(McpProgress(progress, total, message))
            self._wake.set()

    def close(self) -> None:
        self._closed = True
        self._wake.set()

    async def __aiter__(self) -> AsyncIterator[McpProgress]:
        while True:
            while self._items:
                yield self._items.popleft()
            if self._closed:
                return
            await self._wake.wait()
            self._wake = anyio.Event()


@dataclass(frozen=True)
class Target:
    """Where a runner tool's calls go: a session, and the tool's names on both sides."""

    session: ClientSession
    server: str
    mcp_name: str
    name: str


async def call(target: Target, arguments: dict[str, Any]) -> AsyncIterator[Any]:
    """Call the tool on its server; yield its progress, then its result.

    The progress is yielded from inside the task group running the request. That is safe
    here because the runner's ``drive`` is this generator's only consumer, in the same
    task, and does nothing but publish (synchronously) between two steps: no other cancel
    scope is entered or left while the generator is suspended.
    """
    from mcp import MCPError

    gone = _GONE.get(target.session)
    if gone is not None:
        why = f"an earlier call found the connection closed ({gone}); the request was not sent"
        raise FailCall(_failed(target, why, "disconnected", code=_CONNECTION_CLOSED))
    updates = _Updates()
    outcome: list[Any] = []

    async def request() -> None:
        try:
            outcome.append(
                await target.session.call_tool(
                    target.mcp_name, arguments, progress_callback=updates.put
                )
            )
        except Exception as exc:  # an error response, a closed connection, a bad answer
            outcome.append(exc)
        finally:
            updates.close()

    async with anyio.create_task_group() as tg:
        tg.start_soon(request)
        async for update in updates:
            yield update
    result = outcome[0]
    if isinstance(result, MCPError):
        if result.error.code == _CONNECTION_CLOSED:
            _GONE[target.session] = result.error.message
        raise FailCall(_error_response(target, result.error.code, result.error.message))
    if isinstance(result, Exception):  # the answer could not be read (not a tools/call result)
        try:
            text = f"{type(result).__name__}: {result}"
        except Exception:  # an exception that cannot be printed
            text = type(result).__name__
        raise FailCall(_failed(target, f"its answer could not be read ({text})", "protocol_error"))
    yield _result(target, result)


def _error_response(target: Target, code: int, message: str) -> McpFailed:
    """The failure of an error response; the client reports a closed connection (stdio's
    end of file, streamable HTTP's stream ending without the answer) with the code
    ``CONNECTION_CLOSED``, so that code reads ``disconnected``."""
    if code == _CONNECTION_CLOSED:
        why = f"the connection closed before the answer ({message})"
        return _failed(target, why, "disconnected", code=code)
    return _failed(target, f"the server answered an error: {message}", "protocol_error", code=code)


def _failed(target: Target, why: str, reason: Any, **fields: Any) -> McpFailed:
    return McpFailed(
        message=f"MCP server {target.server!r}, tool {target.mcp_name!r}: {why}",
        tool=target.name,
        server=target.server,
        mcp_tool=target.mcp_name,
        reason=reason,
        **fields,
    )


def _result(target: Target, result: Any) -> Any:
    """A successful result's value for the model, or
    :class:`~toolcall_tracker.errors.FailCall` for ``isError``."""
    structured = getattr(result, "structured_content", None)
    blocks = list(getattr(result, "content", None) or ())
    texts = [block.text for block in blocks if getattr(block, "type", None) == "text"]
    if getattr(result, "is_error", False):
        text = "\n".join(texts) or None
        why = f"the tool reported an error: {text if text is not None else '(no text)'}"
        raise FailCall(_failed(target, why, "tool_error", content=text, structured=structured))
    if structured is not None:
        return structured
    if blocks and len(texts) == len(blocks):
        return "\n".join(texts)
    return [_block(block) for block in blocks]


def _block(block: Any) -> Any:
    """A content block as a JSON value; binary data (images, audio) is summarised."""
    value = block.model_dump(mode="json", by_alias=True, exclude_none=True)
    data = value.get("data")
    if isinstance(data, str) and value.get("type") in ("image", "audio"):
        value["data"] = f"<{len(data)} base64 characters omitted>"
    return value
