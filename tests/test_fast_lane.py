"""The fast lane: an adapter's call table appending into the machine's record directly.

The call table keeps, for each call it starts in a machine, the machine's record of it
and appends a fragment that fits in the record's lane without ``write_delta``
(``_CallRecord.append``). Whatever the stream, the limits and the listeners, that
must leave the machine exactly as the event models applied one by one to a machine whose
records have no lane (a fragment listener is subscribed from the start) do, and report the
same ignored events and fragments.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _json_values import count_parses
from toolcall_tracker import (
    Limits,
    Status,
    ToolCallStateMachine,
    ToolCallTracker,
    TrackerClosed,
)
from toolcall_tracker.adapters import AnthropicAdapter, apply_stream
from toolcall_tracker.changes import ChangeListener


class _Fragments(ChangeListener):
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def args_appended(self, call_id: str, text: str) -> None:
        self.seen.append((call_id, text))


def _start(index: int) -> dict[str, Any]:
    block = {"type": "tool_use", "id": f"toolu_{index}", "name": "f", "input": {}}
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, text: str) -> dict[str, Any]:
    delta = {"type": "input_json_delta", "partial_json": text}
    return {"type": "content_block_delta", "index": index, "delta": delta}


_ITEM = st.one_of(
    st.tuples(st.just("start"), st.integers(0, 3)),
    st.tuples(st.just("delta"), st.integers(0, 3), st.text('ab{}"1 ', max_size=300)),
    st.tuples(st.just("stop"), st.integers(0, 3)),
    st.tuples(st.just("subscribe")),
)


def _items(script: list[tuple[Any, ...]]) -> list[Any]:
    items: list[Any] = []
    for step in script:
        if step[0] == "start":
            items.append(_start(step[1]))
        elif step[0] == "delta":
            items.append(_delta(step[1], step[2]))
        elif step[0] == "stop":
            items.append({"type": "content_block_stop", "index": step[1]})
        else:
            items.append("subscribe")
    items.append({"type": "message_delta", "delta": {"stop_reason": "tool_use"}})
    items.append({"type": "message_stop"})
    return items


def _run(items: list[Any], limits: Limits, lane: bool) -> Any:
    ignored: list[tuple[str, str]] = []
    machine = ToolCallStateMachine(
        limits=limits, on_ignored=lambda event, reason: ignored.append((repr(event), reason))
    )
    listener = _Fragments()
    if not lane:  # a fragment listener from the start: no record of this machine has a lane
        machine.subscribe(_Fragments(), fragments=True)
    adapter = AnthropicAdapter()
    for item in items:
        if item == "subscribe":
            machine.subscribe(listener, fragments=True)
        elif lane:  # the table writes into the machine: its lane
            adapter.write(item, machine)
        else:  # the event models, applied one by one, every fragment through the table
            for event in adapter.feed(item):
                machine.apply(event)
    if lane:
        adapter.finish(machine)
    else:
        for event in adapter.end():
            machine.apply(event)
    calls = [
        (call.id, call.status, call.args_text, type(call.error).__name__) for call in machine.list()
    ]
    return calls, [reason for _, reason in ignored], listener.seen


@settings(max_examples=300, deadline=None)
@given(
    script=st.lists(_ITEM, max_size=60),
    max_args=st.integers(min_value=0, max_value=1500),
)
def test_the_tables_lane_leaves_the_machine_as_the_events_do(
    script: list[tuple[Any, ...]], max_args: int
) -> None:
    items = _items(script)
    limits = Limits(max_args_chars=max_args)
    assert _run(items, limits, lane=True) == _run(items, limits, lane=False)


def test_a_long_call_through_the_lane_is_whole() -> None:
    machine = ToolCallStateMachine()
    text = '{"q": "' + "x" * 100_000 + '"}'
    fragments = [text[i : i + 7] for i in range(0, len(text), 7)]
    items = [_start(0), *(_delta(0, f) for f in fragments)]
    items += [{"type": "content_block_stop", "index": 0}, {"type": "message_stop"}]
    apply_stream(machine, items, AnthropicAdapter())
    call = machine.get("toolu_0")
    assert call is not None
    assert call.args_text == text
    assert call.args == {"q": "x" * 100_000}


def test_apply_stream_into_a_closed_tracker_is_refused() -> None:
    import anyio

    async def closed() -> ToolCallTracker:
        tracker = ToolCallTracker()
        await tracker.aclose()
        return tracker

    tracker = anyio.run(closed)
    with pytest.raises(TrackerClosed):
        apply_stream(tracker, [_start(0), _delta(0, "{}")], AnthropicAdapter())


def test_apply_stream_into_an_open_tracker_keeps_its_state() -> None:
    # Written into the tracker's machine, the tracker still sees every change.
    tracker = ToolCallTracker()
    items = [_start(0), _delta(0, '{"a": 1}'), {"type": "content_block_stop", "index": 0}]
    apply_stream(tracker, items, AnthropicAdapter())
    assert tracker.get("toolu_0") is not None
    assert tracker.timeline("toolu_0").ready is not None
    assert tracker.end is not None


def test_open_machine_is_the_machine_while_the_tracker_is_open() -> None:
    import anyio

    machine = ToolCallStateMachine()
    assert machine.open_machine() is machine

    async def close(tracker: ToolCallTracker) -> None:
        await tracker.aclose()

    tracker = ToolCallTracker()
    assert tracker.open_machine() is tracker.machine
    anyio.run(close, tracker)
    assert tracker.open_machine() is None  # closed: its own writes refuse


def test_apply_stream_writes_through_a_tracker_subclass_own_writes() -> None:
    # A subclass may override the writes: apply_stream must not go around them.
    seen: list[str] = []

    class Counting(ToolCallTracker):
        def write_delta(self, call_id: str, text: str) -> None:
            seen.append(text)
            super().write_delta(call_id, text)

    tracker = Counting()
    assert tracker.open_machine() is None
    apply_stream(tracker, [_start(0), _delta(0, '{"a": 1}')], AnthropicAdapter())
    assert seen == ['{"a": 1}']


@settings(max_examples=200, deadline=None)
@given(
    fragments=st.lists(
        st.one_of(st.none(), st.integers(), st.text("ab{}1 ", max_size=200)), max_size=40
    ),
    max_args=st.integers(min_value=0, max_value=1200),
    subscribe_at=st.none() | st.integers(min_value=0, max_value=40),
)
def test_more_and_more_of_are_one_fast_path(
    fragments: list[Any], max_args: int, subscribe_at: int | None
) -> None:
    # ``more`` inlines ``more_of`` (a call less per fragment): both must answer and write
    # alike, into the lane and through write_delta, past the limit and with a listener.
    from toolcall_tracker.adapters._calls import RULES, AdapterCallTable, malformed_event
    from toolcall_tracker.adapters.anthropic import AnthropicMalformedEvent

    outcomes = []
    for route in ("more", "more_of"):
        machine = ToolCallStateMachine(limits=Limits(max_args_chars=max_args))
        listener = _Fragments()
        failure = malformed_event(AnthropicMalformedEvent)
        table = AdapterCallTable(RULES["bedrock"], failure, machine)
        record = table.start(0, "c", "f", "start")
        assert record is not None
        table.append(record, "{", "delta")  # the call's text counts: the fast path is open
        answers = []
        for index, text in enumerate(fragments):
            if index == subscribe_at:
                machine.subscribe(listener, fragments=True)
            if route == "more":
                answers.append(table.more(0, text))
            else:
                answers.append(table.more_of(record, text))
        call = machine.get("c")
        assert call is not None
        outcomes.append((answers, call.status, call.args_text, listener.seen))
    assert outcomes[0] == outcomes[1]


# -- a parse handed over (_CallRecord.give) ------------------------------------------------


def _ui_call(call_id: str, fragments: list[str], stated: Any) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [
        {"type": "start"},
        {"type": "start-step"},
        {"type": "tool-input-start", "toolCallId": call_id, "toolName": "f"},
    ]
    parts += [
        {"type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": f} for f in fragments
    ]
    parts.append(
        {"type": "tool-input-available", "toolCallId": call_id, "toolName": "f", "input": stated}
    )
    return [*parts, {"type": "finish-step"}, {"type": "finish"}]


def test_a_streamed_text_the_reader_parsed_is_parsed_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The AI SDK reader parses the streamed text to compare it with the stated input; the
    machine takes that parse at ready instead of parsing the same text again."""
    from toolcall_tracker import _reducer
    from toolcall_tracker.adapters import AISDKAdapter

    parsed_by_machine = count_parses(monkeypatch, _reducer)
    machine = ToolCallStateMachine()
    stated = {"q": "x", "n": [1, 2.5, True, None]}
    apply_stream(
        machine,
        _ui_call("c1", ['{"q": "x", ', '"n": [1, 2.5, true, null]}'], stated),
        AISDKAdapter(),
    )
    call = machine.get("c1")
    assert call is not None
    assert call.status is Status.RUNNING
    assert call.args == stated
    assert call.args_text == '{"q": "x", "n": [1, 2.5, true, null]}'
    assert parsed_by_machine == []
    # a stated input that differs replaces the text: the machine parses what it holds
    machine = ToolCallStateMachine()
    apply_stream(machine, _ui_call("c2", ['{"q": 1}'], {"q": True}), AISDKAdapter())
    call = machine.get("c2")
    assert call is not None
    assert call.args == {"q": True}
    assert call.args_text == '{"q":true}'
    assert parsed_by_machine == [("_reducer", '{"q":true}')]


def test_a_handed_parse_is_taken_only_for_that_very_text() -> None:
    """``_CallRecord.give`` pins the value to the text object: text appended afterwards, a
    failed call or a call that is no longer pending never takes it."""
    machine = ToolCallStateMachine()
    machine.write_start("a", "f")
    record = machine._calls["a"]  # type: ignore[attr-defined]
    text = '{"x": 1}'
    machine.write_delta("a", text)
    record.give(text, {"x": "not the parse"})  # a wrong value proves which was taken
    machine.write_delta("a", " ")  # the text the machine holds is no longer that object
    machine.write_ready("a")
    call = machine.get("a")
    assert call is not None
    assert call.args == {"x": 1}

    machine.write_start("b", "f")
    record = machine._calls["b"]  # type: ignore[attr-defined]
    machine.write_delta("b", text)
    record.give(text, {"x": "handed"})
    machine.write_error("b", "stopped")
    assert record.given is None  # released with the failed call

    record.give(text, {"x": "late"})  # not pending: nothing is kept
    assert record.given is None

    machine.write_start("c", "f")
    record = machine._calls["c"]  # type: ignore[attr-defined]
    machine.write_delta("c", text)
    handed = {"x": 1}
    record.give(text, handed)
    machine.write_ready("c")
    assert record.args is handed  # taken as it is: not parsed again
    assert record.given is None


def _chat_chunk(index: int, text: str, name: str | None = None) -> dict[str, Any]:
    fragment: dict[str, Any] = {"index": index, "function": {"arguments": text}}
    if name is not None:
        fragment.update(id=f"call_{index}", type="function")
        fragment["function"]["name"] = name
    delta = {"role": "assistant", "tool_calls": [fragment]}
    return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}


def test_a_chat_call_made_ready_early_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Chat adapter parses a call's text when the next call starts, to tell whether it
    is complete; the machine takes that parse at ready. Text that is not complete is held,
    and parsed by the machine at the finish reason."""
    from toolcall_tracker import _reducer
    from toolcall_tracker.adapters import OpenAIChatAdapter
    from toolcall_tracker.adapters.openai import _shared as _openai

    parsed = count_parses(monkeypatch, _reducer, _openai)
    finish = {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    items = [
        _chat_chunk(0, '{"a": [1, ', "f"),
        _chat_chunk(0, "true]}"),
        _chat_chunk(1, "12", "g"),  # a bare number may still grow: held
        _chat_chunk(2, "{}", "h"),
        finish,
    ]
    tracker = ToolCallTracker()
    apply_stream(tracker, items, OpenAIChatAdapter())
    assert [(c.id, c.status, c.args) for c in tracker.list()] == [
        ("call_0", Status.RUNNING, {"a": [1, True]}),
        ("call_1", Status.RUNNING, 12),
        ("call_2", Status.RUNNING, {}),
    ]
    assert parsed == [
        ("_shared", '{"a": [1, true]}'),  # call_0 superseded: complete, handed over
        ("_shared", "12"),  # call_1 superseded: a number, held
        ("_reducer", "12"),  # ... and parsed by the machine at the finish reason
        ("_reducer", "{}"),  # call_2, the last, made ready at the finish reason
    ]
