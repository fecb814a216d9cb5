"""The OpenAI Chat adapter's routing records are bounded by ``Limits.max_calls``.

A stream that announces far more calls than the sink can track keeps O(``max_calls``)
records in the adapter (calls by id, by index, per choice; retired routes), while the
machine still reports the excess starts as ``too_many_calls`` and the calls it tracks
behave as before: made ready with their text, failed by late text, forgotten and replaced
under ``keep_finished``.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import pytest

from conftest import DEADLINE
from toolcall_tracker import Limits, Result, ToolCallStateMachine, ToolCallTracker
from toolcall_tracker.adapters import MistralAdapter, OpenAIChatAdapter, adapt
from toolcall_tracker.adapters.openai import OpenAILateArguments

N = 40_000
LIMITS = Limits(max_calls=100, remember_forgotten=100)


def _chunk(choice: int, fragment: dict[str, Any] | None, finish: str | None = None) -> Any:
    delta = {"tool_calls": [fragment]} if fragment is not None else {}
    return {"choices": [{"index": choice, "delta": delta, "finish_reason": finish}]}


def _stream(n: int, choices: int, *, same_index: bool) -> Iterator[Any]:
    """``n`` calls per choice, each announced (id, name) then given its text by index."""
    for i in range(n):
        for c in range(choices):
            index = 0 if same_index else i
            yield _chunk(c, {"index": index, "id": f"c{c}-{i}", "function": {"name": "f"}})
            yield _chunk(c, {"index": index, "function": {"arguments": f'{{"i": {i}}}'}})
    for c in range(choices):
        yield _chunk(c, None, "tool_calls")


def _kept(adapter: OpenAIChatAdapter) -> int:
    """Every routing record the adapter keeps: live calls and routes, retired routes."""
    routes = adapter._routes
    live = sum(
        len(state.calls) + len(state.by_id) + len(state.by_index)
        for state in adapter._choices.values()
    )
    return live + len(routes.retired)


# Live calls (tracked or waiting for a name) and their routes, plus the retired routes.
BOUND = 3 * 4 * LIMITS.max_calls + max(LIMITS.remember_forgotten, 4 * LIMITS.max_calls)


@pytest.mark.parametrize("choices", [1, 4])
@pytest.mark.parametrize("eager", [True, False])
@pytest.mark.parametrize("same_index", [True, False])
def test_far_more_calls_than_max_calls_keep_bounded_records(
    choices: int, eager: bool, same_index: bool
) -> None:
    too_many: list[str] = []

    def on_ignored(event: Any, reason: str) -> None:
        if reason == "too_many_calls":
            too_many.append(event.id)

    machine = ToolCallStateMachine(limits=LIMITS, on_ignored=on_ignored)
    adapter = OpenAIChatAdapter(eager=eager)
    most = 0
    for k, item in enumerate(_stream(N // choices, choices, same_index=same_index)):
        adapter.write(item, machine)
        if k % 997 == 0:
            most = max(most, _kept(adapter))
    most = max(most, _kept(adapter))
    adapter.finish(machine)
    assert most <= BOUND, most
    # The machine tracked the first max_calls calls and refused every other start.
    assert len(too_many) == N - LIMITS.max_calls
    calls = machine.list()
    assert len(calls) == LIMITS.max_calls
    for call in calls:
        _choice, i = call.id[1:].split("-")
        assert (call.name, call.status.value, call.args) == ("f", "running", {"i": int(i)})
    assert machine.end is not None
    assert machine.end.ok


def test_the_records_memory_stays_small() -> None:
    """Measured: 40,000 calls kept about 20 MB of records before (adapter and machine
    together); now well under 1 MB."""
    machine = ToolCallStateMachine(limits=LIMITS)
    adapter = OpenAIChatAdapter()
    items = list(_stream(N, 1, same_index=False))
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for item in items:
            adapter.write(item, machine)
        grown = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert grown < 2_000_000, grown


def test_feed_keeps_bounded_records_too() -> None:
    """Through ``feed`` (no sink to ask) the records of calls made ready are dropped."""
    adapter = OpenAIChatAdapter(limits=LIMITS)
    machine = ToolCallStateMachine(limits=LIMITS)
    most = 0
    for k, item in enumerate(_stream(N, 1, same_index=False)):
        for event in adapter.feed(item):
            machine.apply(event)
        if k % 997 == 0:
            most = max(most, _kept(adapter))
    for event in adapter.end():
        machine.apply(event)
    assert most <= BOUND, most
    assert [c.args for c in machine.list()] == [{"i": i} for i in range(LIMITS.max_calls)]


def test_records_of_calls_the_machine_forgot_are_dropped() -> None:
    """With ``keep_finished`` every call is tracked in turn; the adapter drops the records
    of the forgotten ones, and every call still becomes ready with its own text."""
    machine = ToolCallStateMachine(limits=LIMITS, keep_finished=0)
    adapter = OpenAIChatAdapter()
    done = 0
    most = 0
    for k, item in enumerate(_stream(N, 1, same_index=False)):
        adapter.write(item, machine)
        for call in machine.list():
            if call.status.value == "running":
                assert call.args == {"i": int(call.id.split("-")[1])}
                machine.apply(Result(id=call.id, result=None))
                done += 1
        if k % 997 == 0:
            most = max(most, _kept(adapter))
    adapter.finish(machine)
    for call in machine.list():
        machine.apply(Result(id=call.id, result=None))
        done += 1
    assert done == N
    assert most <= BOUND, most


def test_late_text_still_fails_a_tracked_call_after_many_untracked_ones() -> None:
    """A call the machine tracks keeps its record however many calls follow: text for it
    after it was made ready still fails it."""
    machine = ToolCallStateMachine(limits=Limits(max_calls=5, remember_forgotten=5))
    adapter = OpenAIChatAdapter()
    adapter.write(_chunk(0, {"index": 0, "id": "a", "function": {"name": "f"}}), machine)
    adapter.write(_chunk(0, {"index": 0, "function": {"arguments": "{}"}}), machine)
    for i in range(1, 1000):
        adapter.write(_chunk(0, {"index": i, "id": f"b{i}", "function": {"name": "g"}}), machine)
        adapter.write(_chunk(0, {"index": i, "function": {"arguments": "{}"}}), machine)
    assert machine.status("a") is not None
    assert machine.status("a").value == "running"
    adapter.write(_chunk(0, {"index": 0, "function": {"arguments": "{}"}}), machine)
    call = machine.get("a")
    assert call is not None
    assert call.status.value == "error"
    assert isinstance(call.error, OpenAILateArguments)
    assert _kept(adapter) <= 3 * 4 * 5 + max(5, 4 * 5)


def test_mistral_inherits_the_bound() -> None:
    machine = ToolCallStateMachine(limits=LIMITS)
    adapter = MistralAdapter()
    for item in _stream(5_000, 1, same_index=True):
        adapter.write(item, machine)
    assert _kept(adapter) <= BOUND
    adapter.finish(machine)
    assert len(machine.list()) == LIMITS.max_calls


async def _items(n: int) -> AsyncIterator[Any]:
    for item in _stream(n, 2, same_index=False):
        yield item


@pytest.mark.anyio
async def test_bounded_through_a_tracker(anyio_backend: str) -> None:
    adapter = OpenAIChatAdapter()
    with anyio.fail_after(DEADLINE * 6):
        async with ToolCallTracker(limits=LIMITS) as tracker:
            await tracker.consume(adapt(_items(5_000), adapter))
            calls = tracker.list()
    assert len(calls) == LIMITS.max_calls
    assert all(call.status.value == "running" for call in calls)
    assert _kept(adapter) == 0  # the turn ended: the records are released
