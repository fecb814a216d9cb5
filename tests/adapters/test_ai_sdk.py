"""AI SDK UI message streams: AISDKAdapter (reading), AISDKEncoder (writing), round trips."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import DEADLINE
from toolcall_tracker import (
    Delta,
    End,
    Error,
    Limits,
    Ready,
    Result,
    Start,
    ToolCall,
    ToolCallTracker,
    tool_call_streaming_state_machine,
)
from toolcall_tracker.adapters import adapt
from toolcall_tracker.adapters.ai_sdk import (
    SSE_DONE,
    UI_MESSAGE_STREAM_HEADERS,
    AISDKAdapter,
    AISDKEncoder,
    AISDKListener,
    AISDKMalformedPart,
    AISDKToolError,
    encode_ai_sdk,
    to_sse,
)

FIXTURES = Path(__file__).parent.parent / "fixtures" / "ai_sdk"


def sse_parts(name: str) -> list[dict[str, Any]]:
    body = (FIXTURES / name).read_text()
    return [
        json.loads(line[len("data: ") :])
        for line in body.splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]


def run(items: Iterable[Any]) -> tuple[list[ToolCall], End | None]:
    adapter = AISDKAdapter()
    machine = tool_call_streaming_state_machine()
    for item in items:
        for event in adapter.feed(item):
            machine.apply(event)
    for event in adapter.end():
        machine.apply(event)
    return machine.list(), machine.end


# -- reading ------------------------------------------------------------------------------


def test_tool_calls_fixture() -> None:
    calls, end = run(sse_parts("tool_calls.sse"))
    w1, w2, t1 = calls
    assert (w1.name, w1.args, w1.status, w1.result) == (
        "getWeather",
        {"city": "Paris"},
        "done",
        {"tempC": 18, "sky": "clear"},
    )
    assert w2.args == {"city": "Oslo", "days": [1, 2]}
    assert w2.status == "error"
    assert isinstance(w2.error, AISDKToolError)
    assert w2.error.message == "weather service unavailable"
    assert w2.error.part_type == "tool-output-error"
    assert (t1.args_text, t1.result) == ("{}", "12:01")  # not streamed; preliminary skipped
    assert end == End(ok=True, reason="finish")


def test_sse_lines_are_accepted_as_items() -> None:
    body = (FIXTURES / "tool_calls.sse").read_text()
    assert run(body.split("\n\n")) == run(sse_parts("tool_calls.sse"))
    assert run(line.encode() for line in body.split("\n\n")) == run(sse_parts("tool_calls.sse"))


def test_input_error_and_finish_reason() -> None:
    (bad, noargs), end = run(sse_parts("input_error.sse"))
    assert bad.status == "error"
    assert isinstance(bad.error, AISDKToolError)
    assert bad.error.part_type == "tool-input-error"
    assert bad.error.input == '{"query": 42'
    assert (noargs.args_text, noargs.status) == ("{}", "running")
    assert end == End(ok=True, reason="tool-calls")


def test_error_part_ends_not_ok_and_abandons_open_calls() -> None:
    (call,), end = run(sse_parts("stream_error.sse"))
    assert end == End(ok=False, reason="Overloaded")
    assert call.status == "error"


@pytest.mark.parametrize(
    ("part", "end"),
    [
        ({"type": "finish"}, End(ok=True, reason="finish")),
        ({"type": "finish", "finishReason": "stop"}, End(ok=True, reason="stop")),
        ({"type": "finish", "finishReason": "length"}, End(ok=False, reason="length")),
        (
            {"type": "finish", "finishReason": "content-filter"},
            End(ok=False, reason="content-filter"),
        ),
        ({"type": "error", "errorText": "boom"}, End(ok=False, reason="boom")),
        ({"type": "error"}, End(ok=False, reason="error")),
        ({"type": "abort"}, End(ok=False, reason="abort")),
    ],
)
def test_turn_endings(part: dict[str, Any], end: End) -> None:
    adapter = AISDKAdapter()
    assert adapter.feed(part) == [end]
    assert adapter.feed({"type": "finish"}) == []
    assert adapter.end() == []


def test_no_finish_ends_not_ok() -> None:
    assert AISDKAdapter().end() == [End(ok=False, reason="stream ended without a finish part")]


def test_the_stated_input_counts_over_the_streamed_text() -> None:
    parts = [
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "f"},
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"a": 1'},
        {"type": "tool-input-available", "toolCallId": "c1", "toolName": "f", "input": {"a": 2}},
        {"type": "finish"},
    ]
    (call,), _ = run(parts)
    assert (call.status, call.args, call.args_text) == ("running", {"a": 2}, '{"a":2}')


def test_results_after_finish_still_apply() -> None:
    parts = [
        {"type": "tool-input-available", "toolCallId": "c1", "toolName": "f", "input": {"a": 1}},
        {"type": "finish"},
        {"type": "tool-output-available", "toolCallId": "c1", "output": 3},
        {"type": "tool-input-start", "toolCallId": "c2", "toolName": "g"},
    ]
    (call,), _ = run(parts)
    assert (call.status, call.result) == ("done", 3)


def test_denied_output() -> None:
    parts = [
        {"type": "tool-input-available", "toolCallId": "c1", "toolName": "f", "input": {}},
        {"type": "tool-output-denied", "toolCallId": "c1"},
    ]
    (call,), _ = run(parts)
    assert isinstance(call.error, AISDKToolError)
    assert call.error.part_type == "tool-output-denied"


def test_malformed_parts_fail_their_call_only() -> None:
    parts = [
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "f"},
        {"type": "tool-input-start", "toolCallId": "c2", "toolName": 5},
        {"type": "tool-input-start", "toolCallId": "c3", "toolName": "h"},
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": {"no": 1}},
        {"type": "tool-input-delta", "toolCallId": "c3", "inputTextDelta": "{}"},
        {"type": "tool-input-available", "toolCallId": "c3", "toolName": "h", "input": {}},
        {"type": "finish"},
    ]
    c1, c2, c3 = run(parts)[0]
    assert isinstance(c1.error, AISDKMalformedPart)
    assert isinstance(c2.error, AISDKMalformedPart)
    assert (c3.status, c3.args) == ("running", {})


@pytest.mark.parametrize(
    "item",
    [None, 1, "data: {not json", "data: [DONE]", b"", {}, {"type": 3}, {"type": "text-delta"},
     {"type": "tool-input-start"}, {"type": "tool-input-available", "toolCallId": ""},
     {"type": "tool-output-available"}, {"type": "data-weather", "data": {}}],
)  # fmt: skip
def test_junk_never_raises(item: Any) -> None:
    adapter = AISDKAdapter()
    assert adapter.feed(item) == []
    start = {"type": "tool-input-start", "toolCallId": "c1", "toolName": "f"}
    assert adapter.feed(start) == [Start(id="c1", name="f")]


# -- writing ------------------------------------------------------------------------------


def test_encoder_parts() -> None:
    encoder = AISDKEncoder()
    assert encoder.start("m1") == [{"type": "start", "messageId": "m1"}]
    assert encoder.encode(Start(id="c1", name="f")) == [
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "f"}
    ]
    assert encoder.encode({"type": "delta", "id": "c1", "argsTextDelta": '{"a":'}) == [
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"a":'}
    ]
    encoder.encode(Delta(id="c1", argsTextDelta="1}"))
    assert encoder.encode(Ready(id="c1")) == [
        {"type": "tool-input-available", "toolCallId": "c1", "toolName": "f", "input": {"a": 1}}
    ]
    assert encoder.encode(Ready(id="c1")) == []  # the tracker would ignore it too
    assert encoder.encode(Result(id="c1", result=[1])) == [
        {"type": "tool-output-available", "toolCallId": "c1", "output": [1]}
    ]
    assert encoder.encode(Error(id="c1", error="late")) == []
    assert encoder.encode(End(ok=True)) == [{"type": "finish", "finishReason": "stop"}]


def test_encoder_errors_and_end() -> None:
    encoder = AISDKEncoder()
    for event in (
        Start(id="bad", name="f"),
        Delta(id="bad", argsTextDelta="{oops"),
        Start(id="run", name="g"),
        Delta(id="run", argsTextDelta="{}"),
        Ready(id="run"),
        Start(id="open", name="h"),
        Delta(id="open", argsTextDelta='{"x'),
    ):
        encoder.encode(event)
    (bad,) = encoder.encode(Ready(id="bad"))
    assert bad["type"] == "tool-input-error"
    assert bad["input"] == "{oops"
    assert bad["errorText"].startswith("invalid JSON")
    assert encoder.encode(Error(id="run", error=ValueError("x"))) != []
    parts = encoder.encode(End(ok=False, reason="length"))
    # a cut-off is no error (the SDK writes finish, finishReason "length", and no error)
    assert [p["type"] for p in parts] == ["tool-input-error", "finish"]
    assert parts[0]["toolCallId"] == "open"
    assert parts[1]["finishReason"] == "length"
    assert encoder.encode(End(ok=False, reason="boom")) == []  # the turn already ended
    assert AISDKEncoder().encode(End(ok=False, reason="boom")) == [
        {"type": "error", "errorText": "boom"},
        {"type": "finish", "finishReason": "error"},
    ]


def test_encoder_error_text_uses_message() -> None:
    encoder = AISDKEncoder()
    encoder.encode(Start(id="c1", name="f"))
    encoder.encode(Delta(id="c1", argsTextDelta="{}"))
    encoder.encode(Ready(id="c1"))
    (part,) = encoder.encode(Error(id="c1", error=AISDKToolError(message="m", part_type="x")))
    assert part == {"type": "tool-output-error", "toolCallId": "c1", "errorText": "m"}


def test_to_sse_and_headers() -> None:
    assert to_sse({"type": "finish"}) == 'data: {"type":"finish"}\n\n'
    assert SSE_DONE == "data: [DONE]\n\n"
    assert UI_MESSAGE_STREAM_HEADERS["x-vercel-ai-ui-message-stream"] == "v1"


# -- round trips: events -> parts -> AISDKAdapter -> the same calls ----------------------

TRANSCRIPT: list[Any] = [
    Start(id="a", name="getWeather"),
    Start(id="b", name="search"),
    Delta(id="a", argsTextDelta='{"city":'),
    Delta(id="b", argsTextDelta='{"q": "x"}'),
    Delta(id="a", argsTextDelta=' "Paris"}'),
    Ready(id="b"),
    Ready(id="a"),
    Result(id="a", result={"tempC": 18}),
    Start(id="c", name="noArgs"),
    Delta(id="c", argsTextDelta="{}"),
    Ready(id="c"),
    Error(id="b", error="search failed"),
    Start(id="d", name="broken"),
    Delta(id="d", argsTextDelta="{nope"),
    Ready(id="d"),
    Start(id="e", name="cut"),
    Delta(id="e", argsTextDelta='{"x'),
    End(ok=False, reason="length"),
    Result(id="c", result="late but fine"),
]


def comparable(calls: list[ToolCall]) -> list[tuple[Any, ...]]:
    return [(c.id, c.name, c.args_text, c.args, c.status, c.result) for c in calls]


def direct(events: list[Any]) -> tuple[list[ToolCall], End | None]:
    machine = tool_call_streaming_state_machine()
    for event in events:
        machine.apply(event)
    return machine.list(), machine.end


def test_round_trip() -> None:
    encoder = AISDKEncoder()
    sse = "".join(encoder.encode_sse(event) for event in TRANSCRIPT)
    calls, end = run(sse.split("\n\n"))
    expected_calls, expected_end = direct(TRANSCRIPT)
    assert comparable(calls) == comparable(expected_calls)
    assert end == expected_end


@st.composite
def transcripts(draw: st.DrawFn) -> list[Any]:
    """Random valid-looking event sequences over a few ids, with random fragments."""
    ids = ["a", "b", "c"]
    events: list[Any] = []
    for _ in range(draw(st.integers(0, 25))):
        call_id = draw(st.sampled_from(ids))
        kind = draw(st.sampled_from(["start", "delta", "delta", "ready", "result", "error"]))
        if kind == "start":
            events.append(Start(id=call_id, name=draw(st.sampled_from(["f", "g"]))))
        elif kind == "delta":
            text = draw(st.sampled_from(['{"k":', " 1", "}", '"s"', "[", "]", "{}", ""]))
            events.append(Delta(id=call_id, argsTextDelta=text))
        elif kind == "ready":
            events.append(Ready(id=call_id))
        elif kind == "result":
            events.append(Result(id=call_id, result=draw(st.integers())))
        else:
            events.append(Error(id=call_id, error="e"))
    events.append(End(ok=draw(st.booleans()), reason="r"))
    return events


@settings(max_examples=150, deadline=None)
@given(transcripts())
def test_round_trip_property(events: list[Any]) -> None:
    encoder = AISDKEncoder()
    parts = [part for event in events for part in encoder.encode(event)]
    calls, end = run(parts)
    expected_calls, expected_end = direct(events)
    # A call that never became ready has no parsed input in the AI SDK protocol; its
    # tool-input-error carries the text, so the text and status still round-trip.
    assert comparable(calls) == comparable(expected_calls)
    assert end is not None
    assert expected_end is not None
    assert end.ok == expected_end.ok


@pytest.mark.anyio
async def test_encode_ai_sdk_serves_a_tracker_turn(anyio_backend: str) -> None:
    async def model() -> AsyncIterator[dict[str, Any]]:
        for part in sse_parts("tool_calls.sse"):
            yield part

    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            seen: list[Any] = []

            async def tee() -> AsyncIterator[Any]:
                async for event in adapt(model(), AISDKAdapter()):
                    tracker.apply(event)
                    seen.append(event)
                    yield event

            body = [chunk async for chunk in encode_ai_sdk(tee(), message_id="m1")]
            assert body[0] == 'data: {"type":"start","messageId":"m1"}\n\n'
            assert body[-1] == SSE_DONE
            again, _ = run("".join(body).split("\n\n"))
            assert comparable(again) == comparable(tracker.list())
            assert len(seen) > 0


# -- the encoder as a change-feed listener ---------------------------------------------------


def listened(events: list[Any], limits: Limits | None = None) -> list[dict[str, Any]]:
    """The parts an AISDKListener subscribed to a machine makes while ``events`` apply."""
    machine = tool_call_streaming_state_machine(limits=limits)
    listener = AISDKListener(machine)
    machine.subscribe(listener, fragments=True)
    for event in events:
        machine.apply(event)
    return listener.take()


@settings(max_examples=200, deadline=None)
@given(transcripts())
def test_listener_makes_the_parts_encode_makes(events: list[Any]) -> None:
    encoder = AISDKEncoder()
    assert listened(events) == [part for event in events for part in encoder.encode(event)]


def test_listener_and_encoder_agree_on_invalid_json_and_abandoned_calls() -> None:
    events = [
        Start(id="a", name="f"),
        Delta(id="a", argsTextDelta='{"x":'),
        Ready(id="a"),  # invalid JSON: tool-input-error
        Start(id="b", name="g"),
        Delta(id="b", argsTextDelta='{"y":1'),
        End(ok=False, reason="length"),  # b abandoned
    ]
    encoder = AISDKEncoder()
    parts = [part for event in events for part in encoder.encode(event)]
    assert [p["type"] for p in parts] == [
        "tool-input-start",
        "tool-input-delta",
        "tool-input-error",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-error",
        "finish",
    ]
    assert parts[5]["errorText"] == "the turn ended (length) before the arguments were complete"
    assert listened(events) == parts


def test_listener_works_on_a_tracker_with_on_part() -> None:
    tracker = ToolCallTracker()
    seen: list[dict[str, Any]] = []
    listener = AISDKListener(tracker, on_part=seen.append)
    tracker.subscribe(listener, fragments=True)
    for event in TRANSCRIPT:
        tracker.apply(event)
    encoder = AISDKEncoder()
    assert seen == [part for event in TRANSCRIPT for part in encoder.encode(event)]
    assert listener.take() == []


def test_encoder_keeps_no_text_past_the_limit_and_agrees_with_the_tracker() -> None:
    limits = Limits(max_args_chars=10)
    events = [
        Start(id="a", name="f"),
        Delta(id="a", argsTextDelta='{"s":"'),
        Delta(id="a", argsTextDelta="0123456789"),  # past the limit: the tracker fails it
        Delta(id="a", argsTextDelta='"}'),
        Ready(id="a"),
        End(ok=True, reason="stop"),
    ]
    encoder = AISDKEncoder(limits=limits)
    parts = [part for event in events for part in encoder.encode(event)]
    assert [p["type"] for p in parts] == [
        "tool-input-start",
        "tool-input-delta",
        "tool-input-error",
        "finish",
    ]
    assert parts[2]["input"] == ""
    assert "Limits.max_args_chars" in parts[2]["errorText"]
    assert listened(events, limits) == parts


# -- JSON-typed equality at tool-input-available -------------------------------------------


@pytest.mark.parametrize(
    ("streamed", "given", "same"),
    [
        ('{"a":true}', {"a": 1}, False),  # a boolean never equals a number
        ('{"a":1}', {"a": True}, False),
        ('{"a":0}', {"a": False}, False),
        ('{"a":1}', {"a": 1.0}, True),  # numbers compare by value
        ('{"a":[1,{"b":null}]}', {"a": [1.0, {"b": None}]}, True),
        ('{"a":[1,2]}', {"a": [2, 1]}, False),
        ('{"b":2,"a":"x"}', {"a": "x", "b": 2}, True),  # key order does not matter
        ('{"a":null}', {"a": 0}, False),
        ('{"a":"1"}', {"a": 1}, False),
    ],
)
def test_input_is_compared_as_json(streamed: str, given: Any, same: bool) -> None:
    parts = [
        {"type": "tool-input-start", "toolCallId": "c", "toolName": "f"},
        {"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": streamed},
        {"type": "tool-input-available", "toolCallId": "c", "toolName": "f", "input": given},
        {"type": "finish"},
    ]
    (call,), _ = run(parts)
    assert call.status == "running"
    # the streamed text is kept when it is the same JSON value; else the stated input counts
    assert call.args_text == (streamed if same else json.dumps(given, separators=(",", ":")))
