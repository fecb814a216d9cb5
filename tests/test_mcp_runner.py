"""MCP calls go through the runner like any tool: head start, the gate, approval, options.

Against the real MCP server of tests/_mcp_server.py over stdio.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")
pytest.importorskip("mcp.server.mcpserver", reason="the [mcp] extra needs mcp>=2")

from _mcp_helpers import connect
from _runner_helpers import by_id, call_events, from_list
from conftest import DEADLINE
from toolcall_tracker import RunControl, Status, ToolCallTracker, ToolRunner, tool
from toolcall_tracker._registry import providers
from toolcall_tracker.mcp import McpTool, mcp_tools
from toolcall_tracker.tools import provider_tools

pytestmark = pytest.mark.anyio
MCP_DEADLINE = DEADLINE * 2


async def test_an_eager_call_is_done_before_the_turn_ends(anyio_backend: str) -> None:
    with anyio.fail_after(MCP_DEADLINE):
        async with connect("alpha", "stdio") as session:
            tools = await mcp_tools(session, eager=True)
            tracker = ToolCallTracker()
            async with anyio.create_task_group() as tg:

                async def model() -> None:
                    for event in call_events("a", "math_add", {"a": 1, "b": 2}):
                        tracker.apply(event)
                    finished = await tracker.wait_done("a")  # the model is still "streaming"
                    assert finished.result == {"sum": 3}
                    tracker.apply({"type": "end", "reason": "stop"})

                tg.start_soon(model)
                calls = by_id(await ToolRunner(tools).run(tracker))
    assert calls["a"].status is Status.DONE


async def test_a_gated_call_of_a_cut_off_turn_never_reaches_the_server(anyio_backend: str) -> None:
    with anyio.fail_after(MCP_DEADLINE):
        async with connect("alpha", "stdio") as session:
            tools = await mcp_tools(session)  # the runner's default: gated
            tracker = ToolCallTracker()
            events = [
                *call_events("g", "math_add", {"a": 1, "b": 2}),
                {"type": "end", "reason": "length", "ok": False},
            ]
            async with anyio.create_task_group() as tg:
                tg.start_soon(tracker.consume, from_list(events))
                calls = by_id(await ToolRunner(tools).run(tracker))
    assert calls["g"].error.kind == "not_executed"
    timeline = tracker.timeline("g")
    assert timeline is not None
    assert timeline.tool_started is None


async def test_approval_denied_and_approved_with_edited_arguments(anyio_backend: str) -> None:
    with anyio.fail_after(MCP_DEADLINE):
        async with connect("alpha", "stdio") as session:
            tools = await mcp_tools(session, eager=True, needs_approval=True)
            control = RunControl()
            tracker = ToolCallTracker()
            events: list[Any] = [
                *call_events("yes", "math_add", {"a": 2, "b": 3}),
                *call_events("no", "math_add", {"a": 5, "b": 5}),
                *call_events("bad", "math_add", {"a": 1, "b": 1}),
                {"type": "end", "reason": "stop"},
            ]
            async with anyio.create_task_group() as tg:

                async def human() -> None:
                    async for request in control.approval_requests():
                        if request.call_id == "yes":
                            assert control.approve("yes", arguments={"a": 20, "b": 22})
                        elif request.call_id == "bad":
                            assert control.approve("bad", arguments={"a": "one", "b": 1})
                        else:
                            assert control.deny(request.call_id, "too much")

                tg.start_soon(tracker.consume, from_list(events))
                tg.start_soon(human)
                calls = by_id(await ToolRunner(tools).run(tracker, control=control))
    assert calls["yes"].result == {"sum": 42}  # ran with the human's arguments
    assert (calls["no"].error.kind, calls["no"].error.reason) == ("approval_denied", "too much")
    bad = calls["bad"].error  # edited arguments are checked against the server's schema
    assert bad.kind == "validation"
    assert bad.errors[0].path == ("a",)


async def test_options_keep_an_mcp_tool_an_mcp_tool(anyio_backend: str) -> None:
    with anyio.fail_after(MCP_DEADLINE):
        async with connect("alpha", "stdio") as session:
            tools = {t.name: t for t in await mcp_tools(session, timeout=5.0, max_concurrency=2)}
            add = tools["math_add"]
            renamed = tool(add, name="plus", sequential=True, eager=True)
            assert isinstance(renamed, McpTool)
            assert (renamed.name, renamed.mcp_name, renamed.server) == ("plus", "math.add", "alpha")
            assert (renamed.max_concurrency, renamed.timeout, renamed.eager) == (1, 5.0, True)
            assert renamed.parameters == add.parameters
            assert renamed.session is session
            calls = by_id(
                await ToolRunner([renamed]).run(
                    await _consumed(call_events("r", "plus", {"a": 1, "b": 1}))
                )
            )
    assert calls["r"].result == {"sum": 2}


async def _consumed(events: list[Any]) -> ToolCallTracker:
    tracker = ToolCallTracker()
    for event in [*events, {"type": "end", "reason": "stop"}]:
        tracker.apply(event)
    return tracker


async def test_every_provider_definition_carries_the_servers_schema(anyio_backend: str) -> None:
    with anyio.fail_after(MCP_DEADLINE):
        async with connect("alpha", "stdio") as session:
            tools = await mcp_tools(session)
    schema = {t.name: t.parameters for t in tools}["math_add"]
    formats = [p.format for p in providers() if p.tools is not None]
    assert len(formats) >= 6
    for fmt in formats:
        rendered = json.dumps(provider_tools(fmt, tools))
        assert "math_add" in rendered, fmt
        assert "math.add" not in rendered, fmt  # only the sanitised name reaches a provider
        assert json.dumps(schema["properties"]["a"]) in rendered, fmt


async def test_the_runs_deadline_cancels_the_call_on_the_server(anyio_backend: str) -> None:
    with anyio.fail_after(MCP_DEADLINE):
        async with connect("alpha", "stdio") as session:
            tools = await mcp_tools(session, eager=True)
            calls = by_id(
                await ToolRunner(tools, timeout=0.5).run(
                    await _consumed(call_events("h", "hang", {"label": "deadline"}))
                )
            )
            seen = await session.call_tool("seen", {})
    error = calls["h"].error
    assert (error.kind, error.scope, error.tool_started) == ("timeout", "run", True)
    assert seen.structured_content == {"result": ["cancelled:deadline"]}
