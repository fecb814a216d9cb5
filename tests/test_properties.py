"""Property tests: calls are independent of each other, whatever the interleaving and noise.

Each generated call has an id, a tool name, a JSON argument value whose text is cut into
random fragments, and an outcome. Its own event sequence gets noise injected (duplicate,
early, late events); the sequences of all calls are then interleaved at random, keeping
each call's own order, and unknown-id events are sprinkled in. The final state of every
call must equal what a fresh machine reaches when fed that call's events alone, and the
events of one call must never change another.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolcall_tracker import (
    IgnoreReason,
    IncompleteArguments,
    InvalidArguments,
    ToolCall,
    ToolCallStateMachine,
    tool_call_streaming_state_machine,
)

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)

OUTCOMES = ("pending", "running", "done", "error_before_ready", "error_after_ready", "invalid")
CALL_IDS = st.text(alphabet="abcxyz0123_-", min_size=1, max_size=6)


@st.composite
def fragments_of(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut at random points, sometimes with empty fragments in between."""
    cuts = draw(st.lists(st.integers(min_value=0, max_value=len(text)), max_size=8))
    points = sorted(set(cuts) | {0, len(text)})
    parts = [text[a:b] for a, b in itertools.pairwise(points)]
    if draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), "")
    return parts or [""]


@dataclass
class CallSpec:
    id: str
    name: str
    value: Any
    fragments: list[str]
    outcome: str
    result: Any = None
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.fragments)


def clean_events(spec: CallSpec) -> list[dict[str, Any]]:
    cid = spec.id
    events: list[dict[str, Any]] = [{"type": "start", "id": cid, "name": spec.name}]
    events += [{"type": "delta", "id": cid, "argsTextDelta": f} for f in spec.fragments]
    if spec.outcome == "error_before_ready":
        events.append({"type": "error", "id": cid, "error": {"why": "cancelled", "id": cid}})
    elif spec.outcome != "pending":
        events.append({"type": "ready", "id": cid})
    if spec.outcome == "done":
        events.append({"type": "result", "id": cid, "result": spec.result})
    elif spec.outcome == "error_after_ready":
        events.append({"type": "error", "id": cid, "error": "tool crashed"})
    return events


NOISE_KINDS = ("duplicate", "early", "late")


@st.composite
def noisy(
    draw: st.DrawFn, events: list[dict[str, Any]], outcome: str, allow_dup_delta: bool
) -> list[Any]:
    """``events`` with duplicate, early (before start) and late (after finishing) events."""
    events = list(events)
    cid = events[0]["id"]
    finished = outcome not in ("pending", "running")
    kinds = draw(
        st.lists(st.sampled_from(NOISE_KINDS if finished else NOISE_KINDS[:2]), max_size=3)
    )
    # Duplicates first, so that only the call's real events are ever duplicated.
    for kind in sorted(kinds, key=NOISE_KINDS.index):
        if kind == "duplicate":
            choices = [i for i, e in enumerate(events) if allow_dup_delta or e["type"] != "delta"]
            i = draw(st.sampled_from(choices))
            # Re-send it later; re-sent ready/result/error go after everything so that they
            # are ignorable whatever state the call is in by then.
            j = draw(st.integers(i + 1, len(events)))
            if events[i]["type"] in ("ready", "result", "error"):
                j = len(events)
            events.insert(j, dict(events[i]))
        elif kind == "early":
            stray = draw(st.sampled_from(early_or_late(cid)))
            start = next(i for i, e in enumerate(events) if e["type"] == "start")
            events.insert(draw(st.integers(0, start)), stray)
        else:
            events.append(draw(st.sampled_from(early_or_late(cid))))
    # Model instances and mappings are interchangeable: send some as models.
    return [draw(st.sampled_from([e, as_model(e)])) for e in events]


def early_or_late(cid: str) -> list[dict[str, Any]]:
    return [
        {"type": "delta", "id": cid, "argsTextDelta": "]]garbage"},
        {"type": "ready", "id": cid},
        {"type": "result", "id": cid, "result": "stray result"},
        {"type": "error", "id": cid, "error": "stray error"},
    ]


def as_model(event: dict[str, Any]) -> Any:
    from toolcall_tracker import parse_event

    return parse_event(event)


@st.composite
def call_specs(draw: st.DrawFn, allow_dup_delta: bool) -> list[CallSpec]:
    ids = draw(st.lists(CALL_IDS, min_size=1, max_size=5, unique=True))
    specs = []
    for cid in ids:
        value = draw(JSON_VALUES)
        outcome = draw(st.sampled_from(OUTCOMES))
        text = json.dumps(value, ensure_ascii=draw(st.booleans()))
        if outcome == "invalid":
            text = text + draw(st.sampled_from([",", "}", " x", "NaN", "\u00a0"]))
        spec = CallSpec(
            id=cid,
            name=draw(st.text(max_size=5)),
            value=value,
            fragments=draw(fragments_of(text)),
            outcome=outcome,
            result=draw(JSON_SCALARS),
        )
        spec.events = draw(noisy(clean_events(spec), outcome, allow_dup_delta))
        specs.append(spec)
    return specs


@st.composite
def interleaved(draw: st.DrawFn, allow_dup_delta: bool) -> tuple[list[CallSpec], list[Any], bool]:
    specs = draw(call_specs(allow_dup_delta))
    labels = [i for i, spec in enumerate(specs) for _ in spec.events]
    order = draw(st.permutations(labels))
    cursors = [0] * len(specs)
    stream: list[Any] = []
    for i in order:
        stream.append(specs[i].events[cursors[i]])
        cursors[i] += 1
    assert cursors == [len(spec.events) for spec in specs]
    unknown = st.sampled_from(
        [
            {"type": "delta", "id": "unknown-1", "argsTextDelta": "{"},
            {"type": "ready", "id": "unknown-2"},
            {"type": "result", "id": "unknown-3", "result": 1},
            {"type": "error", "id": "unknown-4", "error": "x"},
        ]
    )
    for stray in draw(st.lists(unknown, max_size=4)):
        stream.insert(draw(st.integers(0, len(stream))), stray)
    with_end = draw(st.booleans())
    return specs, stream, with_end


def event_id(event: Any) -> str:
    return event["id"] if isinstance(event, dict) else str(event.id)


def run_alone(events: list[Any], with_end: bool) -> tuple[ToolCall | None, list[Any]]:
    hook: list[Any] = []
    machine = tool_call_streaming_state_machine(on_ignored=lambda e, r: hook.append((e, r)))
    for event in events:
        machine.apply(event)
    if with_end:
        machine.apply({"type": "end", "reason": "stop"})
    calls = machine.list()
    assert len(calls) <= 1
    return (calls[0] if calls else None), hook


def snapshot_all(machine: ToolCallStateMachine) -> dict[str, ToolCall]:
    return {call.id: call for call in machine.list()}


@SETTINGS
@given(interleaved(allow_dup_delta=True))
def test_each_call_ends_as_it_would_alone(case: tuple[list[CallSpec], list[Any], bool]) -> None:
    specs, stream, with_end = case
    hook: list[Any] = []
    machine = tool_call_streaming_state_machine(on_ignored=lambda e, r: hook.append((e, r)))
    for event in stream:
        before = snapshot_all(machine)
        machine.apply(event)
        after = snapshot_all(machine)
        touched = event_id(event)
        # Other calls are never affected, not even transiently.
        assert {k: v for k, v in after.items() if k != touched} == {
            k: v for k, v in before.items() if k != touched
        }
    if with_end:
        machine.apply({"type": "end", "reason": "stop"})

    starts: list[str] = []
    for event in stream:
        if event_id(event) not in starts and (
            (event["type"] if isinstance(event, dict) else event.type) == "start"
        ):
            starts.append(event_id(event))
    assert [call.id for call in machine.list()] == starts

    for spec in specs:
        alone, alone_hook = run_alone(spec.events, with_end)
        assert machine.get(spec.id) == alone
        # The same events of this call were ignored, for the same reasons.
        mine = [(e, r) for e, r in hook if event_id(e) == spec.id]
        assert mine == alone_hook
    # Unknown ids never create calls and are reported as such.
    assert not any(call.id.startswith("unknown-") for call in machine.list())
    strays = [r for e, r in hook if event_id(e).startswith("unknown-")]
    assert strays == [IgnoreReason.UNKNOWN_ID] * sum(
        event_id(e).startswith("unknown-") for e in stream
    )


@SETTINGS
@given(interleaved(allow_dup_delta=False))
def test_final_state_follows_the_protocol(case: tuple[list[CallSpec], list[Any], bool]) -> None:
    """With only ignorable noise, each call ends exactly where its clean events lead."""
    specs, stream, with_end = case
    machine = tool_call_streaming_state_machine()
    for event in stream:
        machine.apply(event)
    if with_end:
        machine.apply({"type": "end", "reason": "stop"})

    for spec in specs:
        call = machine.get(spec.id)
        assert call is not None
        assert call.name == spec.name
        assert call.args_text == spec.text
        outcome = spec.outcome
        if outcome == "pending":
            if with_end:
                assert call.status == "error"
                assert isinstance(call.error, IncompleteArguments)
            else:
                assert call.status == "pending"
                assert call.error is None
            assert call.args is None
        elif outcome == "error_before_ready":
            assert call.status == "error"
            assert call.error == {"why": "cancelled", "id": spec.id}
            assert call.args is None
        elif outcome == "invalid":
            assert call.status == "error"
            assert isinstance(call.error, InvalidArguments)
            assert call.args is None
        else:
            assert call.args == spec.value
            expected = {"running": "running", "done": "done", "error_after_ready": "error"}
            assert call.status == expected[outcome]
            if outcome == "done":
                assert call.result == spec.result
            if outcome == "error_after_ready":
                assert call.error == "tool crashed"


@SETTINGS
@given(st.lists(st.text(max_size=20), max_size=30), st.booleans())
def test_accumulation_equals_join_of_fragments(fragments: list[str], read_between: bool) -> None:
    machine = tool_call_streaming_state_machine()
    machine.apply({"type": "start", "id": "t1", "name": "n"})
    for i, fragment in enumerate(fragments):
        machine.apply({"type": "delta", "id": "t1", "args_text_delta": fragment})
        if read_between:  # reading a snapshot mid-stream must not disturb accumulation
            call = machine.get("t1")
            assert call is not None
            assert call.args_text == "".join(fragments[: i + 1])
    call = machine.get("t1")
    assert call is not None
    assert call.args_text == "".join(fragments)
    assert call.status == "pending"
    machine.apply({"type": "ready", "id": "t1"})
    call = machine.get("t1")
    assert call is not None
    assert call.args_text == "".join(fragments)
    assert call.status in ("running", "error")


@SETTINGS
@given(JSON_VALUES, st.data())
def test_any_json_value_round_trips_through_fragments(value: Any, data: st.DataObject) -> None:
    text = json.dumps(value)
    fragments = data.draw(fragments_of(text))
    machine = tool_call_streaming_state_machine()
    machine.apply({"type": "start", "id": "t1", "name": "n"})
    for fragment in fragments:
        machine.apply({"type": "delta", "id": "t1", "argsTextDelta": fragment})
    machine.apply({"type": "ready", "id": "t1"})
    call = machine.get("t1")
    assert call is not None
    assert call.status == "running", call.error
    assert call.args == value
    assert call.args_text == text
