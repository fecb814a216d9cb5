"""Malformed events: ``InvalidEvent`` with a message naming the problem, state unchanged."""

from __future__ import annotations

import logging
import types
from collections import OrderedDict, UserDict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from toolcall_tracker import (
    Delta,
    End,
    Error,
    IgnoreReason,
    InvalidEvent,
    Ready,
    Result,
    Start,
    ToolCallStateMachine,
    ToolCallTracker,
    ToolCallTrackerError,
    parse_event,
    tool_call_streaming_state_machine,
)


class HostileRepr:
    def __repr__(self) -> str:
        raise RuntimeError("repr exploded")

    def __str__(self) -> str:
        raise RuntimeError("str exploded")


NOT_A_MAPPING = "an event must be an event model or a mapping"
NEEDS_TYPE = "needs a string 'type'"

# (case id, event, substrings the message must contain)
BAD: list[tuple[str, Any, tuple[str, ...]]] = [
    # Not a mapping at all.
    ("list", [{"type": "start", "id": "t1", "name": "n"}], (NOT_A_MAPPING, "list")),
    ("none", None, (NOT_A_MAPPING, "NoneType")),
    ("int", 7, (NOT_A_MAPPING, "int")),
    ("str", "start", (NOT_A_MAPPING, "str")),
    ("bytes", b'{"type":"start"}', (NOT_A_MAPPING, "bytes")),
    ("tuple-of-pairs", (("type", "start"), ("id", "t1")), (NOT_A_MAPPING, "tuple")),
    ("set", {"start"}, (NOT_A_MAPPING, "set")),
    ("model-class-not-instance", Start, (NOT_A_MAPPING,)),
    # The type.
    ("empty-mapping", {}, (NEEDS_TYPE, "None")),
    ("missing-type", {"id": "t1", "name": "n"}, (NEEDS_TYPE,)),
    ("int-type", {"type": 1, "id": "t1"}, (NEEDS_TYPE, "1")),
    ("none-type", {"type": None, "id": "t1"}, (NEEDS_TYPE,)),
    ("bytes-type", {"type": b"start", "id": "t1", "name": "n"}, (NEEDS_TYPE, "b'start'")),
    ("list-type", {"type": ["start"], "id": "t1"}, (NEEDS_TYPE,)),
    # The id.
    ("start-missing-id", {"type": "start", "name": "n"}, ("'start'", "'id'", "required")),
    ("delta-missing-id", {"type": "delta", "argsTextDelta": "x"}, ("'delta'", "'id'")),
    ("ready-missing-id", {"type": "ready"}, ("'ready'", "'id'", "required")),
    ("result-missing-id", {"type": "result", "result": 1}, ("'result'", "'id'")),
    ("error-missing-id", {"type": "error", "error": "x"}, ("'error'", "'id'")),
    ("empty-id", {"type": "start", "id": "", "name": "n"}, ("'id'", "at least 1")),
    ("empty-id-delta", {"type": "delta", "id": "", "argsTextDelta": "x"}, ("'id'",)),
    ("int-id", {"type": "start", "id": 1, "name": "n"}, ("'id'", "string")),
    ("int-id-ready", {"type": "ready", "id": 1}, ("'id'", "string")),
    ("none-id", {"type": "ready", "id": None}, ("'id'", "string")),
    ("bytes-id", {"type": "delta", "id": b"t1", "argsTextDelta": "x"}, ("'id'", "string")),
    ("bool-id", {"type": "result", "id": True, "result": 1}, ("'id'", "string")),
    # The name.
    ("missing-name", {"type": "start", "id": "t1"}, ("'name'", "required")),
    ("none-name", {"type": "start", "id": "t1", "name": None}, ("'name'", "string")),
    ("int-name", {"type": "start", "id": "t1", "name": 3}, ("'name'", "string")),
    # The fragment.
    ("missing-fragment", {"type": "delta", "id": "t1"}, ("'argsTextDelta'", "required")),
    (
        "bytes-fragment",
        {"type": "delta", "id": "t1", "argsTextDelta": b"{}"},
        ("'argsTextDelta'", "string"),
    ),
    (
        "none-fragment",
        {"type": "delta", "id": "t1", "argsTextDelta": None},
        ("'argsTextDelta'", "string"),
    ),
    (
        "int-fragment-snake",
        {"type": "delta", "id": "t1", "args_text_delta": 5},
        ("args_text_delta", "string"),
    ),
    (
        "list-fragment",
        {"type": "delta", "id": "t1", "argsTextDelta": ["{", "}"]},
        ("'argsTextDelta'", "string"),
    ),
    # Result and error need their field (None is a value; absence is not).
    ("result-without-result", {"type": "result", "id": "t1"}, ("'result'", "required")),
    ("error-without-error", {"type": "error", "id": "t1"}, ("'error'", "required")),
    # The end.
    ("end-ok-str", {"type": "end", "ok": "yes"}, ("'end'", "'ok'", "boolean")),
    ("end-ok-int", {"type": "end", "ok": 1}, ("'end'", "'ok'", "boolean")),
    ("end-ok-none", {"type": "end", "ok": None}, ("'end'", "'ok'", "boolean")),
    ("end-reason-int", {"type": "end", "reason": 3}, ("'end'", "'reason'", "string")),
    # Other mapping types go through the same validation.
    ("ordered-dict-missing-id", OrderedDict(type="ready"), ("'ready'", "'id'")),
    (
        "mappingproxy-bad-fragment",
        types.MappingProxyType({"type": "delta", "id": "t1", "argsTextDelta": 1}),
        ("'argsTextDelta'",),
    ),
    ("userdict-missing-name", UserDict({"type": "start", "id": "t1"}), ("'name'",)),
    # Hostile values do not break the message.
    ("hostile-object", HostileRepr(), (NOT_A_MAPPING, "HostileRepr")),
    ("hostile-type", {"type": HostileRepr(), "id": "t1"}, (NEEDS_TYPE, "HostileRepr")),
    ("hostile-id", {"type": "start", "id": HostileRepr(), "name": "n"}, ("'id'", "string")),
    ("hostile-name", {"type": "start", "id": "t1", "name": HostileRepr()}, ("'name'",)),
    (
        "hostile-fragment",
        {"type": "delta", "id": "t1", "argsTextDelta": HostileRepr()},
        ("'argsTextDelta'",),
    ),
]


def machine_in_every_state(ignored: list[Any] | None = None) -> ToolCallStateMachine:
    """A machine holding t1 pending (with text), r running, d done, e error."""
    sink: list[Any] = [] if ignored is None else ignored
    machine = tool_call_streaming_state_machine(on_ignored=lambda e, r: sink.append((e, r)))
    for event in [
        {"type": "start", "id": "t1", "name": "n"},
        {"type": "delta", "id": "t1", "argsTextDelta": '{"a":'},
        {"type": "start", "id": "r", "name": "n"},
        {"type": "delta", "id": "r", "argsTextDelta": "[]"},
        {"type": "ready", "id": "r"},
        {"type": "start", "id": "d", "name": "n"},
        {"type": "delta", "id": "d", "argsTextDelta": "1"},
        {"type": "ready", "id": "d"},
        {"type": "result", "id": "d", "result": "ok"},
        {"type": "start", "id": "e", "name": "n"},
        {"type": "error", "id": "e", "error": "no"},
    ]:
        machine.apply(event)
    return machine


@pytest.mark.parametrize(("event", "needles"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_malformed_event_raises_invalid_event_and_changes_nothing(
    event: Any, needles: tuple[str, ...]
) -> None:
    ignored: list[Any] = []
    machine = machine_in_every_state(ignored)
    before = machine.list()
    with pytest.raises(InvalidEvent) as info:
        machine.apply(event)
    error = info.value
    assert isinstance(error, ValueError)
    assert isinstance(error, ToolCallTrackerError)
    message = str(error)
    for needle in needles:
        assert needle in message, message
    assert len(message) < 600
    assert error.event is event
    assert machine.list() == before
    assert machine.end is None
    assert ignored == []
    # The machine still works afterwards.
    machine.apply({"type": "delta", "id": "t1", "argsTextDelta": "1}"})
    machine.apply({"type": "ready", "id": "t1"})
    call = machine.get("t1")
    assert call is not None
    assert call.args == {"a": 1}


@pytest.mark.parametrize(("event", "needles"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_parse_event_raises_the_same(event: Any, needles: tuple[str, ...]) -> None:
    with pytest.raises(InvalidEvent) as info:
        parse_event(event)
    for needle in needles:
        assert needle in str(info.value)


def test_malformed_end_after_end_still_raises() -> None:
    machine = machine_in_every_state()
    machine.apply({"type": "end"})
    before = machine.list()
    with pytest.raises(InvalidEvent, match="'ok'"):
        machine.apply({"type": "end", "ok": "no"})
    assert machine.list() == before
    assert machine.end == End()


def test_long_message_is_shortened() -> None:
    machine = tool_call_streaming_state_machine()
    with pytest.raises(InvalidEvent) as info:
        machine.apply(["x" * 10_000])
    assert len(str(info.value)) < 300
    assert "list" in str(info.value)


@pytest.mark.parametrize("kind", ["START", "tool_call", "", "delta ", "thinking"])
def test_unknown_type_is_ignored_and_reported_not_raised(kind: str) -> None:
    ignored: list[tuple[Any, IgnoreReason]] = []
    machine = tool_call_streaming_state_machine(on_ignored=lambda e, r: ignored.append((e, r)))
    machine.apply({"type": "start", "id": "t1", "name": "n"})
    before = machine.list()
    event = {"type": kind, "id": "t1", "name": "n", "argsTextDelta": "x"}
    machine.apply(event)
    assert machine.list() == before
    assert len(ignored) == 1
    reported, reason = ignored[0]
    assert reason is IgnoreReason.UNKNOWN_TYPE
    assert reported is event  # the raw mapping, since it cannot be parsed
    assert parse_event(event) is None


def test_unknown_type_with_otherwise_garbage_fields_is_still_ignored() -> None:
    ignored: list[Any] = []
    machine = tool_call_streaming_state_machine(on_ignored=lambda e, r: ignored.append(r))
    machine.apply({"type": "future_event", "id": 5, "payload": HostileRepr()})
    assert ignored == [IgnoreReason.UNKNOWN_TYPE]
    assert machine.list() == []


def test_hostile_repr_in_an_invalid_event_reaches_the_hook_of_a_skipping_tracker() -> None:
    ignored: list[Any] = []
    tracker = ToolCallTracker(on_ignored=lambda e, r: ignored.append(r))
    hostile = HostileRepr()
    with pytest.raises(InvalidEvent, match="HostileRepr"):
        tracker.apply(hostile)
    assert ignored == []


def test_hostile_repr_in_an_ignored_event_is_logged_safely(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ignored: list[Any] = []
    machine = tool_call_streaming_state_machine(on_ignored=lambda e, r: ignored.append(r))
    with caplog.at_level(logging.DEBUG, logger="toolcall_tracker"):
        machine.apply({"type": "future_event", "payload": HostileRepr()})
    assert ignored == [IgnoreReason.UNKNOWN_TYPE]
    assert any("unknown_type" in record.getMessage() for record in caplog.records)


def test_extra_fields_are_ignored() -> None:
    machine = tool_call_streaming_state_machine()
    machine.apply({"type": "start", "id": "t1", "name": "n", "index": 0, "extra": {"x": 1}})
    machine.apply({"type": "delta", "id": "t1", "argsTextDelta": "[]", "index": 0})
    machine.apply({"type": "ready", "id": "t1", "finish_reason": "tool_calls"})
    call = machine.get("t1")
    assert call is not None
    assert call.status == "running"
    assert call.args == []


def test_none_is_a_valid_result_and_error_value() -> None:
    machine = machine_in_every_state()
    machine.apply({"type": "result", "id": "r", "result": None})
    machine.apply({"type": "error", "id": "t1", "error": None})
    r, t1 = machine.get("r"), machine.get("t1")
    assert r is not None
    assert t1 is not None
    assert (r.status, r.result) == ("done", None)
    assert (t1.status, t1.error) == ("error", None)


# --------------------------------------------------------------------------------------
# Models versus mappings.
# --------------------------------------------------------------------------------------

MODEL_BAD: list[tuple[str, type[Any], dict[str, Any]]] = [
    ("start-empty-id", Start, {"id": "", "name": "n"}),
    ("start-int-id", Start, {"id": 1, "name": "n"}),
    ("start-none-name", Start, {"id": "t1", "name": None}),
    ("start-missing-name", Start, {"id": "t1"}),
    ("delta-bytes", Delta, {"id": "t1", "argsTextDelta": b"x"}),
    ("delta-missing", Delta, {"id": "t1"}),
    ("ready-missing-id", Ready, {}),
    ("end-ok-str", End, {"ok": "yes"}),
]


@pytest.mark.parametrize(
    ("model", "fields"), [m[1:] for m in MODEL_BAD], ids=[m[0] for m in MODEL_BAD]
)
def test_same_shapes_cannot_be_built_as_models_and_fail_as_mappings(
    model: type[Any], fields: dict[str, Any]
) -> None:
    # A model cannot hold the malformed shape (pydantic refuses it; strict, no coercion)...
    with pytest.raises(ValidationError):
        model(**fields)
    # ...and the same shape as a mapping is an InvalidEvent.
    kind = model.model_fields["type"].default
    machine = machine_in_every_state()
    before = machine.list()
    with pytest.raises(InvalidEvent, match=f"invalid '{kind}' event"):
        machine.apply({"type": kind, **fields})
    assert machine.list() == before


@pytest.mark.parametrize(
    ("mapping", "model"),
    [
        ({"type": "start", "id": "x", "name": "n"}, Start(id="x", name="n")),
        ({"type": "delta", "id": "x", "argsTextDelta": "{"}, Delta(id="x", argsTextDelta="{")),
        ({"type": "delta", "id": "x", "args_text_delta": "{"}, Delta(id="x", argsTextDelta="{")),
        ({"type": "ready", "id": "x"}, Ready(id="x")),
        ({"type": "end"}, End()),
        ({"type": "end", "ok": False, "reason": "length"}, End(ok=False, reason="length")),
    ],
)
def test_mapping_and_model_parse_to_the_same_event(mapping: dict[str, Any], model: Any) -> None:
    assert parse_event(mapping) == model
    assert parse_event(model) is model


def test_models_are_frozen_and_strict() -> None:
    start = Start(id="t1", name="n")
    with pytest.raises(ValidationError):
        start.id = "t2"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        Start(id="t1", name=5)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------
# A plain dict (checked by a hand-written fast path) and any other mapping (validated by
# pydantic) must be treated the same, whatever their content.
# --------------------------------------------------------------------------------------


class Text(str):
    """A str subclass: the fast path checks ``type(x) is str``, validation does not."""


FIELD_NAMES = st.sampled_from(
    ["type", "id", "name", "argsTextDelta", "args_text_delta", "result", "error", "ok", "reason"]
)
FIELD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1, 1),
    st.sampled_from(["", "t1", "t2", "{", "[1]", "start", "delta", "ready", "result", "error"]),
    st.sampled_from(["end", "START", Text("t1"), Text("start"), b"t1"]),
    st.lists(st.integers(), max_size=1),
)
MAPPINGS = st.dictionaries(FIELD_NAMES, FIELD_VALUES, max_size=5)


def outcome(events: list[dict[str, Any]], wrap: Any) -> tuple[Any, ...]:
    reasons: list[IgnoreReason] = []
    machine = tool_call_streaming_state_machine(on_ignored=lambda e, r: reasons.append(r))
    results: list[Any] = []
    for event in events:
        try:
            machine.apply(wrap(event))
            results.append("applied")
        except InvalidEvent as exc:
            results.append(("invalid", str(exc).split(":")[0]))
    return results, reasons, machine.list(), machine.end


@settings(max_examples=300, deadline=None)
@given(st.lists(MAPPINGS, max_size=6))
def test_dict_fast_path_agrees_with_general_validation(events: list[dict[str, Any]]) -> None:
    assert outcome(events, dict) == outcome(events, types.MappingProxyType)


@pytest.mark.parametrize("model", [Start, Delta, Ready, Result, Error])
def test_a_model_constructed_with_a_bogus_type_is_an_invalid_event(model: Any) -> None:
    machine = tool_call_streaming_state_machine()
    event = model.model_construct(type="bogus", id="a", name="f", args_text_delta="x")
    with pytest.raises(InvalidEvent, match="bogus"):
        machine.apply(event)
    assert machine.list() == []


@pytest.mark.parametrize("model", [Start, Delta, Ready, Result, Error])
@pytest.mark.parametrize("bad_type", [["start"], {"start": 1}, {1, 2}, None, 3])
def test_a_model_constructed_with_an_unhashable_or_non_string_type_is_an_invalid_event(
    model: Any, bad_type: object
) -> None:
    machine = tool_call_streaming_state_machine()
    event = model.model_construct(type=bad_type, id="a", name="f", args_text_delta="x")
    with pytest.raises(InvalidEvent):
        machine.apply(event)
    assert machine.list() == []
