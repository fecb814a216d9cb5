"""OpenAIResponsesAdapter: its fast paths give the same calls as its general ones.

The adapter reads a ``function_call_arguments.delta`` with plain subscripts (a dict) or
attributes (an SDK event) and writes it straight into the sink; every other event goes
to its handler; a final text already checked against the text a ready call holds is not
read back from the sink again. These tests pin what those shortcuts must keep: the text
is still checked (once per call, through the sink's ``args_text``), a contradiction still
fails the call, items of every shape route alike, malformed items never raise, and what
the sink raises reaches the caller unchanged.
"""

from __future__ import annotations

import enum
import json
from collections import OrderedDict
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from toolcall_tracker import (
    End,
    Status,
    ToolCallStateMachine,
    ToolCallTracker,
    tool_call_streaming_state_machine,
)
from toolcall_tracker.adapters import adapt, apply_stream
from toolcall_tracker.adapters.openai import OpenAIArgumentsMismatch, OpenAIResponsesAdapter
from toolcall_tracker.changes import ChangeListener
from toolcall_tracker.limits import Limits

DEADLINE = 10.0
DELTA = "response.function_call_arguments.delta"
_EVENTS: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)


def fc(k: int, arguments: str, status: str = "completed") -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{k}",
        "call_id": f"call_{k}",
        "name": f"tool_{k}",
        "arguments": arguments,
        "status": status,
    }


def stream(
    texts: list[str], *, fragment: int = 3, last: dict[int, str] | None = None
) -> list[dict[str, Any]]:
    """A whole Responses stream of one call per text, as decoded JSON (fresh objects, as
    a client hands them over). ``last`` replaces the final text of some calls in
    ``response.completed``."""
    items: list[dict[str, Any]] = []
    for k, text in enumerate(texts):
        items.append(
            {
                "type": "response.output_item.added",
                "output_index": k,
                "item": fc(k, "", "in_progress"),
            }
        )
        for start in range(0, len(text), fragment):
            piece = text[start : start + fragment]
            items.append({"type": DELTA, "item_id": f"fc_{k}", "output_index": k, "delta": piece})
        items.append(
            {
                "type": "response.function_call_arguments.done",
                "item_id": f"fc_{k}",
                "output_index": k,
                "arguments": text,
            }
        )
        items.append({"type": "response.output_item.done", "output_index": k, "item": fc(k, text)})
    final = [fc(k, (last or {}).get(k, text)) for k, text in enumerate(texts)]
    response = {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "gpt-test",
        "status": "completed",
        "output": final,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    items.append({"type": "response.completed", "response": response})
    for number, item in enumerate(items):
        item["sequence_number"] = number
    decoded: list[dict[str, Any]] = json.loads(json.dumps(items))
    return decoded


def as_sdk(items: list[dict[str, Any]]) -> list[Any]:
    """The official SDK's typed events for these dicts (validated, as the client builds them)."""
    return [_EVENTS.validate_python(item) for item in items]


def shaped(items: list[dict[str, Any]], shape: str) -> list[Any]:
    if shape == "sdk":
        return as_sdk(items)
    if shape == "ordered":
        return [OrderedDict(item) for item in items]
    if shape == "namespace":  # an object of no known class, read by attribute
        return [SimpleNamespace(**item) for item in items]
    return items


SHAPES = pytest.mark.parametrize("shape", ["dict", "sdk", "ordered", "namespace"])


class CountingSink:
    """A machine, counting how often the adapter reads a call's text back."""

    def __init__(self, machine: ToolCallStateMachine) -> None:
        self.machine = machine
        self.limits = machine.limits
        self.reads: list[str] = []
        self.write_start = machine.write_start
        self.write_delta = machine.write_delta
        self.write_ready = machine.write_ready
        self.write_result = machine.write_result
        self.write_error = machine.write_error
        self.write_end = machine.write_end
        self.apply = machine.apply

    def args_text(self, call_id: str) -> str | None:
        self.reads.append(call_id)
        return self.machine.args_text(call_id)


TEXTS = ['{"city":"Paris","units":"metric"}', '{"q":"a \\"quoted\\" word"}', "{}"]


@SHAPES
def test_every_call_is_checked_against_the_machine_s_text_once(shape: str) -> None:
    sink = CountingSink(tool_call_streaming_state_machine())
    apply_stream(sink, shaped(stream(TEXTS), shape), OpenAIResponsesAdapter())
    machine = sink.machine
    assert [(c.id, c.args_text, c.status) for c in machine.list()] == [
        (f"call_{k}", text, Status.RUNNING) for k, text in enumerate(TEXTS)
    ]
    # function_call_arguments.done checks each call; output_item.done and
    # response.completed repeat the same text and are not read back again.
    assert sink.reads == ["call_0", "call_1", "call_2"]
    assert machine.end == End(ok=True, reason="completed")


@SHAPES
def test_a_repeat_that_contradicts_the_checked_text_still_fails_the_call(shape: str) -> None:
    sink = CountingSink(tool_call_streaming_state_machine())
    items = stream(TEXTS, last={1: '{"q":"another"}'})
    apply_stream(sink, shaped(items, shape), OpenAIResponsesAdapter())
    a, b, c = sink.machine.list()
    assert (a.status, c.status) == (Status.RUNNING, Status.RUNNING)
    assert b.status is Status.ERROR
    assert isinstance(b.error, OpenAIArgumentsMismatch)
    assert (b.error.source, b.error.final) == ("response.completed", '{"q":"another"}')
    assert b.args_text == TEXTS[1]  # what it was made ready with; nothing appended
    assert sink.reads == ["call_0", "call_1", "call_2", "call_1"]


def without_fragment(text: str, drop: int) -> list[dict[str, Any]]:
    """The stream of one call in 4-character fragments, fragment ``drop`` lost."""
    items = stream([text], fragment=4)
    deltas = [i for i, item in enumerate(items) if item["type"] == DELTA]
    del items[deltas[drop]]
    return items


@SHAPES
def test_a_lost_middle_fragment_fails_the_call_a_lost_last_one_is_appended(shape: str) -> None:
    text = '{"a":1,"b":2}'  # fragments '{"a"', ':1,"', 'b":2', '}'
    sink = CountingSink(tool_call_streaming_state_machine())
    apply_stream(sink, shaped(without_fragment(text, 1), shape), OpenAIResponsesAdapter())
    (call,) = sink.machine.list()
    assert call.status is Status.ERROR  # the final text is no extension of the streamed one
    assert isinstance(call.error, OpenAIArgumentsMismatch)
    assert call.error.source == "response.function_call_arguments.done"

    sink = CountingSink(tool_call_streaming_state_machine())
    apply_stream(sink, shaped(without_fragment(text, 3), shape), OpenAIResponsesAdapter())
    (call,) = sink.machine.list()
    assert (call.args_text, call.args, call.status) == (text, {"a": 1, "b": 2}, Status.RUNNING)
    assert sink.reads == ["call_0"]  # checked once; the repeats agree with what was appended


@pytest.mark.parametrize(
    "item",
    [
        {"type": DELTA, "delta": "xyz"},  # no item id
        {"type": DELTA, "item_id": "fc_0"},  # no text
        {"type": DELTA, "item_id": "fc_0", "delta": 7},
        {"type": DELTA, "item_id": ["fc_0"], "delta": "xyz"},  # an unhashable id
        {"type": DELTA, "item_id": "fc_9", "delta": "xyz"},  # an unannounced item
        {"type": ["a", "list"]},
        {"type": "response.output_item.added", "item": {"type": ["x"]}},
        {"type": "response.output_item.done", "item": {"type": {"a": 1}}},
        {"type": "response.custom_tool_call_input.delta", "item_id": ["fc_0"], "delta": "q"},
        {"type": "response.function_call_arguments.done", "item_id": {}, "arguments": "{}"},
    ],
)
def test_malformed_items_on_the_fast_path_change_nothing_and_never_raise(item: Any) -> None:
    texts = ['{"n":1}']
    whole = stream(texts)
    reference = tool_call_streaming_state_machine()
    apply_stream(reference, whole, OpenAIResponsesAdapter())
    machine = tool_call_streaming_state_machine()
    # The malformed item arrives amid the call's fragments.
    apply_stream(machine, [*whole[:2], item, *whole[2:]], OpenAIResponsesAdapter())
    assert [(c.id, c.args_text, c.status) for c in machine.list()] == [
        (c.id, c.args_text, c.status) for c in reference.list()
    ]
    assert machine.end == reference.end


def test_an_event_type_of_a_str_subclass_is_read_as_its_value() -> None:
    class Kind(str, enum.Enum):
        ADDED = "response.output_item.added"
        DELTA = DELTA
        ARGS_DONE = "response.function_call_arguments.done"
        ITEM_DONE = "response.output_item.done"
        COMPLETED = "response.completed"

    items = stream(['{"k":"v"}'])
    for item in items:
        item["type"] = Kind(item["type"])
    machine = tool_call_streaming_state_machine()
    apply_stream(machine, items, OpenAIResponsesAdapter())
    (call,) = machine.list()
    assert (call.args, call.status) == ({"k": "v"}, Status.RUNNING)


class Boom(Exception):
    pass


class RaisingSink(CountingSink):
    """Raises :class:`Boom` on the ``n``-th fragment written."""

    def __init__(self, machine: ToolCallStateMachine, n: int) -> None:
        super().__init__(machine)
        self.left = n
        self.write_delta = self._delta

    def _delta(self, call_id: str, text: str) -> None:
        self.left -= 1
        if self.left == 0:
            raise Boom(f"refused {text!r}")
        self.machine.write_delta(call_id, text)


@SHAPES
@pytest.mark.parametrize("n", [1, 2, 5])  # the first fragment (general path), later ones (fast)
def test_what_the_sink_raises_on_a_fragment_propagates_unchanged(shape: str, n: int) -> None:
    sink = RaisingSink(tool_call_streaming_state_machine(), n)
    with pytest.raises(Boom, match="refused"):
        apply_stream(sink, shaped(stream(TEXTS), shape), OpenAIResponsesAdapter())
    (call,) = sink.machine.list()
    assert (call.status, len(call.args_text)) == (Status.PENDING, 3 * (n - 1))
    sink = RaisingSink(tool_call_streaming_state_machine(), n)
    with pytest.raises(Boom, match="refused"):
        write_each(shaped(stream(TEXTS), shape), sink)
    (call,) = sink.machine.list()
    assert call.status is Status.PENDING  # never made ready with other text


def write_each(items: list[Any], sink: Any) -> None:
    """``adapter.write`` item by item, as ``consume(adapt(...))`` does."""
    adapter = OpenAIResponsesAdapter()
    for item in items:
        adapter.write(item, sink)


def test_the_collector_path_gives_the_same_events_as_a_machine() -> None:
    """``feed`` writes into the adapter's collector (a sink without ``args_text``): the
    fragments take the general path and the text is checked against the copy kept."""
    items = stream(TEXTS, last={2: '{"x":1}'})
    adapter = OpenAIResponsesAdapter(limits=Limits())
    fed = tool_call_streaming_state_machine()
    for item in items:
        for event in adapter.feed(item):
            fed.apply(event)
    for event in adapter.end():
        fed.apply(event)
    written = tool_call_streaming_state_machine()
    apply_stream(written, items, OpenAIResponsesAdapter())
    summary = [(c.id, c.args_text, c.status, type(c.error)) for c in fed.list()]
    assert summary == [(c.id, c.args_text, c.status, type(c.error)) for c in written.list()]
    assert isinstance(fed.list()[2].error, OpenAIArgumentsMismatch)


class RaisingListener(ChangeListener):
    """A fragment listener that raises on the ``n``-th fragment."""

    def __init__(self, n: int) -> None:
        self.left = n

    def args_appended(self, call_id: str, text: str) -> None:
        self.left -= 1
        if self.left == 0:
            raise Boom(f"listener refused {text!r}")


@pytest.mark.anyio
@pytest.mark.parametrize("shape", ["dict", "sdk"])
async def test_a_listener_s_error_on_a_fragment_ends_consume(
    anyio_backend: str, shape: str
) -> None:
    items = shaped(stream(TEXTS), shape)

    async def source() -> AsyncIterator[Any]:
        for item in items:
            yield item

    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            tracker.subscribe(RaisingListener(4), fragments=True)
            with pytest.raises(Boom, match="listener refused"):
                await tracker.consume(adapt(source(), OpenAIResponsesAdapter()))
            (call,) = tracker.list()
            # The fragment was appended before the listener was told; the turn was then cut
            # off by consume: the call never became ready.
            assert (call.args_text, call.args, call.status) == (TEXTS[0][:12], None, Status.ERROR)
