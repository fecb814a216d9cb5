"""ToolContext (call id, typed deps, progress, the thread-safe ``cancelled`` flag) and
ToolRetry (a ``retry`` failure every feedback builder renders as the tool's message)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
import pytest

from _runner_helpers import by_id, call_events, from_list
from conftest import DEADLINE
from toolcall_tracker import Status, ToolCallTracker, tool
from toolcall_tracker._registry import providers
from toolcall_tracker.adapters import AISDKEncoder
from toolcall_tracker.failures import CallTimedOut, RetryRequested
from toolcall_tracker.feedback import error_text, provider_messages
from toolcall_tracker.runner import ProgressUpdate, RunControl, ToolRunner, run_turn
from toolcall_tracker.tools import Tool, ToolContext, ToolRetry

pytestmark = pytest.mark.anyio


@dataclass
class Deps:
    user: str


def whoami(ctx: ToolContext[Deps], greeting: str) -> str:
    """Greets the current user (sync: runs in a thread)."""
    return f"{greeting} {ctx.deps.user} ({ctx.call_id}, {ctx.tool})"


async def whoami_async(greeting: str, *, context: ToolContext[Deps]) -> str:
    """Greets the current user (async)."""
    return f"{greeting} {context.deps.user} ({context.call_id})"


def test_the_context_parameter_is_not_in_the_schema() -> None:
    spec = Tool(whoami)
    assert spec.context_parameter == "ctx"
    assert spec.parameters["properties"].keys() == {"greeting"}
    assert spec.parameters["required"] == ["greeting"]
    with pytest.raises(Exception, match="ctx"):  # the model cannot pass it
        spec.bind({"greeting": "hi", "ctx": 1})
    assert Tool(whoami_async).context_parameter == "context"

    def optional(x: int, ctx: ToolContext[Deps] | None = None) -> int:
        return x

    assert Tool(optional).context_parameter == "ctx"  # callable directly without one
    assert Tool(optional).parameters["properties"].keys() == {"x"}
    assert Tool(lambda: 1, name="plain").context_parameter is None


def test_a_positional_only_or_second_context_is_refused_with_the_fix() -> None:
    def positional(ctx: ToolContext, /, x: int) -> int:
        return x

    def twice(a: ToolContext, b: ToolContext[Deps]) -> None:
        pass

    with pytest.raises(TypeError, match=r"positional-only.*ordinary or keyword-only"):
        Tool(positional)
    with pytest.raises(TypeError, match="two ToolContext parameters"):
        Tool(twice)


async def test_tools_get_their_call_id_and_the_runs_deps(anyio_backend: str) -> None:
    runner: ToolRunner[Deps] = ToolRunner(
        [tool(whoami, eager=True), tool(whoami_async, eager=True)]
    )
    events = [
        *call_events("s1", "whoami", {"greeting": "hi"}),
        *call_events("a1", "whoami_async", {"greeting": "hello"}),
        {"type": "end"},
    ]
    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            calls = by_id(await run_turn(tracker, from_list(events), runner, deps=Deps("ada")))
    assert calls["s1"].result == "hi ada (s1, whoami)"
    assert calls["a1"].result == "hello ada (a1)"


async def test_without_deps_tools_see_none(anyio_backend: str) -> None:
    def peek(ctx: ToolContext) -> Any:
        return ctx.deps

    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            calls = await run_turn(
                tracker, from_list(call_events("p", "peek")), ToolRunner([peek], eager=True)
            )
    assert calls[0].status is Status.DONE
    assert calls[0].result is None


async def test_progress_from_sync_and_async_tools_keeps_order(anyio_backend: str) -> None:
    def copy_files(ctx: ToolContext, n: int) -> int:
        for i in range(n):
            ctx.progress({"copied": i + 1})
        return n

    async def index(ctx: ToolContext, n: int) -> int:
        for i in range(n):
            ctx.progress(i)
            await anyio.lowlevel.checkpoint()
        return n

    seen: list[ProgressUpdate] = []
    control = RunControl(on_progress=seen.append)
    runner = ToolRunner([copy_files, index], eager=True)
    events = [*call_events("c", "copy_files", {"n": 50}), *call_events("i", "index", {"n": 3})]
    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            calls = by_id(await run_turn(tracker, from_list(events), runner, control=control))
    assert calls["c"].result == 50
    assert calls["i"].result == 3
    copied = [(u.index, u.value["copied"]) for u in seen if u.call_id == "c"]
    assert copied == [(i, i + 1) for i in range(50)]
    assert [(u.index, u.value) for u in seen if u.call_id == "i"] == [(0, 0), (1, 1), (2, 2)]
    assert {u.tool for u in seen} == {"copy_files", "index"}


async def test_a_sync_tool_sees_cancelled_when_its_call_times_out(anyio_backend: str) -> None:
    polled = threading.Event()
    saw: list[bool] = []

    @tool(eager=True, timeout=0.05)
    def crunch(ctx: ToolContext) -> str:
        assert not ctx.cancelled
        saw.append(ctx.wait_cancelled(DEADLINE))  # returns as soon as the call timed out
        saw.append(ctx.cancelled)
        ctx.progress("too late")  # a no-op once the call ended
        polled.set()
        return "never used"

    seen: list[ProgressUpdate] = []
    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            calls = await run_turn(
                tracker,
                from_list(call_events("x", "crunch")),
                ToolRunner([crunch]),
                control=RunControl(on_progress=seen.append),
            )
        assert isinstance(calls[0].error, CallTimedOut)
        assert await anyio.to_thread.run_sync(polled.wait, DEADLINE)
    assert saw == [True, True]
    assert seen == []


async def test_a_cancelled_call_sets_the_flag_for_an_async_tool(anyio_backend: str) -> None:
    contexts: list[ToolContext[Any]] = []
    started = anyio.Event()

    async def wait_forever(ctx: ToolContext) -> None:
        contexts.append(ctx)
        started.set()
        await anyio.sleep_forever()

    control = RunControl()

    async def source() -> Any:
        for event in call_events("w", "wait_forever"):
            yield event
        await started.wait()
        assert not contexts[0].cancelled
        control.cancel("w")
        yield {"type": "end"}

    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            calls = await run_turn(
                tracker, source(), ToolRunner([wait_forever], eager=True), control=control
            )
    assert calls[0].status is Status.ERROR
    assert contexts[0].cancelled


async def test_tool_retry_fails_the_call_with_its_message(anyio_backend: str) -> None:
    def get_weather(city: str) -> str:
        if city != "Paris":
            raise ToolRetry(f"unknown city {city!r}: use 'Paris'")
        return "sunny"

    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            calls = await run_turn(
                tracker,
                from_list(call_events("r", "get_weather", {"city": "Lyon"})),
                ToolRunner([get_weather], eager=True),
            )
    error = calls[0].error
    assert error == RetryRequested(message="unknown city 'Lyon': use 'Paris'", tool="get_weather")
    assert error.kind == "retry"
    assert error_text(error) == "unknown city 'Lyon': use 'Paris'"
    assert error_text(error.model_dump(mode="json")) == error.message  # read back from a store
    assert json.loads(error_text({"kind": "other", "message": "m"})) == {
        "error": {"kind": "other", "message": "m"}
    }
    _every_builder_sends_the_message(calls, error.message)


def _every_builder_sends_the_message(calls: list[Any], message: str) -> None:
    formats = [p.format for p in providers() if p.messages is not None]
    assert len(formats) >= 6, formats
    for fmt in formats:
        text = json.dumps(provider_messages(fmt, calls, include_calls=False))
        assert json.dumps(message)[1:-1] in text, (fmt, text)
        assert '"kind"' not in text, (fmt, text)
        assert "retry" not in text, (fmt, text)


async def test_resumed_tools_get_the_deps_given_to_resume(anyio_backend: str) -> None:
    @tool(needs_approval=True)
    def transfer(ctx: ToolContext[Deps], amount: int) -> str:
        return f"{ctx.deps.user} sent {amount} ({ctx.call_id})"

    runner: ToolRunner[Deps] = ToolRunner([transfer], approval_secret=b"k" * 32)
    control = RunControl(defer_approvals=True)
    events = [*call_events("t1", "transfer", {"amount": 5}), {"type": "end"}]
    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            first = await run_turn(tracker, from_list(events), runner, control=control)
        assert first[0].status is Status.RUNNING  # awaiting approval
        pending = control.pending
        assert pending is not None
        resumed = await runner.resume(pending, [pending.approve("t1")], deps=Deps("bob"))
    assert resumed[0].result == "bob sent 5 (t1)"


def test_the_ai_sdk_encoder_sends_a_retry_as_its_message() -> None:
    encoder = AISDKEncoder()
    encoder.start()
    for event in call_events("c", "t"):
        encoder.encode(event)
    failure = RetryRequested(message="use 'Paris'", tool="t")
    parts = encoder.encode({"type": "error", "id": "c", "error": failure})
    assert parts == [{"type": "tool-output-error", "toolCallId": "c", "errorText": "use 'Paris'"}]
