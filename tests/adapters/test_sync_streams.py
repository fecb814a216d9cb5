"""``adapt()`` over synchronous iterables (boto3's ``EventStream``, sync SDK clients), and
its misuse errors: an adapter class, an un-awaited coroutine, a value that is no stream."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import DEADLINE
from toolcall_tracker import Status, ToolCallTracker
from toolcall_tracker._syncstream import THREAD_NAME, SyncStream
from toolcall_tracker.adapters import BedrockConverseAdapter, OpenAIChatAdapter, adapt

pytestmark = pytest.mark.anyio


def _chunk(tool_calls: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"tool_calls": tool_calls}, "finish_reason": finish}],
    }


START = _chunk([{"index": 0, "id": "c1", "function": {"name": "add", "arguments": ""}}])
ARGS = _chunk([{"index": 0, "function": {"arguments": '{"a": 1}'}}])
FINISH = _chunk([], "tool_calls")


def _workers() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == THREAD_NAME]


class Recorded:
    """A sync iterator that records who closed it and from which thread it was read."""

    def __init__(self, items: list[dict[str, Any]], gate: threading.Event | None = None):
        self._items = iter(items)
        self.gate = gate  # the next() after the items blocks until this is set
        self.closed = threading.Event()
        self.threads: set[str] = set()
        self.in_next = threading.Event()

    def __iter__(self) -> Recorded:
        return self

    def __next__(self) -> dict[str, Any]:
        self.threads.add(threading.current_thread().name)
        for item in self._items:
            return item
        if self.gate is not None:
            self.in_next.set()
            self.gate.wait()
            return FINISH
        raise StopIteration

    def close(self) -> None:
        self.closed.set()


async def test_a_sync_iterable_is_read_in_one_worker_thread(anyio_backend: str) -> None:
    stream = Recorded([START, ARGS, FINISH])
    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            await tracker.consume(adapt(stream, OpenAIChatAdapter()))
            call = tracker.get("c1")
    assert call is not None
    assert call.status == Status.RUNNING
    assert call.args == {"a": 1}
    assert tracker.end is not None
    assert tracker.end.ok
    assert stream.threads == {THREAD_NAME}  # never the loop's thread
    assert not stream.closed.is_set()  # exhausted, not stopped early: nothing to close
    assert _workers() == []


async def test_a_plain_list_and_a_generator_work(anyio_backend: str) -> None:
    def generate() -> Iterator[dict[str, Any]]:
        yield from (START, ARGS, FINISH)

    with anyio.fail_after(DEADLINE):
        for source in ([START, ARGS, FINISH], generate()):
            async with ToolCallTracker() as tracker:
                await tracker.consume(adapt(source, OpenAIChatAdapter()))
                assert [call.id for call in tracker.list()] == ["c1"]
            events = [event async for event in adapt([START, ARGS, FINISH], OpenAIChatAdapter())]
            assert [event.type for event in events] == ["start", "delta", "ready", "end"]
    assert _workers() == []


async def test_cancelled_mid_stream_the_iterator_is_closed_and_no_thread_is_left(
    anyio_backend: str,
) -> None:
    gate = threading.Event()
    stream = Recorded([START, ARGS], gate)
    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker, anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, adapt(stream, OpenAIChatAdapter()))
            # The worker blocks in next() while the loop runs this task: not blocked.
            await anyio.to_thread.run_sync(stream.in_next.wait)
            assert tracker.get("c1") is not None
            tg.cancel_scope.cancel()
            gate.set()  # the pending next() returns; the worker then closes and exits
    assert stream.closed.is_set()
    assert _workers() == []
    assert tracker.end is not None
    assert not tracker.end.ok
    assert tracker.end.reason == "cancelled"
    call = tracker.get("c1")
    assert call is not None
    assert call.status == Status.ERROR


async def test_cancelled_between_items_the_idle_worker_closes(anyio_backend: str) -> None:
    closed = threading.Event()

    def generate() -> Iterator[dict[str, Any]]:
        try:
            yield START
            yield ARGS
            yield FINISH
        finally:
            closed.set()  # GeneratorExit at the yield: close() ran in the worker

    with anyio.fail_after(DEADLINE):
        stream = adapt(generate(), OpenAIChatAdapter())
        first = await stream.__anext__()  # read one item, then stop early
        assert first.type == "start"
        await stream.aclose()
    assert closed.is_set()
    assert _workers() == []


async def test_an_exception_from_next_propagates_as_itself(anyio_backend: str) -> None:
    def generate() -> Iterator[dict[str, Any]]:
        yield START
        raise ConnectionResetError("peer went away")

    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            with pytest.raises(ConnectionResetError, match="peer went away"):
                await tracker.consume(adapt(generate(), OpenAIChatAdapter()))
    assert tracker.end is not None
    assert not tracker.end.ok
    assert "ConnectionResetError" in tracker.end.reason
    assert _workers() == []


async def test_a_bedrock_event_stream_shape(anyio_backend: str) -> None:
    """boto3's ``converse_stream()["stream"]``: a sync iterable of event dicts with close()."""
    events = [
        {"messageStart": {"role": "assistant"}},
        {
            "contentBlockStart": {
                "contentBlockIndex": 0,
                "start": {"toolUse": {"toolUseId": "t1", "name": "add"}},
            }
        },
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"a":2}'}}}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "tool_use"}},
    ]
    stream = Recorded(events)
    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            await tracker.consume(adapt(stream, BedrockConverseAdapter()))
            call = tracker.get("t1")
    assert call is not None
    assert call.args == {"a": 2}


def test_an_adapter_class_is_refused_at_the_call_site() -> None:
    with pytest.raises(TypeError, match=r"write adapt\(stream, OpenAIChatAdapter\(\)\)"):
        adapt([], OpenAIChatAdapter)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"an object with feed\(\) and end\(\)"):
        adapt([], object())  # type: ignore[arg-type]


def test_an_unawaited_coroutine_is_refused_at_the_call_site() -> None:
    async def create(**kwargs: Any) -> list[dict[str, Any]]:
        return []

    coroutine = create(stream=True)
    with pytest.raises(TypeError, match=r"await it first.*adapt\(await client"):
        adapt(coroutine, OpenAIChatAdapter())  # type: ignore[arg-type]
    assert coroutine.cr_frame is None  # closed: no "never awaited" warning either


def test_a_generator_function_is_refused_with_the_call_to_make() -> None:
    async def stream() -> Any:
        yield START

    def sync_stream() -> Iterator[dict[str, Any]]:
        yield START

    with pytest.raises(TypeError, match=r"call it, adapt\(stream\(\), adapter\)"):
        adapt(stream, OpenAIChatAdapter())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"adapt\(sync_stream\(\), adapter\)"):
        adapt(sync_stream, OpenAIChatAdapter())  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["data: {}", b"{}", {"choices": []}, 42])
def test_a_value_that_is_no_stream_is_refused(value: Any) -> None:
    with pytest.raises(TypeError, match="takes a stream of provider items"):
        adapt(value, OpenAIChatAdapter())


# -- the seam as a model: random streams, faults and early stops --------------------------


class Scripted:
    """A sync iterator of ``count`` items that raises at ``fail_at`` (if set); records close."""

    def __init__(self, count: int, fail_at: int | None) -> None:
        self.count, self.fail_at = count, fail_at
        self.given = 0
        self.closed = 0
        self.threads: set[str] = set()

    def __iter__(self) -> Scripted:
        return self

    def __next__(self) -> int:
        self.threads.add(threading.current_thread().name)
        if self.given == self.fail_at:
            raise ValueError(f"fault at {self.given}")
        if self.given >= self.count:
            raise StopIteration
        self.given += 1
        return self.given - 1

    def close(self) -> None:
        self.closed += 1


def model(count: int, fail_at: int | None, stop_after: int | None) -> tuple[list[int], str]:
    """What a consumer of ``Scripted(count, fail_at)`` sees: its items, and how it stopped
    (``"raised"``, ``"ended"`` or ``"stopped"``, its own early break)."""
    got: list[int] = []
    for index in itertools.count():
        if index == fail_at:
            return got, "raised"
        if index >= count:
            return got, "ended"
        got.append(index)
        if stop_after is not None and len(got) >= stop_after:
            return got, "stopped"
    raise AssertionError("unreachable")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=40, deadline=None)
@given(
    count=st.integers(0, 5),
    fail_at=st.none() | st.integers(0, 6),
    stop_after=st.none() | st.integers(1, 6),
)
def test_the_sync_stream_follows_its_model(
    backend: str, count: int, fail_at: int | None, stop_after: int | None
) -> None:
    """Items arrive in order, read on the worker only; a fault in ``next()`` propagates as
    itself; the iterator is closed once exactly when the consumer did not see its end (a
    fault or an early stop), never after its natural end; no worker thread is left."""
    source = Scripted(count, fail_at)
    got: list[int] = []
    how = "ended"

    async def main() -> None:
        nonlocal how
        with anyio.fail_after(DEADLINE):
            stream = SyncStream(source)
            try:
                async for item in stream:
                    got.append(item)
                    if stop_after is not None and len(got) >= stop_after:
                        how = "stopped"
                        break
            except ValueError as exc:
                how = "raised" if str(exc) == f"fault at {fail_at}" else f"other: {exc}"
            await stream.aclose()
            await stream.aclose()  # idempotent

    anyio.run(main, backend=backend)
    assert (got, how) == model(count, fail_at, stop_after)
    assert source.threads <= {THREAD_NAME}
    assert source.closed == (0 if how == "ended" else 1)
    assert _workers() == []
