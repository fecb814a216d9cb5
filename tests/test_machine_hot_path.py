"""The machine's fragment hot path does exactly what the table's APPEND does.

``ToolCallStateMachine.apply`` appends a well-formed fragment for a call with room for it
inline (the lines of ``_CallRecord.append``, to save a call per fragment), and
``write_delta`` calls ``_CallRecord.append``; everything else goes through the reducer's
table. These tests drive the same fragments through every route (a dict, a ``Delta``
model, ``write_delta``, and the reducer's table directly) and require the same outcome:
the same status, argument text, error and reports, at and around ``Limits.max_args_chars``,
for empty fragments, and after the call left ``pending``.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolcall_tracker import Delta, IgnoreReason, Limits, tool_call_streaming_state_machine
from toolcall_tracker._reducer import _LANE, TRANSITIONS, Action, _CallRecord, reduce
from toolcall_tracker.calls import Status
from toolcall_tracker.changes import ChangeListener

ROUTES = ("dict", "model", "write_delta", "table")


def _outcome(route: str, limit: int, fragments: list[str], ready_after: int | None) -> Any:
    """Drive ``fragments`` for call ``a`` through ``route``; what the call and reports are."""
    ignored: list[tuple[str, str]] = []
    machine = tool_call_streaming_state_machine(
        limits=Limits(max_args_chars=limit),
        on_ignored=lambda event, reason: ignored.append((type(event).__name__, str(reason))),
    )
    machine.write_start("a", "f")
    for index, text in enumerate(fragments):
        if index == ready_after:
            machine.write_ready("a")
        if route == "dict":
            machine.apply({"type": "delta", "id": "a", "argsTextDelta": text})
        elif route == "model":
            machine.apply(Delta(id="a", args_text_delta=text))
        elif route == "write_delta":
            machine.write_delta("a", text)
        else:  # the general path: validated, routed through the table
            machine._route("delta", "a", text, None)
    call = machine.get("a")
    assert call is not None
    error = call.error
    return (
        call.status,
        call.args_text,
        type(error).__name__,
        getattr(error, "received", None),
        [reason for _, reason in ignored],
    )


@settings(max_examples=200, deadline=None)
@given(
    limit=st.integers(min_value=0, max_value=80),
    fragments=st.lists(st.text(max_size=12), max_size=40),
    ready_after=st.none() | st.integers(min_value=0, max_value=40),
)
def test_every_route_appends_a_fragment_alike(
    limit: int, fragments: list[str], ready_after: int | None
) -> None:
    outcomes = {route: _outcome(route, limit, fragments, ready_after) for route in ROUTES}
    assert len({repr(outcome) for outcome in outcomes.values()}) == 1, outcomes


def test_the_table_sends_a_pending_calls_fragment_to_append() -> None:
    # The hot path stands for this one cell of the table; if it changes, so must they.
    assert TRANSITIONS[Status.PENDING]["delta"] is Action.APPEND
    record = _CallRecord("a", "f", 10)
    assert reduce(record, "delta", "a", "12345", Limits(max_args_chars=10)) is record
    assert record.args_text() == "12345"
    assert record.room() == 5


def test_a_call_that_left_pending_has_no_room_for_any_fragment() -> None:
    for finish, payload, reason in (
        ("ready", None, IgnoreReason.NOT_PENDING),
        ("error", "failed", IgnoreReason.ALREADY_FINISHED),
    ):
        record = _CallRecord("a", "f", 10)
        assert record.append("{}")
        reduce(record, finish, "a", payload)
        assert record.append("") is False  # even an empty fragment goes to the table
        assert reduce(record, "delta", "a", "") is reason


class _Fragments(ChangeListener):
    """A fragment listener: what the machine told it was appended."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def args_appended(self, call_id: str, text: str) -> None:
        self.seen.append(text)


@settings(max_examples=200, deadline=None)
@given(
    limit=st.integers(min_value=0, max_value=3000),
    fragments=st.lists(st.text(max_size=120), max_size=80),
    subscribe_at=st.none() | st.integers(min_value=0, max_value=80),
)
def test_the_fast_lane_refills_and_closes_for_a_fragment_listener(
    limit: int, fragments: list[str], subscribe_at: int | None
) -> None:
    # Past the lane's share (_LANE characters), across the limit, with a fragment listener
    # subscribed part way: the text, the outcome and the listener's view match a model.
    machine = tool_call_streaming_state_machine(limits=Limits(max_args_chars=limit))
    listener = _Fragments()
    machine.write_start("a", "f")
    kept: list[str] = []
    told: list[str] = []
    too_large = False
    for index, text in enumerate(fragments):
        if index == subscribe_at:
            machine.subscribe(listener, fragments=True)
        machine.write_delta("a", text)
        if too_large:
            continue
        if sum(map(len, kept)) + len(text) > limit:
            too_large = True
            continue
        kept.append(text)
        if subscribe_at is not None and index >= subscribe_at:
            told.append(text)
    call = machine.get("a")
    assert call is not None
    if too_large:
        assert call.status is Status.ERROR
        assert type(call.error).__name__ == "ArgumentsTooLarge"
    else:
        assert call.status is Status.PENDING
        assert call.args_text == "".join(kept)
    assert listener.seen == told


def test_a_call_with_many_tiny_fragments_keeps_few_parts() -> None:
    # The lane bounds the fragments kept between two coalescing checks.
    machine = tool_call_streaming_state_machine()
    machine.write_start("a", "f")
    for _ in range(100_000):
        machine.write_delta("a", "x")
    record = machine._calls["a"]
    assert len(record.parts) <= 2 * _LANE + 64
    assert machine.args_text("a") == "x" * 100_000
