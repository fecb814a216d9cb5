"""The seed examples of issue 2, verbatim, with mapping and model input."""

from __future__ import annotations

from typing import Any

import pytest

from toolcall_tracker import (
    Delta,
    Ready,
    Result,
    Start,
    Status,
    ToolCall,
    ToolCallStateMachine,
    tool_call_streaming_state_machine,
)

SEED_MAPPINGS_CAMEL: list[dict[str, Any]] = [
    {"type": "start", "id": "t1", "name": "search"},
    {"type": "delta", "id": "t1", "argsTextDelta": '{"q":'},
    {"type": "delta", "id": "t1", "argsTextDelta": '"hi"}'},
    {"type": "ready", "id": "t1"},
]
SEED_MAPPINGS_SNAKE: list[dict[str, Any]] = [
    {"type": "start", "id": "t1", "name": "search"},
    {"type": "delta", "id": "t1", "args_text_delta": '{"q":'},
    {"type": "delta", "id": "t1", "args_text_delta": '"hi"}'},
    {"type": "ready", "id": "t1"},
]
SEED_MODELS_CAMEL: list[Any] = [
    Start(id="t1", name="search"),
    Delta(id="t1", argsTextDelta='{"q":'),
    Delta(id="t1", argsTextDelta='"hi"}'),
    Ready(id="t1"),
]
SEED_MODELS_SNAKE: list[Any] = [
    Start(id="t1", name="search"),
    Delta(id="t1", args_text_delta='{"q":'),
    Delta(id="t1", args_text_delta='"hi"}'),
    Ready(id="t1"),
]

SEEDS = pytest.mark.parametrize(
    "events",
    [SEED_MAPPINGS_CAMEL, SEED_MAPPINGS_SNAKE, SEED_MODELS_CAMEL, SEED_MODELS_SNAKE],
    ids=["mapping-camel", "mapping-snake", "model-camel", "model-snake"],
)


def feed(events: list[Any]) -> ToolCallStateMachine:
    machine = tool_call_streaming_state_machine()
    for event in events:
        machine.apply(event)
    return machine


@SEEDS
def test_seed_walkthrough_reaches_running_with_args(events: list[Any]) -> None:
    machine = feed(events)
    call = machine.get("t1")
    assert call is not None
    assert call.status == "running"
    assert call.status is Status.RUNNING
    assert call.args == {"q": "hi"}
    assert call.args_text == '{"q":"hi"}'
    assert call.name == "search"
    assert call.id == "t1"
    assert call.result is None
    assert call.error is None


@SEEDS
def test_seed_intermediate_states(events: list[Any]) -> None:
    machine = tool_call_streaming_state_machine()
    assert machine.get("t1") is None
    machine.apply(events[0])
    call = machine.get("t1")
    assert call is not None
    assert (call.status, call.args_text, call.args) == ("pending", "", None)
    machine.apply(events[1])
    call = machine.get("t1")
    assert call is not None
    assert (call.status, call.args_text, call.args) == ("pending", '{"q":', None)
    machine.apply(events[2])
    call = machine.get("t1")
    assert call is not None
    assert (call.status, call.args_text, call.args) == ("pending", '{"q":"hi"}', None)


@pytest.mark.parametrize(
    "result_event",
    [{"type": "result", "id": "t1", "result": "x"}, Result(id="t1", result="x")],
    ids=["mapping", "model"],
)
def test_seed_result_for_pending_call_leaves_it_pending(result_event: Any) -> None:
    machine = tool_call_streaming_state_machine()
    machine.apply({"type": "start", "id": "t1", "name": "search"})
    machine.apply({"type": "delta", "id": "t1", "argsTextDelta": '{"q":'})
    before = machine.get("t1")
    machine.apply(result_event)
    after = machine.get("t1")
    assert after is not None
    assert after.status == "pending"
    assert after.result is None
    assert after == before


def test_all_four_input_forms_give_equal_snapshots() -> None:
    snapshots = [
        feed(events).get("t1")
        for events in (SEED_MAPPINGS_CAMEL, SEED_MAPPINGS_SNAKE, SEED_MODELS_CAMEL)
    ]
    assert snapshots[0] is not None
    assert snapshots[0] == snapshots[1] == snapshots[2]


def test_result_after_ready_is_done() -> None:
    machine = feed(SEED_MAPPINGS_CAMEL)
    machine.apply({"type": "result", "id": "t1", "result": {"hits": [1, 2]}})
    call = machine.get("t1")
    assert call is not None
    assert call.status == "done"
    assert call.result == {"hits": [1, 2]}
    assert call.args == {"q": "hi"}


def test_model_dump_by_alias_is_the_camel_case_wire_shape() -> None:
    call = feed(SEED_MAPPINGS_CAMEL).get("t1")
    assert call is not None
    dumped = call.model_dump(by_alias=True)
    assert dumped["argsText"] == '{"q":"hi"}'
    assert "args_text" not in dumped
    assert dumped == {
        "id": "t1",
        "name": "search",
        "argsText": '{"q":"hi"}',
        "args": {"q": "hi"},
        "status": "running",
        "result": None,
        "error": None,
    }
    plain = call.model_dump()
    assert plain["args_text"] == '{"q":"hi"}'
    assert "argsText" not in plain
    assert call.model_dump(mode="json", by_alias=True)["status"] == "running"


def test_tool_call_is_immutable() -> None:
    call = feed(SEED_MAPPINGS_CAMEL).get("t1")
    assert call is not None
    with pytest.raises(ValueError, match="frozen"):
        call.status = Status.DONE  # type: ignore[misc]
    assert isinstance(call, ToolCall)


def test_snapshot_taken_earlier_does_not_change() -> None:
    machine = tool_call_streaming_state_machine()
    machine.apply(SEED_MAPPINGS_CAMEL[0])
    early = machine.get("t1")
    for event in SEED_MAPPINGS_CAMEL[1:]:
        machine.apply(event)
    assert early is not None
    assert early.status == "pending"
    assert early.args_text == ""


@pytest.mark.parametrize("status", list(Status))
def test_status_compares_equal_to_its_string(status: Status) -> None:
    assert status == status.value
    assert str(status) == status.value
    assert status.value in {"pending", "running", "done", "error"}
    others = {"pending", "running", "done", "error"} - {status.value}
    assert all(status != other for other in others)


def test_status_vocabulary_is_exactly_four_strings() -> None:
    assert [s.value for s in Status] == ["pending", "running", "done", "error"]


def test_list_is_in_start_order_not_id_or_readiness_order() -> None:
    machine = tool_call_streaming_state_machine()
    for call_id in ["zeta", "alpha", "mid"]:
        machine.apply({"type": "start", "id": call_id, "name": f"tool_{call_id}"})
    # Make them ready in the reverse order, and finish one: the order must not move.
    for call_id in ["mid", "alpha", "zeta"]:
        machine.apply({"type": "delta", "id": call_id, "argsTextDelta": "{}"})
        machine.apply({"type": "ready", "id": call_id})
    machine.apply({"type": "result", "id": "alpha", "result": 1})
    # A duplicate start must not move a call to the end either.
    machine.apply({"type": "start", "id": "zeta", "name": "again"})
    calls = machine.list()
    assert [c.id for c in calls] == ["zeta", "alpha", "mid"]
    assert [c.name for c in calls] == ["tool_zeta", "tool_alpha", "tool_mid"]
    assert [c.status for c in calls] == ["running", "done", "running"]


def test_get_unknown_id_is_none_and_list_starts_empty() -> None:
    machine = tool_call_streaming_state_machine()
    assert machine.list() == []
    assert machine.get("nope") is None
    machine.apply({"type": "delta", "id": "nope", "argsTextDelta": "x"})
    assert machine.get("nope") is None
    assert machine.list() == []
