"""The stream's phases: ``STREAM`` has one full row per :class:`StreamPhase`.

Every phase must name, for every event type, either a :class:`StreamAction` or the
:class:`IgnoreReason` the event is ignored for, so the machine's cached row
(``_stream[kind]``) can never miss. The phase is a ``str`` enum, so the public table
still answers ``STREAM["open"]``; and the machine moves between the members themselves.
"""

from __future__ import annotations

import pytest

from toolcall_tracker import (
    Limits,
    ToolCallStateMachine,
    reducer,
    tool_call_streaming_state_machine,
)
from toolcall_tracker._reducer import STREAM, TRANSITIONS, IgnoreReason, StreamAction, StreamPhase

EVENT_TYPES = ("start", "delta", "ready", "result", "error", "end")


def test_stream_is_keyed_by_every_phase_and_nothing_else() -> None:
    assert list(STREAM) == list(StreamPhase)
    assert all(type(phase) is StreamPhase for phase in STREAM)


@pytest.mark.parametrize("phase", list(StreamPhase))
def test_every_phase_has_a_full_row(phase: StreamPhase) -> None:
    row = STREAM[phase]
    assert tuple(row) == EVENT_TYPES
    for kind, step in row.items():
        assert type(step) in (StreamAction, IgnoreReason), (phase, kind, step)


def test_stream_rows_have_the_columns_of_transitions() -> None:
    for row in TRANSITIONS.values():
        assert tuple(row) == EVENT_TYPES


PHASE_NAMES = [("OPEN", "open"), ("FULL", "full"), ("ENDED", "ended")]


@pytest.mark.parametrize(("name", "value"), PHASE_NAMES)
def test_phases_still_compare_as_their_strings(name: str, value: str) -> None:
    phase = StreamPhase[name]
    assert phase == value
    assert str(phase) == value
    assert StreamPhase(value) is phase
    assert reducer.STREAM[value] is reducer.STREAM[phase]  # type: ignore[index]
    assert reducer.StreamPhase is StreamPhase


def phase_of(machine: ToolCallStateMachine) -> StreamPhase:
    return machine._phase


def test_machine_moves_through_the_phases() -> None:
    machine = tool_call_streaming_state_machine(limits=Limits(max_calls=1))
    assert phase_of(machine) is StreamPhase.OPEN
    machine.write_start("a", "f")
    assert phase_of(machine) is StreamPhase.FULL
    machine.write_delta("a", "{}")
    machine.write_ready("a")
    machine.write_result("a", 1)
    machine.forget("a")
    assert phase_of(machine) is StreamPhase.OPEN
    machine.write_end()
    assert phase_of(machine) is StreamPhase.ENDED
    assert machine._stream["start"] is IgnoreReason.TURN_ENDED


def test_a_machine_with_no_room_starts_full() -> None:
    machine = tool_call_streaming_state_machine(limits=Limits(max_calls=0))
    assert phase_of(machine) is StreamPhase.FULL
