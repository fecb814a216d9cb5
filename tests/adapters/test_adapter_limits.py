"""Every adapter under the sink's Limits: ids, names, and bounded memory on hostile streams.

The streams are built per adapter from a few item builders, so each rule is checked
against all five adapters: an over-long id re-ids (or drops) only its own call, an
over-long name is cut, and a 20 MB hostile stream keeps the adapter's memory bounded.
"""

from __future__ import annotations

import tracemalloc
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import pytest

from conftest import DEADLINE
from toolcall_tracker import Limits, ToolCallTracker, tool_call_streaming_state_machine
from toolcall_tracker.adapters import (
    AISDKAdapter,
    AnthropicAdapter,
    BedrockConverseAdapter,
    CohereAdapter,
    GeminiAdapter,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
    adapt,
    apply_stream,
)
from toolcall_tracker.adapters.openai import OpenAIMalformedToolCall

# -- item builders, per adapter ---------------------------------------------------------
# Per format: the item that announces a call, the item of one fragment, the item that
# closes the call (if the format has one), and the items that end the turn.


def _chunk(tool_calls: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
    delta = {"tool_calls": tool_calls} if tool_calls else {}
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _gemini(parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"index": 0, "content": {"parts": parts}}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate]}


def _given(item: dict[str, Any], **fields: Any) -> dict[str, Any]:
    item.update({key: value for key, value in fields.items() if value is not None})
    return item


class Chat:
    adapter = OpenAIChatAdapter

    def head(self, i: int, call_id: str | None, name: str | None) -> Any:
        function = _given({"arguments": ""}, name=name)
        return _chunk([_given({"index": i, "function": function}, id=call_id)])

    def frag(self, i: int, call_id: str | None, text: str) -> Any:
        return _chunk([{"index": i, "function": {"arguments": text}}])

    def tail(self, i: int, call_id: str | None) -> list[Any]:
        return []

    def end(self) -> list[Any]:
        return [_chunk([], "tool_calls")]


class Responses:
    adapter = OpenAIResponsesAdapter

    def head(self, i: int, call_id: str | None, name: str | None) -> Any:
        item = _given({"type": "function_call", "id": f"fc_{i}", "arguments": ""}, name=name)
        _given(item, call_id=call_id)
        return {"type": "response.output_item.added", "output_index": i, "item": item}

    def frag(self, i: int, call_id: str | None, text: str) -> Any:
        return {
            "type": "response.function_call_arguments.delta",
            "item_id": f"fc_{i}",
            "output_index": i,
            "delta": text,
        }

    def tail(self, i: int, call_id: str | None) -> list[Any]:
        return []

    def end(self) -> list[Any]:
        return [{"type": "response.completed", "response": {"output": []}}]


class Anthropic:
    adapter = AnthropicAdapter

    def head(self, i: int, call_id: str | None, name: str | None) -> Any:
        block = _given({"type": "tool_use", "input": {}}, id=call_id, name=name)
        return {"type": "content_block_start", "index": i, "content_block": block}

    def frag(self, i: int, call_id: str | None, text: str) -> Any:
        delta = {"type": "input_json_delta", "partial_json": text}
        return {"type": "content_block_delta", "index": i, "delta": delta}

    def tail(self, i: int, call_id: str | None) -> list[Any]:
        return [{"type": "content_block_stop", "index": i}]

    def end(self) -> list[Any]:
        return [
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
            {"type": "message_stop"},
        ]


class Gemini:
    """One string argument ``s``, streamed: each fragment continues the string at ``$.s``."""

    adapter = GeminiAdapter

    def head(self, i: int, call_id: str | None, name: str | None) -> Any:
        return _gemini([{"functionCall": _given({"willContinue": True}, id=call_id, name=name)}])

    def frag(self, i: int, call_id: str | None, text: str) -> Any:
        partial = {"jsonPath": "$.s", "stringValue": text, "willContinue": True}
        return _gemini([{"functionCall": {"partialArgs": [partial], "willContinue": True}}])

    def tail(self, i: int, call_id: str | None) -> list[Any]:
        return [_gemini([{"functionCall": {}}])]

    def end(self) -> list[Any]:
        return [_gemini([], "STOP")]


class AISDK:
    adapter = AISDKAdapter

    def head(self, i: int, call_id: str | None, name: str | None) -> Any:
        return _given({"type": "tool-input-start", "toolCallId": call_id}, toolName=name)

    def frag(self, i: int, call_id: str | None, text: str) -> Any:
        return {"type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": text}

    def tail(self, i: int, call_id: str | None) -> list[Any]:
        return [{"type": "tool-input-available", "toolCallId": call_id}]

    def end(self) -> list[Any]:
        return [{"type": "finish"}]


class Bedrock:
    adapter = BedrockConverseAdapter

    def head(self, i: int, call_id: str | None, name: str | None) -> Any:
        tool_use = _given({}, toolUseId=call_id, name=name)
        return {"contentBlockStart": {"contentBlockIndex": i, "start": {"toolUse": tool_use}}}

    def frag(self, i: int, call_id: str | None, text: str) -> Any:
        delta = {"toolUse": {"input": text}}
        return {"contentBlockDelta": {"contentBlockIndex": i, "delta": delta}}

    def tail(self, i: int, call_id: str | None) -> list[Any]:
        return [{"contentBlockStop": {"contentBlockIndex": i}}]

    def end(self) -> list[Any]:
        return [{"messageStop": {"stopReason": "tool_use"}}]


class Cohere:
    adapter = CohereAdapter

    def head(self, i: int, call_id: str | None, name: str | None) -> Any:
        tool_call = _given({"type": "function", "function": _given({"arguments": ""}, name=name)})
        _given(tool_call, id=call_id)
        delta = {"message": {"tool_calls": tool_call}}
        return {"type": "tool-call-start", "index": i, "delta": delta}

    def frag(self, i: int, call_id: str | None, text: str) -> Any:
        delta = {"message": {"tool_calls": {"function": {"arguments": text}}}}
        return {"type": "tool-call-delta", "index": i, "delta": delta}

    def tail(self, i: int, call_id: str | None) -> list[Any]:
        return [{"type": "tool-call-end", "index": i}]

    def end(self) -> list[Any]:
        return [{"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}}]


Format = Chat | Responses | Anthropic | Gemini | AISDK | Bedrock | Cohere
FORMATS: dict[str, Format] = {
    "bedrock": Bedrock(),
    "cohere": Cohere(),
    "openai_chat": Chat(),
    "openai_responses": Responses(),
    "anthropic": Anthropic(),
    "gemini": Gemini(),
    "ai_sdk": AISDK(),
}
NAMES = sorted(FORMATS)


def call(fmt: str, i: int, call_id: str | None, name: str | None, texts: list[str]) -> list[Any]:
    f = FORMATS[fmt]
    return [f.head(i, call_id, name), *(f.frag(i, call_id, t) for t in texts), *f.tail(i, call_id)]


def args_parts(fmt: str, value: str) -> list[str]:
    """Fragments whose text is the arguments ``{"s": value}`` in this adapter's format."""
    if fmt == "gemini":
        return [value[:2], value[2:]]
    return ['{"s":', f'"{value[:2]}', f'{value[2:]}"', "}"]


# -- an over-long id or name: one call only ---------------------------------------------

LONG_ID = "x" * 65
LIMITS = Limits(max_id_chars=64, max_name_chars=32)


def stream_with_long_id(fmt: str) -> list[Any]:
    return (
        call(fmt, 0, LONG_ID, "first", args_parts(fmt, "one"))
        + call(fmt, 1, "healthy", "second", args_parts(fmt, "two"))
        + FORMATS[fmt].end()
    )


def check_long_id(fmt: str, calls: list[Any]) -> None:
    by_name = {call.name: call for call in calls}
    healthy = by_name["second"]
    assert (healthy.id, healthy.status.value, healthy.args) == ("healthy", "running", {"s": "two"})
    assert all(len(call.id) <= 64 for call in calls)
    if fmt == "ai_sdk":  # the id is all that routes its parts: the call is dropped
        assert "first" not in by_name
    else:  # re-id'd with a synthetic id, and it runs
        first = by_name["first"]
        assert first.id != LONG_ID
        assert (first.status.value, first.args) == ("running", {"s": "one"})


@pytest.mark.parametrize("fmt", NAMES)
def test_an_over_long_id_touches_only_its_call(fmt: str) -> None:
    machine = tool_call_streaming_state_machine(limits=LIMITS)
    apply_stream(machine, stream_with_long_id(fmt), FORMATS[fmt].adapter())
    check_long_id(fmt, machine.list())
    assert machine.end is not None
    assert machine.end.ok


@pytest.mark.anyio
@pytest.mark.parametrize("fmt", NAMES)
async def test_an_over_long_id_touches_only_its_call_via_consume(
    anyio_backend: str, fmt: str
) -> None:
    async def source() -> AsyncIterator[Any]:
        for item in stream_with_long_id(fmt):
            yield item

    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker(limits=LIMITS) as tracker:
            await tracker.consume(adapt(source(), FORMATS[fmt].adapter()))
            check_long_id(fmt, tracker.list())
            assert tracker.end is not None
            assert tracker.end.ok


@pytest.mark.parametrize("fmt", NAMES)
def test_an_over_long_name_is_cut_to_a_name_no_tool_has(fmt: str) -> None:
    long_name = "n" * 300
    items = (
        call(fmt, 0, "a", long_name, args_parts(fmt, "one"))
        + call(fmt, 1, "b", "second", args_parts(fmt, "two"))
        + FORMATS[fmt].end()
    )
    machine = tool_call_streaming_state_machine(limits=LIMITS)
    apply_stream(machine, items, FORMATS[fmt].adapter())
    first, second = machine.list()
    assert first.name == "n" * 24 + "...(cut)"
    assert (second.name, second.args) == ("second", {"s": "two"})


@pytest.mark.parametrize("fmt", NAMES)
def test_feed_honours_the_adapters_own_limits(fmt: str) -> None:
    adapter = FORMATS[fmt].adapter(limits=LIMITS)
    events = [event for item in stream_with_long_id(fmt) for event in adapter.feed(item)]
    events += adapter.end()
    assert all(len(getattr(event, "id", "") or "") <= 64 for event in events)
    machine = tool_call_streaming_state_machine(limits=LIMITS)
    for event in events:
        machine.apply(event)
    check_long_id(fmt, machine.list())


# -- bounded memory on a 20 MB hostile stream -------------------------------------------

TOTAL = 20_000_000
FRAGMENT = 4_000
MEMORY_LIMITS = Limits(max_args_chars=1_000_000)
BUDGET = 6_000_000
FILLER = "a" * FRAGMENT


def fragments() -> Iterator[str]:
    """20 MB of distinct fragment strings (a kept fragment costs its full size)."""
    for n in range(TOTAL // FRAGMENT):
        yield f"{n:09d}" + FILLER[9:]


def one_huge_call(fmt: str) -> Iterator[Any]:
    f = FORMATS[fmt]
    yield f.head(0, "huge", "f")
    for text in fragments():
        yield f.frag(0, "huge", text)
    yield from f.tail(0, "huge")
    yield from f.end()


def unknown_items(fmt: str) -> Iterator[Any]:
    """Fragments addressed to calls that were never announced."""
    f = FORMATS[fmt]
    yield from call(fmt, 0, "known", "f", args_parts(fmt, "ok"))
    for n, text in enumerate(fragments()):
        if fmt == "openai_chat":  # no id, no name, at an index no call has
            yield _chunk([{"index": 1, "function": {"arguments": text}}])
        elif fmt == "openai_responses":  # an item never announced, at a known output_index
            yield {
                "type": "response.function_call_arguments.delta",
                "item_id": f"u{n}",
                "output_index": 0,
                "delta": text,
            }
        else:
            yield f.frag(n + 1, f"u{n}", text)
    yield from f.end()


def nameless_calls(fmt: str) -> Iterator[Any]:
    """Four calls whose name never arrives, sent fragments in turn."""
    f = FORMATS[fmt]
    for i in range(4):
        yield f.head(i, f"id{i}", None)
    for n, text in enumerate(fragments()):
        yield f.frag(n % 4, f"id{n % 4}", text)
    for i in range(4):
        yield from f.tail(i, f"id{i}")
    yield from f.end()


SCENARIOS = {"one_huge_call": one_huge_call, "unknown_items": unknown_items,
             "nameless_calls": nameless_calls}  # fmt: skip


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("fmt", NAMES)
def test_a_20mb_hostile_stream_keeps_memory_bounded(fmt: str, scenario: str) -> None:
    machine = tool_call_streaming_state_machine(limits=MEMORY_LIMITS)
    adapter = FORMATS[fmt].adapter()
    items = SCENARIOS[scenario](fmt)
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        apply_stream(machine, items, adapter)
        peak = tracemalloc.get_traced_memory()[1] - baseline
    finally:
        tracemalloc.stop()
    assert peak < BUDGET, f"{fmt}/{scenario}: peak {peak:,} bytes above baseline"
    assert machine.end is not None
    if scenario == "one_huge_call":
        (call,) = machine.list()
        assert call.status.value == "error"
        assert call.error.kind == "arguments_too_large"


# -- Chat and Responses: calls whose name has not arrived ---------------------------------


def test_chat_text_waiting_for_a_name_past_the_limit_fails_the_call_once_named() -> None:
    machine = tool_call_streaming_state_machine(limits=Limits(max_args_chars=10))
    items = [
        _chunk([{"index": 0, "id": "a", "function": {"arguments": '{"s":"0123'}}]),
        _chunk([{"index": 0, "function": {"arguments": '456789"}'}}]),  # 17 > 10: dropped
        _chunk([{"index": 0, "function": {"name": "f"}}]),
        _chunk([{"index": 1, "id": "b", "function": {"name": "g", "arguments": "{}"}}]),
        _chunk([], "tool_calls"),
    ]
    apply_stream(machine, items, OpenAIChatAdapter())
    first, second = machine.list()
    assert (first.id, first.name, first.status.value) == ("a", "f", "error")
    assert isinstance(first.error, OpenAIMalformedToolCall)
    assert "Limits.max_args_chars" in first.error.message
    assert first.args_text == ""
    assert (second.status.value, second.args) == ("running", {})


@pytest.mark.parametrize("fmt", ["openai_chat", "openai_responses"])
def test_calls_waiting_for_a_name_count_against_max_calls(fmt: str) -> None:
    f = FORMATS[fmt]
    items = [f.head(i, f"n{i}", None) for i in range(5)]  # nameless
    items += [f.frag(i, f"n{i}", "{}") for i in range(5)]
    items += call(fmt, 9, "named", "g", ["{}"]) + f.end()
    adapter = f.adapter(limits=Limits(max_calls=3))  # the adapter's own bound, via feed
    machine = tool_call_streaming_state_machine()
    for event in [e for item in items for e in adapter.feed(item)] + adapter.end():
        machine.apply(event)
    calls = {c.id: c for c in machine.list()}
    assert sorted(calls) == ["n0", "n1", "n2", "named"]  # n3, n4: not tracked
    assert calls["named"].status.value == "running"
    assert all(calls[i].status.value == "error" for i in ("n0", "n1", "n2"))


# -- items that are Mappings but not dicts ---------------------------------------------------


def ordered(value: Any) -> Any:
    """``value`` with every dict, at every depth, turned into an ``OrderedDict``."""
    if isinstance(value, dict):
        return OrderedDict((key, ordered(item)) for key, item in value.items())
    if isinstance(value, list):
        return [ordered(item) for item in value]
    return value


@pytest.mark.parametrize("fmt", NAMES)
def test_mapping_items_that_are_not_dicts_are_read_like_dicts(fmt: str) -> None:
    items = stream_with_long_id(fmt)
    plain = tool_call_streaming_state_machine(limits=LIMITS)
    apply_stream(plain, items, FORMATS[fmt].adapter())
    mapped = tool_call_streaming_state_machine(limits=LIMITS)
    apply_stream(mapped, [ordered(item) for item in items], FORMATS[fmt].adapter())
    assert len(mapped.list()) >= 1
    assert mapped.list() == plain.list()
    assert mapped.end == plain.end
