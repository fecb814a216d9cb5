"""OpenAIResponsesAdapter: a turn makes no reference cycle.

Freed by reference counting alone, an adapter and the records of its turn (its calls, its
routes, the machine they write into) go as soon as the last reference does, instead of
waiting for the garbage collector with everything they hold. Each test runs with the
collector switched off: what is not freed by then is held by a cycle.
"""

from __future__ import annotations

import weakref
from typing import Any

import anyio
import pytest

from toolcall_tracker import Status, ToolCallTracker
from toolcall_tracker.adapters import adapt, apply_stream
from toolcall_tracker.adapters.openai import OpenAIResponsesAdapter

DEADLINE = 10.0


def fc(k: int, arguments: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{k}",
        "call_id": f"call_{k}",
        "name": "t",
        "arguments": arguments,
    }


def turn(texts: list[str], end: str = "response.completed") -> list[dict[str, Any]]:
    """A Responses stream of one call per text, ending with ``end``."""
    items: list[dict[str, Any]] = []
    for k, text in enumerate(texts):
        items.append({"type": "response.output_item.added", "output_index": k, "item": fc(k, "")})
        for start in range(0, len(text), 4):
            items.append(
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": f"fc_{k}",
                    "output_index": k,
                    "delta": text[start : start + 4],
                }
            )
        done = {"type": "response.function_call_arguments.done", "item_id": f"fc_{k}"}
        items.append({**done, "arguments": text})
        items.append({"type": "response.output_item.done", "output_index": k, "item": fc(k, text)})
    output = [fc(k, text) for k, text in enumerate(texts)]
    items.append({"type": end, "response": {"output": output, "error": {"code": "x"}}})
    return items


TEXTS = ['{"a": 1}', '{"b": [1, 2, 3]}', "{}"]


@pytest.mark.parametrize("end", ["response.completed", "response.failed", None])
@pytest.mark.usefixtures("no_collector")
def test_a_turn_written_into_a_tracker_is_freed_by_reference_counting(end: str | None) -> None:
    items = turn(TEXTS, end or "response.completed")
    if end is None:  # the stream stops before its terminal event
        items = items[:-1]
    tracker = ToolCallTracker()
    adapter = OpenAIResponsesAdapter()
    apply_stream(tracker, items, adapter)
    # (every call was made ready by its arguments.done, before the turn ended)
    assert [call.status for call in tracker.list()] == [Status.RUNNING] * len(TEXTS)
    freed = weakref.ref(adapter)
    machine = weakref.ref(tracker.machine)
    del adapter, tracker
    assert freed() is None
    assert machine() is None


@pytest.mark.usefixtures("no_collector")
def test_feed_and_end_leave_no_cycle() -> None:
    adapter = OpenAIResponsesAdapter()
    events = [event for item in turn(TEXTS) for event in adapter.feed(item)] + adapter.end()
    assert [event.type for event in events].count("ready") == len(TEXTS)
    freed = weakref.ref(adapter)
    del adapter
    assert freed() is None


@pytest.mark.anyio
@pytest.mark.usefixtures("no_collector")
async def test_consume_of_an_adapted_stream_leaves_no_cycle_in_the_adapter(
    anyio_backend: str,
) -> None:
    with anyio.fail_after(DEADLINE):
        adapter = OpenAIResponsesAdapter()
        async with ToolCallTracker() as tracker:
            await tracker.consume(adapt(turn(TEXTS), adapter))
            assert [call.args for call in tracker.list()] == [{"a": 1}, {"b": [1, 2, 3]}, {}]
        freed = weakref.ref(adapter)
        del adapter
        assert freed() is None
