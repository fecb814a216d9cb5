"""MCP tools as runner tools (private; the public names are in :mod:`toolcall_tracker.mcp`)."""

from __future__ import annotations

import copy
import functools
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from .._jsonout import _jsonable
from ..tools import NeedsApproval, Tool, ToolSettings
from . import _call, _names, _schema

if TYPE_CHECKING:
    from mcp import ClientSession


class McpTool(Tool[[dict[str, Any]], AsyncIterator[Any]]):
    """A tool of an MCP server, as the runner runs it: build them with :func:`mcp_tools`.

    Its ``parameters`` are the server's input schema (so every provider's tool definitions
    carry it), its arguments are checked against that schema, and a call is a
    ``tools/call`` request on the application's session (see :mod:`toolcall_tracker.mcp`).
    Options change as for any :class:`~toolcall_tracker.Tool`: ``tool(t, eager=True)`` or
    ``t.with_options(...)`` give another ``McpTool`` (a new ``name`` is the one the model
    calls it by; the server's, ``mcp_name``, stays); its settings are ``t.settings``.
    Its ``arguments_model`` is that of the call's function (one ``arguments`` object); the
    check that counts is :meth:`bind`'s, against the server's schema.
    """

    __slots__ = ("_input_schema", "_target", "_validator")

    def __init__(
        self,
        target: _call.Target,
        input_schema: Any,
        description: str,
        *,
        eager: bool | None = None,
        timeout: float | None = None,
        needs_approval: NeedsApproval = False,
        max_concurrency: int | None = None,
        sequential: bool = False,
        idempotent: bool = False,
    ) -> None:
        super().__init__(
            functools.partial(_call.call, target),
            name=target.name,
            description=description,
            eager=eager,
            timeout=timeout,
            needs_approval=needs_approval,
            max_concurrency=max_concurrency,
            sequential=sequential,
            idempotent=idempotent,
        )
        self._target = target
        schema = _jsonable(input_schema) if isinstance(input_schema, dict) else {}
        self._input_schema: dict[str, Any] = schema if isinstance(schema, dict) else {}
        self._validator = _schema.compile_schema(self._input_schema, target.mcp_name)

    @property
    def parameters(self) -> dict[str, Any]:
        """The server's input schema (a fresh copy on each access), as plain JSON data."""
        return copy.deepcopy(self._input_schema)

    @property
    def server(self) -> str:
        """The name of the server the tool is on."""
        return self._target.server

    @property
    def mcp_name(self) -> str:
        """The tool's name on its server (``name`` is the one the model calls)."""
        return self._target.mcp_name

    @property
    def session(self) -> ClientSession:
        """The session its calls go through (the application's)."""
        return self._target.session

    def bind(self, arguments: object) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Check the arguments against the server's input schema; the tool gets a copy.

        Raises:
            pydantic.ValidationError: the schema rejects them (one line per problem).
        """
        _schema.check(self._validator, arguments, self.name)
        return (copy.deepcopy(arguments),), {}

    def _with_settings(self, settings: ToolSettings) -> McpTool:
        """A copy with other settings: a new ``name`` is the name the model calls it by
        (the server's stays), so the copy's target and call function carry it."""
        new = copy.copy(self)
        target = self._target
        new._target = _call.Target(target.session, target.server, target.mcp_name, settings.name)
        new._build(functools.partial(_call.call, new._target), settings)
        return new

    def __repr__(self) -> str:
        return f"<McpTool {self.name!r} ({self.mcp_name!r} on {self.server!r})>"


async def mcp_tools(
    sessions: ClientSession | Mapping[str, ClientSession],
    *,
    eager: bool | None = None,
    timeout: float | None = None,
    needs_approval: NeedsApproval = False,
    max_concurrency: int | None = None,
) -> list[McpTool]:
    """The tools of one or more MCP servers, as runner tools.

    Lists each session's tools (every page) and returns one :class:`McpTool` per tool,
    in listing order. Pass them to a :class:`~toolcall_tracker.runner.ToolRunner` and to
    any provider's tool definitions (``openai_chat_tools(tools)``...), next to your own.

    Args:
        sessions: an initialized ``mcp.ClientSession`` (over stdio, streamable HTTP or any
            transport), or a mapping ``server name -> session`` for several servers. The
            application owns the sessions: open them before, close them after the runs.
            A lone session's server name is the one it announced (``"mcp"`` if none).
        eager: for every tool, as :func:`~toolcall_tracker.tool`'s (change one tool's
            options with ``tool(t, ...)``).
        timeout: seconds each call may run (as :func:`~toolcall_tracker.tool`'s).
        needs_approval: whether a human must approve each call (or a function deciding).
        max_concurrency: at most this many calls of each tool at once per turn.

    Names: each name is made one that every provider accepts (other characters become
    ``_``, a name over 64 characters is shortened with a hash); a name two servers share is
    prefixed with each server's name (``files_search``, ``web_search``).

    Raises:
        mcp.MCPError: listing a server's tools failed.
        ImportError: the ``mcp`` package (2.x) is not installed.
    """
    require_mcp()
    if isinstance(sessions, Mapping):
        servers = dict(sessions)
    else:
        info = sessions.server_info
        servers = {info.name if info is not None and info.name else "mcp": sessions}
    listed: dict[str, list[Any]] = {}
    for server, session in servers.items():
        unique: dict[str, Any] = {}
        for entry in await _list(session):
            unique.setdefault(entry.name, entry)  # a server listing a name twice: the first
        listed[server] = list(unique.values())
    names = _names.assign({s: [t.name for t in tools] for s, tools in listed.items()})
    return [
        McpTool(
            _call.Target(servers[server], server, entry.name, names[(server, entry.name)]),
            entry.input_schema,
            entry.description or entry.title or "",
            eager=eager,
            timeout=timeout,
            needs_approval=needs_approval,
            max_concurrency=max_concurrency,
        )
        for server, tools in listed.items()
        for entry in tools
    ]


async def _list(session: ClientSession) -> list[Any]:
    """Every tool the session's server lists, following the pages."""
    from mcp.types import PaginatedRequestParams

    tools: list[Any] = []
    cursor: str | None = None
    while True:
        params = None if cursor is None else PaginatedRequestParams(cursor=cursor)
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


def require_mcp() -> None:
    """Raise an ``ImportError`` naming the fix unless ``mcp`` 2.x is installed."""
    from importlib.metadata import PackageNotFoundError, version

    fix = "install the extra: pip install 'toolcall-tracker[mcp]'"
    try:
        installed = version("mcp")
    except PackageNotFoundError:
        raise ImportError(f"MCP tools need the mcp package; {fix}") from None
    if not installed.split(".")[0].isdigit() or int(installed.split(".")[0]) < 2:
        raise ImportError(
            f"MCP tools need mcp>=2 (mcp {installed} is installed; 1.x never sends "
            f"notifications/cancelled when a call is cancelled); {fix}"
        )
