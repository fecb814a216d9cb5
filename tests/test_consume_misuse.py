"""Misuse of ``ToolCallTracker.consume`` raises at the call, naming the fix; ``run_turn``.

``consume`` checks its argument when called, before its coroutine exists: the error comes
from the line that passed the wrong thing, before anything was read, and nothing changed
in the tracker. ``run_turn`` runs consume and the runner together and raises the first
real error itself instead of an ``ExceptionGroup``.
"""

from __future__ import annotations

import gc
import re
import warnings
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import pytest

from conftest import DEADLINE
from toolcall_tracker import ToolCallTracker, ToolRunner, tool
from toolcall_tracker.adapters import AnthropicAdapter, OpenAIChatAdapter, adapt
from toolcall_tracker.runner import run_turn

pytestmark = pytest.mark.anyio

EVENTS = [
    {"type": "start", "id": "t1", "name": "echo"},
    {"type": "delta", "id": "t1", "argsTextDelta": '{"text": "hi"}'},
    {"type": "ready", "id": "t1"},
]


async def events() -> AsyncIterator[dict[str, Any]]:
    for event in EVENTS:
        yield event


async def a_coroutine() -> AsyncIterator[dict[str, Any]]:  # what `create(...)` returns
    return events()


class StreamManager:  # the shape of `client.messages.stream(...)`
    async def __aenter__(self) -> AsyncIterator[dict[str, Any]]:
        return events()

    async def __aexit__(self, *exc: object) -> None:
        return None


def sync_items() -> Iterator[dict[str, Any]]:
    yield from EVENTS


MISUSES: list[tuple[str, Any, str]] = [
    ("list", EVENTS, r"a list is a sync one.*worker thread.*apply_stream\(machine"),
    ("generator", sync_items(), r"a generator is a sync one.*sync-streams\.md"),
    ("coroutine", None, r"un-awaited coroutine \(a_coroutine\).*Await it first"),
    ("adapter class", OpenAIChatAdapter, r"adapter class OpenAIChatAdapter.*OpenAIChatAdapter\(\)"),
    ("adapter", AnthropicAdapter(), r"an adapter \(AnthropicAdapter\).*adapt\(stream, adapter\)"),
    ("context manager", StreamManager(), r"async context manager.*async with"),
    ("one event", EVENTS[0], r"one mapping \(dict\).*tracker\.apply\(event\)"),
    ("None", None, r"async iterable of events.*given a NoneType"),
]


def make(kind: str, value: Any) -> Any:
    if kind == "coroutine":
        return a_coroutine()
    return value


@pytest.mark.parametrize(("kind", "value", "message"), MISUSES, ids=[m[0] for m in MISUSES])
async def test_consume_raises_at_the_call_naming_the_fix(
    anyio_backend: str, kind: str, value: Any, message: str
) -> None:
    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            source = make(kind, value)
            with pytest.raises(TypeError, match=re.compile(message, re.S)):
                tracker.consume(source)  # no await: the call itself raises
            assert tracker.end is None
            assert tracker.list() == []
            await tracker.consume(events())  # the tracker is untouched and still usable
            assert [call.status for call in tracker.list()] == ["running"]


async def test_an_unawaited_coroutine_is_closed_without_a_warning(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with ToolCallTracker() as tracker:
            with pytest.raises(TypeError, match="un-awaited coroutine"):
                tracker.consume(a_coroutine())  # type: ignore[arg-type]
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]


async def test_in_a_task_group_the_error_arrives_in_an_exception_group(anyio_backend: str) -> None:
    """What the docs say: with the task-group pattern, catch it with ``except* TypeError``."""
    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            with pytest.raises(BaseException) as caught:  # noqa: PT011
                async with anyio.create_task_group() as tg:
                    tg.start_soon(tracker.consume, EVENTS)
            group = caught.value
            assert type(group).__name__ in ("ExceptionGroup", "BaseExceptionGroup")
            (error,) = group.exceptions  # type: ignore[attr-defined]
            assert isinstance(error, TypeError)
            assert "sync one" in str(error)
            assert tracker.end is None  # raised before anything was read


# -- run_turn ---------------------------------------------------------------------------


@tool(eager=True)
async def echo(text: str) -> str:
    """Echo the text."""
    return text


@tool(eager=True)
async def explode(text: str) -> str:
    """Raise."""
    raise RuntimeError("the tool failed")


RUNNER = ToolRunner([echo, explode])


async def test_run_turn_returns_the_finished_calls(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            calls = await run_turn(tracker, events(), RUNNER)
    assert [(call.status, call.result) for call in calls] == [("done", "hi")]
    assert tracker.end is not None
    assert tracker.end.ok


async def test_run_turn_takes_adapted_streams(anyio_backend: str) -> None:
    async def chunks() -> AsyncIterator[dict[str, Any]]:
        call = {"index": 0, "id": "c1", "function": {"name": "echo", "arguments": '{"text": "x"}'}}
        yield {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}
        yield {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}

    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            calls = await run_turn(tracker, adapt(chunks(), OpenAIChatAdapter()), RUNNER)
    assert [call.result for call in calls] == ["x"]


async def test_run_turn_raises_the_stream_error_itself(anyio_backend: str) -> None:
    async def broken() -> AsyncIterator[dict[str, Any]]:
        yield EVENTS[0]
        raise ConnectionError("the stream broke")

    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            with pytest.raises(ConnectionError, match="the stream broke") as caught:
                await run_turn(tracker, broken(), RUNNER)
            # the task group's report is kept as the context
            assert type(caught.value.__context__).__name__.endswith("ExceptionGroup")
            assert tracker.end is not None
            assert not tracker.end.ok
            (call,) = tracker.list()
            assert call.status == "error"  # its arguments never completed


async def test_run_turn_raises_misuse_before_anything_ran(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            with pytest.raises(TypeError, match="a list is a sync one"):
                await run_turn(tracker, EVENTS, RUNNER)  # type: ignore[arg-type]
            assert tracker.end is None
            assert tracker.list() == []


async def test_a_failing_tool_is_a_value_not_an_exception(anyio_backend: str) -> None:
    async def two() -> AsyncIterator[dict[str, Any]]:
        for event in EVENTS:
            yield event
        yield {"type": "start", "id": "t2", "name": "explode"}
        yield {"type": "delta", "id": "t2", "argsTextDelta": '{"text": "x"}'}
        yield {"type": "ready", "id": "t2"}

    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            calls = await run_turn(tracker, two(), RUNNER)
    assert [call.status for call in calls] == ["done", "error"]
    assert calls[1].error.kind == "tool_exception"  # type: ignore[union-attr]


async def test_run_turn_lets_an_outer_cancellation_through(anyio_backend: str) -> None:
    async def endless() -> AsyncIterator[dict[str, Any]]:
        yield EVENTS[0]
        await anyio.sleep_forever()
        yield EVENTS[1]  # pragma: no cover

    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(run_turn, tracker, endless(), RUNNER)
                    await anyio.wait_all_tasks_blocked()
                    scope.cancel()
            assert scope.cancelled_caught
            assert tracker.end is not None
            assert tracker.end.reason == "cancelled"
