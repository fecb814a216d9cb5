"""Several model turns in one AI SDK response (steps), and the ids that carry over to the
response answering the approvals: ``AISDKListener(steps=True)`` against the encoder, and
``AISDKStreamIds``. The real SDK reading them is in tests/test_ai_sdk_real.py."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_ai_sdk import transcripts

from toolcall_tracker import (
    Delta,
    End,
    Ready,
    Result,
    Start,
    tool_call_streaming_state_machine,
)
from toolcall_tracker.adapters import AISDKEncoder, AISDKListener, AISDKStreamIds


def encoded_steps(turns: list[list[Any]]) -> list[dict[str, Any]]:
    """What the encoder writes for ``turns`` in one response (each turn ends with End)."""
    encoder = AISDKEncoder()
    parts: list[dict[str, Any]] = []
    for turn in turns[:-1]:
        parts += [part for event in turn[:-1] for part in encoder.encode(event)]
        parts += encoder.next_step(turn[-1])
    return parts + [part for event in turns[-1] for part in encoder.encode(event)]


def listened_steps(turns: list[list[Any]]) -> tuple[list[dict[str, Any]], AISDKListener]:
    """What a chain of listeners, one machine per turn, writes for ``turns``."""
    machine = tool_call_streaming_state_machine()
    listener = AISDKListener(machine, steps=True)
    machine.subscribe(listener, fragments=True)
    for index, turn in enumerate(turns):
        if index:
            machine = tool_call_streaming_state_machine()
            listener = listener.next_step(machine)
            machine.subscribe(listener, fragments=True)
        for event in turn:
            machine.apply(event)
    listener.finish()
    return listener.take(), listener


@settings(max_examples=150, deadline=None)
@given(st.lists(transcripts(), min_size=1, max_size=3))
def test_a_listener_chain_writes_what_the_encoder_writes(turns: list[list[Any]]) -> None:
    """Steps, renamed ids, abandoned calls and failed turns alike (the ids repeat from
    turn to turn: the strategy draws them from a, b, c)."""
    parts, _ = listened_steps(turns)
    assert parts == encoded_steps(turns)
    started = [part["toolCallId"] for part in parts if part["type"] == "tool-input-start"]
    assert len(started) == len(set(started))  # no two calls of the message share an id


def call(call_id: str, name: str = "f") -> list[Any]:
    return [Start(id=call_id, name=name), Delta(id=call_id, argsTextDelta="{}"), Ready(id=call_id)]


def test_an_earlier_steps_late_output_keeps_its_id() -> None:
    """A tool of step 0 that finishes while step 1 streams is written under step 0's id,
    and step 1's call of the same id under its own."""
    first = tool_call_streaming_state_machine()
    seen: list[dict[str, Any]] = []
    step0 = AISDKListener(first, on_part=seen.append, steps=True)
    first.subscribe(step0, fragments=True)
    for event in [*call("c"), End(ok=True, reason="tool_calls")]:
        first.apply(event)
    second = tool_call_streaming_state_machine()
    step1 = step0.next_step(second)
    second.subscribe(step1, fragments=True)
    for event in [*call("c"), Result(id="c", result="new")]:
        second.apply(event)
    first.apply(Result(id="c", result="old"))  # late
    second.apply(End(ok=True, reason="stop"))
    step1.finish()
    assert [(p["type"], p.get("toolCallId"), p.get("output")) for p in seen] == [
        ("tool-input-start", "c", None),
        ("tool-input-delta", "c", None),
        ("tool-input-available", "c", None),
        ("finish-step", None, None),
        ("start-step", None, None),
        ("tool-input-start", "c~1", None),
        ("tool-input-delta", "c~1", None),
        ("tool-input-available", "c~1", None),
        ("tool-output-available", "c~1", "new"),
        ("tool-output-available", "c", "old"),
        ("finish-step", None, None),
        ("finish", None, None),
    ]
    assert seen[-1]["finishReason"] == "stop"
    ids = step1.stream_ids()
    assert (dict(ids.calls), ids.used) == ({"c": "c~1"}, frozenset({"c", "c~1"}))


def test_steps_misuse_names_the_fix() -> None:
    machine = tool_call_streaming_state_machine()
    plain = AISDKListener(machine)
    with pytest.raises(RuntimeError, match=r"AISDKListener\(calls, steps=True\)"):
        plain.next_step(tool_call_streaming_state_machine())
    with pytest.raises(RuntimeError, match=r"steps=True"):
        plain.finish()
    listener = AISDKListener(machine, steps=True)
    machine.subscribe(listener, fragments=True)
    with pytest.raises(RuntimeError, match="has not ended; apply its End event first"):
        listener.next_step(tool_call_streaming_state_machine())
    with pytest.raises(RuntimeError, match="has not ended"):
        listener.finish()
    machine.apply(End(ok=True))
    assert listener.take() == []  # with steps=True the turn's end writes nothing
    follower = listener.next_step(tool_call_streaming_state_machine())
    with pytest.raises(RuntimeError, match="has a next step already; use the last one"):
        listener.next_step(tool_call_streaming_state_machine())
    with pytest.raises(RuntimeError, match="has a next step already"):
        listener.finish()
    with pytest.raises(RuntimeError, match="has not ended"):  # the follower's turn
        follower.finish()
    assert [p["type"] for p in listener.take()] == ["finish-step", "start-step"]


def test_a_single_step_with_steps_true_writes_finish_when_told() -> None:
    machine = tool_call_streaming_state_machine()
    listener = AISDKListener(machine, steps=True)
    machine.subscribe(listener, fragments=True)
    for event in [*call("a"), End(ok=False, reason="upstream failed")]:
        machine.apply(event)
    machine.apply(Result(id="a", result=1))  # the tool's output, after the turn's end
    listener.finish()
    assert [p["type"] for p in listener.take()][-3:] == [
        "tool-output-available",
        "error",
        "finish",
    ]
    with pytest.raises(RuntimeError, match="finished already"):
        listener.finish()


ids_text = st.text(st.characters(codec=None, blacklist_categories=()), max_size=8)


@given(st.dictionaries(ids_text, ids_text, max_size=4), st.frozensets(ids_text, max_size=4))
def test_stream_ids_round_trip_through_json(calls: dict[str, str], used: frozenset[str]) -> None:
    """Lone surrogates included (the core accepts them in ids)."""
    ids = AISDKStreamIds(calls=calls, used=used)
    text = ids.to_json()
    assert text.isascii()
    assert AISDKStreamIds.from_json(text) == ids
    assert AISDKStreamIds.from_json(text.encode()) == ids
    assert hash(AISDKStreamIds.from_json(text)) == hash(ids)


def test_stream_ids_keep_the_ids_they_were_given() -> None:
    calls = {"c": "c~1"}
    ids = AISDKStreamIds(calls=calls, used=frozenset({"c", "c~1"}))
    calls["d"] = "d"  # the caller's dict changes: the ids do not
    assert dict(ids.calls) == {"c": "c~1"}
    with pytest.raises(TypeError):
        ids.calls["e"] = "e"  # type: ignore[index]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "not JSON"),
        ("[" * 100_000, "not JSON"),
        ("[]", '"calls" and "used" only'),
        ('{"calls": {}, "used": [], "x": 1}', '"calls" and "used" only'),
        ('{"calls": {"a": 1}, "used": []}', '"calls" must map ids to strings'),
        ('{"calls": [], "used": []}', '"calls" must map ids to strings'),
        ('{"calls": {}, "used": "ab"}', '"used" must be a list of strings'),
        ('{"calls": {}, "used": [null]}', '"used" must be a list of strings'),
    ],
)
def test_stream_ids_refuse_what_they_did_not_write(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        AISDKStreamIds.from_json(text)


def test_a_continuing_encoder_renames_an_id_the_message_holds() -> None:
    earlier = AISDKStreamIds(calls={"c": "c~1"}, used=frozenset({"c", "c~1"}))
    encoder = AISDKEncoder(continues=earlier)
    assert encoder.encode(Start(id="c", name="f")) == [
        {"type": "tool-input-start", "toolCallId": "c~0", "toolName": "f"}
    ]
    assert encoder.encode(Start(id="d", name="f"))[0]["toolCallId"] == "d"


def test_an_id_that_looks_renamed_stays_apart() -> None:
    """Step 1 holds ``c`` (renamed ``c~1``) and a call whose own id is ``c~1``."""
    turns = [
        [*call("c"), End(ok=True, reason="tool_calls")],
        [*call("c"), *call("c~1"), End(ok=True, reason="stop")],
    ]
    parts, listener = listened_steps(turns)
    assert parts == encoded_steps(turns)
    started = [part["toolCallId"] for part in parts if part["type"] == "tool-input-start"]
    assert started == ["c", "c~1", "c~1~1"]
    assert dict(listener.stream_ids().calls) == {"c": "c~1", "c~1": "c~1~1"}
