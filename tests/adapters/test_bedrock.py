"""BedrockConverseAdapter: the quirks of converse_stream, re-chunking, async drivers."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterable
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import DEADLINE
from toolcall_tracker import (
    IncompleteArguments,
    InvalidArguments,
    Limits,
    ToolCallTracker,
    tool_call_streaming_state_machine,
)
from toolcall_tracker.adapters import (
    BedrockConverseAdapter,
    BedrockMalformedEvent,
    BedrockServerToolError,
    adapt,
    apply_stream,
)

# -- builders --------------------------------------------------------------------------


def start(i: int, call_id: Any = None, name: Any = None, **extra: Any) -> dict[str, Any]:
    tool_use = {k: v for k, v in {"toolUseId": call_id, "name": name, **extra}.items() if v}
    return {"contentBlockStart": {"contentBlockIndex": i, "start": {"toolUse": tool_use}}}


def frag(i: int, text: Any) -> dict[str, Any]:
    return {"contentBlockDelta": {"contentBlockIndex": i, "delta": {"toolUse": {"input": text}}}}


def text(i: int, value: str) -> dict[str, Any]:
    return {"contentBlockDelta": {"contentBlockIndex": i, "delta": {"text": value}}}


def stop(i: int) -> dict[str, Any]:
    return {"contentBlockStop": {"contentBlockIndex": i}}


def message_stop(reason: str = "tool_use") -> dict[str, Any]:
    return {"messageStop": {"stopReason": reason}}


METADATA = {"metadata": {"usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}}}


def run(items: Iterable[Any], adapter: BedrockConverseAdapter | None = None) -> Any:
    machine = tool_call_streaming_state_machine()
    apply_stream(machine, items, adapter or BedrockConverseAdapter())
    return machine


def one_call(*parts: str) -> list[Any]:
    return [start(0, "t1", "f"), *(frag(0, p) for p in parts), stop(0), message_stop()]


# -- the quirks the issue names, one row each ------------------------------------------

QUIRKS: list[tuple[str, list[Any], list[tuple[str, str, Any]], bool]] = [
    (
        "no input delta means {}",
        [start(0, "t1", "f"), stop(0), message_stop()],
        [("t1", "f", {})],
        True,
    ),
    (
        "a single empty input delta means {}",
        [start(0, "t1", "f"), frag(0, ""), stop(0), message_stop()],
        [("t1", "f", {})],
        True,
    ),
    (
        "empty first fragment, then pieces splitting words",
        one_call("", '{"locati', 'on": "Bar', "ce", 'lona"}'),
        [("t1", "f", {"location": "Barcelona"})],
        True,
    ),
    (
        "text block without contentBlockStart is ignored",
        [
            text(0, "<thinking>hmm</thinking>"),
            stop(0),
            start(1, "t1", "f"),
            frag(1, "{}"),
            stop(1),
            message_stop(),
        ],
        [("t1", "f", {})],
        True,
    ),
    (
        "text block opened by an empty contentBlockStart is ignored",
        [
            {"contentBlockStart": {"contentBlockIndex": 0, "start": {}}},
            text(0, "hi"),
            stop(0),
            start(1, "t1", "f"),
            stop(1),
            message_stop(),
        ],
        [("t1", "f", {})],
        True,
    ),
    (
        "parallel calls, interleaved fragments, routed by index",
        [
            start(1, "a", "f"),
            start(2, "b", "g"),
            frag(2, '{"y":'),
            frag(1, '{"x":'),
            frag(1, "1}"),
            frag(2, "2}"),
            stop(1),
            stop(2),
            message_stop(),
        ],
        [("a", "f", {"x": 1}), ("b", "g", {"y": 2})],
        True,
    ),
    (
        "metadata after messageStop",
        [*one_call("{}"), METADATA],
        [("t1", "f", {})],
        True,
    ),
    (
        "metadata before messageStop",
        [start(0, "t1", "f"), stop(0), METADATA, message_stop()],
        [("t1", "f", {})],
        True,
    ),
    (
        "messageStart and reasoning deltas are ignored",
        [
            {"messageStart": {"role": "assistant"}},
            {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"reasoningContent": {}}}},
            *one_call('{"a":1}'),
        ],
        [("t1", "f", {"a": 1})],
        True,
    ),
    (
        "server tool use and its toolResult are not client calls",
        [
            start(0, "srv", "nova_code_interpreter", type="server_tool_use"),
            frag(0, "{}"),
            stop(0),
            {
                "contentBlockStart": {
                    "contentBlockIndex": 1,
                    "start": {"toolResult": {"toolUseId": "srv", "status": "success"}},
                }
            },
            {
                "contentBlockDelta": {
                    "contentBlockIndex": 1,
                    "delta": {"toolResult": [{"json": {"stdOut": "7"}}]},
                }
            },
            stop(1),
            start(2, "t1", "final_result", type="tool_use"),
            frag(2, '{"r":7}'),
            stop(2),
            message_stop(),
        ],
        [("t1", "final_result", {"r": 7})],
        True,
    ),
]


@pytest.mark.parametrize(
    ("items", "want", "ok"), [q[1:] for q in QUIRKS], ids=[q[0] for q in QUIRKS]
)
def test_quirk(items: list[Any], want: list[tuple[str, str, Any]], ok: bool) -> None:
    machine = run(items)
    assert [(c.id, c.name, c.args) for c in machine.list()] == want
    assert all(c.status == "running" for c in machine.list())
    assert machine.end is not None
    assert machine.end.ok is ok


STOP_REASONS = [
    ("tool_use", True),
    ("end_turn", True),
    ("stop_sequence", True),
    ("max_tokens", False),
    ("guardrail_intervened", False),
    ("content_filtered", False),
    ("model_context_window_exceeded", False),
    ("something_new", False),
]


@pytest.mark.parametrize(("reason", "ok"), STOP_REASONS)
def test_stop_reason_decides_ok(reason: str, ok: bool) -> None:
    machine = run([start(0, "t1", "f"), frag(0, "{}"), stop(0), message_stop(reason)])
    assert machine.end is not None
    assert (machine.end.ok, machine.end.reason) == (ok, reason)


def test_ok_stop_reasons_are_configurable() -> None:
    adapter = BedrockConverseAdapter(ok_stop_reasons=("tool_use",))
    machine = run([*one_call("{}")[:-1], message_stop("end_turn")], adapter)
    assert machine.end is not None
    assert not machine.end.ok


def test_a_block_cut_by_max_tokens_never_runs() -> None:
    machine = run([start(0, "t1", "f"), frag(0, '{"a": "tru'), message_stop("max_tokens")])
    (call,) = machine.list()
    assert call.status == "error"
    assert isinstance(call.error, IncompleteArguments)
    assert call.args_text == '{"a": "tru'


def test_a_closed_block_with_truncated_json_fails_to_parse() -> None:
    machine = run([start(0, "t1", "f"), frag(0, '{"a": "tru'), stop(0), message_stop("max_tokens")])
    (call,) = machine.list()
    assert isinstance(call.error, InvalidArguments)


def test_stream_ending_before_message_stop_ends_not_ok() -> None:
    machine = run([start(0, "t1", "f"), frag(0, "{}"), stop(0)])
    assert machine.end is not None
    assert (machine.end.ok, machine.end.reason) == (False, "stream ended before messageStop")
    assert machine.list()[0].status == "running"


def test_an_exception_event_ends_the_turn_not_ok() -> None:
    items = [
        start(0, "t1", "f"),
        frag(0, '{"a"'),
        {"modelStreamErrorException": {"message": "boom", "originalStatusCode": 500}},
        frag(0, ":1}"),
        stop(0),
        message_stop(),
    ]
    machine = run(items)
    assert machine.end is not None
    assert (machine.end.ok, machine.end.reason) == (False, "error: modelStreamErrorException: boom")
    assert isinstance(machine.list()[0].error, IncompleteArguments)


# -- server tools on request -------------------------------------------------------------


def server_turn(status: str, content: Any) -> list[Any]:
    return [
        start(0, "srv", "code", type="server_tool_use"),
        frag(0, '{"snippet":"1+1"}'),
        stop(0),
        {
            "contentBlockStart": {
                "contentBlockIndex": 1,
                "start": {"toolResult": {"toolUseId": "srv", "status": status}},
            }
        },
        {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolResult": content}}},
        stop(1),
        message_stop(),
    ]


def test_server_tools_are_tracked_and_completed_on_request() -> None:
    content = [{"json": {"stdOut": "2"}}]
    machine = run(server_turn("success", content), BedrockConverseAdapter(server_tools=True))
    (call,) = machine.list()
    assert (call.id, call.args, call.status, call.result) == (
        "srv",
        {"snippet": "1+1"},
        "done",
        content,
    )


def test_a_server_tool_error_fails_its_call() -> None:
    content = [{"text": "denied"}]
    machine = run(server_turn("error", content), BedrockConverseAdapter(server_tools=True))
    (call,) = machine.list()
    assert call.status == "error"
    assert isinstance(call.error, BedrockServerToolError)
    assert call.error.content == content


def test_a_server_tool_result_beyond_the_limits_is_not_kept() -> None:
    content = [{"text": "x" * 100}]
    adapter = BedrockConverseAdapter(server_tools=True)
    machine = tool_call_streaming_state_machine(limits=Limits(max_args_chars=50))
    apply_stream(machine, server_turn("success", content), adapter)
    (call,) = machine.list()
    assert isinstance(call.error, BedrockServerToolError)
    assert call.error.content is None


# -- malformed items fail their own call, or are ignored ---------------------------------


def test_input_that_is_not_a_string_fails_its_call_only() -> None:
    items = [start(0, "a", "f"), frag(0, {"x": 1}), frag(0, "{}"), stop(0)]
    items += [start(1, "b", "g"), frag(1, "{}"), stop(1), message_stop()]
    first, second = run(items).list()
    assert isinstance(first.error, BedrockMalformedEvent)
    assert first.error.index == 0
    assert (second.status, second.args) == ("running", {})


def test_a_tool_use_without_name_fails() -> None:
    (call,) = run([start(0, "a", None), frag(0, "{}"), stop(0), message_stop()]).list()
    assert isinstance(call.error, BedrockMalformedEvent)


def test_a_tool_use_without_id_gets_a_stable_synthetic_id() -> None:
    items = [start(3, None, "f"), stop(3), start(4, "bedrock-block-3", "g"), stop(4)]
    calls = run([*items, message_stop()]).list()
    assert [c.id for c in calls] == ["bedrock-block-3"]  # the second reuses a taken id
    items = [start(4, "bedrock-block-3", "g"), stop(4), start(3, None, "f"), stop(3)]
    calls = run([*items, message_stop()]).list()
    assert [c.id for c in calls] == ["bedrock-block-3", "bedrock-block-3-2"]


def test_input_before_its_block_fails_the_call_that_starts_there() -> None:
    items = [frag(0, '{"a":'), start(0, "a", "f"), frag(0, "1}"), stop(0), message_stop()]
    (call,) = run(items).list()
    assert isinstance(call.error, BedrockMalformedEvent)


@pytest.mark.parametrize(
    "junk",
    [
        None,
        1,
        "contentBlockStart",
        [],
        {},
        {"contentBlockStart": None},
        {"contentBlockStart": {"contentBlockIndex": "0", "start": {"toolUse": {"name": "f"}}}},
        {"contentBlockDelta": {"contentBlockIndex": 9, "delta": None}},
        {"contentBlockStop": {"contentBlockIndex": []}},
        {"contentBlockDelta": {"contentBlockIndex": 7, "delta": {"toolUse": 5}}},
    ],
)
def test_junk_never_raises(junk: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, "toolcall_tracker.adapters")
    adapter = BedrockConverseAdapter()
    adapter.feed(junk)
    machine = run([junk, *one_call('{"a":1}')])
    assert [(c.id, c.args) for c in machine.list()] == [("t1", {"a": 1})]


def test_a_message_stop_without_stop_reason_ends_not_ok() -> None:
    machine = run([*one_call("{}")[:-1], {"messageStop": {}}])
    assert machine.end is not None
    assert (machine.end.ok, machine.end.reason) == (False, "messageStop without stopReason")


def test_after_message_stop_everything_is_ignored() -> None:
    adapter = BedrockConverseAdapter()
    for item in one_call("{}"):
        adapter.feed(item)
    assert adapter.feed(start(5, "late", "f")) == []
    assert adapter.end() == []


# -- limits --------------------------------------------------------------------------------


def test_custom_limits_id_name_and_text() -> None:
    limits = Limits(max_id_chars=8, max_name_chars=12, max_args_chars=20)
    items = [start(0, "x" * 9, "n" * 20), frag(0, "{}"), stop(0)]
    items += [start(1, "ok", "g"), frag(1, '{"s":"' + "y" * 30 + '"}'), stop(1), message_stop()]
    machine = tool_call_streaming_state_machine(limits=limits)
    apply_stream(machine, items, BedrockConverseAdapter())
    first, second = machine.list()
    assert first.id == "bedrock-"  # the synthetic id, cut to max_id_chars
    assert first.name == "nnnn...(cut)"
    assert second.error is not None
    assert second.error.kind == "arguments_too_large"
    events = [e for item in items for e in BedrockConverseAdapter(limits=limits).feed(item)]
    assert all(len(getattr(e, "id", "") or "") <= 8 for e in events)


# -- re-chunking -----------------------------------------------------------------------------

ARGS = {"cities": ["Tokyo", "Ōsaka", 'Ky"oto'], "n": 10, "deep": {"a": [1.5, None, True]}}


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_chunking_of_the_input_gives_the_same_call(data: st.DataObject) -> None:
    body = json.dumps(ARGS, ensure_ascii=False, indent=data.draw(st.sampled_from([None, 2])))
    cuts = sorted(data.draw(st.sets(st.integers(0, len(body)), max_size=30)))
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    machine = run(one_call(*pieces))
    (call,) = machine.list()
    assert (call.args, call.args_text) == (ARGS, body)


# -- async drivers on asyncio and trio -------------------------------------------------------


def parallel_turn() -> list[Any]:
    return [
        {"messageStart": {"role": "assistant"}},
        text(0, "Let me check."),
        start(1, "a", "weather"),
        frag(1, ""),
        frag(1, '{"city": "Se'),
        frag(1, 'attle"}'),
        stop(1),
        start(2, "b", "weather"),
        frag(2, '{"city": "Paris"}'),
        stop(2),
        message_stop(),
        METADATA,
    ]


@pytest.mark.anyio
async def test_consume_adapt_on_each_backend(anyio_backend: str) -> None:
    async def source() -> AsyncIterator[Any]:
        for item in parallel_turn():
            yield item

    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            await tracker.consume(adapt(source(), BedrockConverseAdapter()))
            calls = tracker.list()
            assert [(c.id, c.args) for c in calls] == [
                ("a", {"city": "Seattle"}),
                ("b", {"city": "Paris"}),
            ]
            assert tracker.end is not None
            assert (tracker.end.ok, tracker.end.reason) == (True, "tool_use")


@pytest.mark.anyio
async def test_first_call_is_ready_before_the_second_arrives(anyio_backend: str) -> None:
    """Readiness comes at ``contentBlockStop``, not at the end of the turn: a waiter for the
    first call wakes while the stream still holds the second (the head start)."""
    send, receive = anyio.create_memory_object_stream[Any](100)
    items = parallel_turn()
    first_stop = items.index(stop(1)) + 1
    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker, anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, adapt(receive, BedrockConverseAdapter()))
            async with send:
                for item in items[:first_stop]:
                    await send.send(item)
                ready = await tracker.wait_ready("a")
                assert ready.args == {"city": "Seattle"}
                assert tracker.get("b") is None
                for item in items[first_stop:]:
                    await send.send(item)
