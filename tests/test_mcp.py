"""MCP tools against a real MCP server (tests/_mcp_server.py), over stdio and streamable HTTP.

The server is the ``mcp`` package's MCPServer in a subprocess; nothing is mocked. Waits
are on real signals: progress the server sent, a tool of the server that returns only once
it saw the cancellation.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")
pytest.importorskip("mcp.server.mcpserver", reason="the [mcp] extra needs mcp>=2")

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from _mcp_helpers import TRANSPORTS, connect, http_server
from _runner_helpers import by_id, call_events, from_list
from conftest import DEADLINE
from toolcall_tracker import RunControl, Status, ToolCallTracker, ToolRunner, tool
from toolcall_tracker.feedback import openai_chat_messages
from toolcall_tracker.mcp import McpProgress, McpTool, mcp_http_client, mcp_tools
from toolcall_tracker.runner import ProgressUpdate
from toolcall_tracker.tools import anthropic_tools, gemini_tools, openai_chat_tools

pytestmark = pytest.mark.anyio
MCP_DEADLINE = DEADLINE * 3  # two server processes start and stop within it


def turn(*calls: tuple[str, str, Any]) -> list[Any]:
    events: list[Any] = []
    for call_id, name, args in calls:
        events += call_events(call_id, name, args)
    return [*events, {"type": "end", "reason": "stop"}]


async def run(
    runner: ToolRunner, events: list[Any], control: RunControl | None = None
) -> dict[str, Any]:
    tracker = ToolCallTracker()
    async with anyio.create_task_group() as tg:
        tg.start_soon(tracker.consume, from_list(events))
        return by_id(await runner.run(tracker, control=control))


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_tools_results_schema_and_is_error(anyio_backend: str, transport: str) -> None:
    with anyio.fail_after(MCP_DEADLINE):
        async with connect("alpha", transport) as session:
            tools = await mcp_tools(session, eager=True)
            by_name = {t.name: t for t in tools}
            # "math.add" is no name every provider accepts: sanitised, the server's kept
            assert by_name["math_add"].mcp_name == "math.add"
            assert by_name["math_add"].server == "alpha"
            schema = by_name["math_add"].parameters
            assert schema["required"] == ["a", "b"]
            assert openai_chat_tools(tools)[1]["function"]["parameters"] == schema
            assert anthropic_tools(tools)[1]["input_schema"] == schema
            assert gemini_tools(tools)[0]["function_declarations"][1]["name"] == "math_add"
            calls = await run(
                ToolRunner(tools),
                turn(
                    ("a", "math_add", {"a": 2, "b": 3}),
                    ("b", "math_add", {"a": 2, "b": "three"}),
                    ("c", "fail", {"reason": "no"}),
                    ("d", "echo", {"text": "hi"}),
                ),
            )
    assert calls["a"].status is Status.DONE
    assert calls["a"].result == {"sum": 5}
    assert calls["d"].result == {"result": "alpha:hi"}
    invalid = calls["b"].error
    assert invalid.kind == "validation"
    assert invalid.errors[0].path == ("b",)
    assert invalid.errors[0].type == "json_schema_type"
    failed = calls["c"].error
    assert (failed.kind, failed.reason, failed.server, failed.mcp_tool) == (
        "mcp_error",
        "tool_error",
        "alpha",
        "fail",
    )
    assert "refused: no" in failed.content
    # the model reads the failure through the feedback builders
    replies = openai_chat_messages([calls["c"]], include_calls=False)
    assert json.loads(replies[0]["content"])["error"]["kind"] == "mcp_error"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_progress_becomes_the_calls_progress(anyio_backend: str, transport: str) -> None:
    updates: list[ProgressUpdate] = []
    with anyio.fail_after(MCP_DEADLINE):
        async with connect("alpha", transport) as session:
            tools = await mcp_tools(session, eager=True)
            control = RunControl()
            async with anyio.create_task_group() as tg:

                async def watch() -> None:
                    async for update in control.progress("p"):
                        updates.append(update)
                        if len(updates) == 3:
                            # every step arrived: let the server's tool finish
                            await session.call_tool("release", {})

                tg.start_soon(watch)
                await anyio.wait_all_tasks_blocked()
                calls = await run(ToolRunner(tools), turn(("p", "steps", {"n": 3})), control)
    assert calls["p"].result == {"result": "3 steps"}
    values = [u.value for u in updates]
    # the mcp client hands each notification to a task of its own: any order
    assert sorted(values[:3], key=lambda v: v.progress) == [
        McpProgress(i, 3, f"step {i}") for i in (1, 2, 3)
    ]
    assert len(values) == 4
    assert values[-1] == {"result": "3 steps"}  # the last update is the result
    assert [u.index for u in updates] == list(range(len(updates)))


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_cancel_mid_call_sends_notifications_cancelled(
    anyio_backend: str, transport: str
) -> None:
    with anyio.fail_after(MCP_DEADLINE):
        async with connect("alpha", transport) as session:
            tools = await mcp_tools(session, eager=True)
            control = RunControl()
            async with anyio.create_task_group() as tg:

                async def cancel_once_started() -> None:
                    async for update in control.progress("h"):
                        assert update.value == McpProgress(0, None, "started")
                        assert control.cancel("h", "user pressed stop")
                        return

                tg.start_soon(cancel_once_started)
                await anyio.wait_all_tasks_blocked()
                calls = await run(ToolRunner(tools), turn(("h", "hang", {"label": "h1"})), control)
            # the session is still open: only notifications/cancelled interrupts the tool
            seen = await session.call_tool("seen", {})
    error = calls["h"].error
    assert (error.kind, error.reason, error.tool_started) == (
        "cancelled",
        "user pressed stop",
        True,
    )
    assert seen.structured_content == {"result": ["cancelled:h1"]}


async def test_a_timeout_cancels_the_call_on_the_server(anyio_backend: str) -> None:
    with anyio.fail_after(MCP_DEADLINE):
        async with connect("alpha", "stdio") as session:
            tools = {t.name: t for t in await mcp_tools(session, eager=True)}
            hang = tool(tools["hang"], timeout=0.5)
            assert isinstance(hang, McpTool)
            assert hang.mcp_name == "hang"
            calls = await run(ToolRunner([hang]), turn(("t", "hang", {"label": "t1"})))
            seen = await session.call_tool("seen", {})
    assert calls["t"].error.kind == "timeout"
    assert seen.structured_content == {"result": ["cancelled:t1"]}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_two_servers_clash_and_a_dying_one_fails_alone(
    anyio_backend: str, transport: str
) -> None:
    async def local(x: int) -> int:
        return x * 2

    with anyio.fail_after(MCP_DEADLINE):
        async with connect("alpha", transport) as alpha, connect("beta", "stdio") as beta:
            tools = await mcp_tools({"alpha": alpha, "beta": beta}, eager=True)
            names = [t.name for t in tools]
            # every tool is on both servers: each name is prefixed with its server's
            assert "alpha_echo" in names
            assert "beta_echo" in names
            assert "echo" not in names
            assert len(set(names)) == len(names)
            runner = ToolRunner([*tools, tool(local, eager=True)])
            calls = await run(
                runner,
                turn(
                    ("d", "alpha_die", {}),
                    ("e", "beta_echo", {"text": "still here"}),
                    ("l", "local", {"x": 21}),
                ),
            )
            # a new call to the dead server fails at once, without a request: over HTTP
            # the mcp client's transport would raise its connection error from its own
            # task group, cancelling everything inside streamable_http_client
            after = await run(
                runner,
                turn(("again", "alpha_echo", {"text": "x"}), ("b2", "beta_echo", {"text": "y"})),
            )
    died = calls["d"].error
    assert (died.kind, died.reason, died.server) == ("mcp_error", "disconnected", "alpha")
    assert died.code == -32000
    assert calls["e"].result == {"result": "beta:still here"}
    assert calls["l"].result == 42
    again = after["again"].error
    assert (again.reason, again.code) == ("disconnected", -32000)
    assert "the request was not sent" in again.message
    assert after["b2"].result == {"result": "beta:y"}


@pytest.mark.parametrize("server_dies", ["while_idle", "mid_call"])
async def test_with_the_contained_client_a_server_gone_unnoticed_fails_alone(
    anyio_backend: str, server_dies: str
) -> None:
    """A request that finds the server gone (nothing told the session) fails its call
    ``disconnected``; work in the same task group, inside the transport's context, goes on."""
    other: list[Any] = []
    alpha_failed = anyio.Event()

    async def other_work(beta: ClientSession) -> None:
        await alpha_failed.wait()
        other.append(await beta.call_tool("echo", {"text": "after"}))

    with anyio.fail_after(MCP_DEADLINE):
        async with (
            http_server("alpha") as (url, process),
            mcp_http_client() as client,
            streamable_http_client(url, http_client=client) as (read, write),
            ClientSession(read, write) as alpha,
            connect("beta", "stdio") as beta,
            anyio.create_task_group() as tg,
        ):
            await alpha.initialize()
            tools = await mcp_tools({"alpha": alpha, "beta": beta}, eager=True)
            runner = ToolRunner(tools)
            tg.start_soon(other_work, beta)
            before = await run(runner, turn(("a0", "alpha_echo", {"text": "up"})))
            if server_dies == "while_idle":
                process.kill()
                await process.wait()
                first = await run(
                    runner,
                    turn(("a1", "alpha_echo", {"text": "x"}), ("b1", "beta_echo", {"text": "y"})),
                )
            else:
                first = await run(
                    runner, turn(("a1", "alpha_die", {}), ("b1", "beta_echo", {"text": "y"}))
                )
            alpha_failed.set()
            later = await run(runner, turn(("a2", "alpha_echo", {"text": "z"})))
    assert before["a0"].result == {"result": "alpha:up"}
    failed = first["a1"].error
    assert (failed.kind, failed.reason, failed.code) == ("mcp_error", "disconnected", -32000)
    assert first["b1"].result == {"result": "beta:y"}
    assert later["a2"].error.reason == "disconnected"
    assert "the request was not sent" in later["a2"].error.message
    assert [result.structured_content for result in other] == [{"result": "beta:after"}]
