"""The AI SDK UI message stream against the real ``ai`` package (``tests/js``), both ways.

Reading: streams the SDK itself wrote (``streamText`` + its mock model) through
``AISDKAdapter``. Writing: the encoder's output read by the SDK's own parser, chunk schema
and chat state. Skips without Node / ``npm ci`` (fails instead when
``TOOLCALL_TRACKER_REQUIRE_NODE`` is set, as in CI).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _ai_sdk_node import consume, produced

from toolcall_tracker import Status, tool_call_streaming_state_machine
from toolcall_tracker.adapters import AISDKAdapter, apply_stream
from toolcall_tracker.adapters.ai_sdk import (
    AISDKApprovalPending,
    AISDKStepReset,
    AISDKToolError,
)


@pytest.fixture(scope="module")
def streams(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return produced(tmp_path_factory.mktemp("ai-sdk-streams"))


def read(text: str) -> Any:
    machine = tool_call_streaming_state_machine()
    apply_stream(machine, text.splitlines(), AISDKAdapter())
    return machine


def test_the_sdk_wrote_every_scenario(streams: dict[str, str]) -> None:
    assert set(streams) >= {"execute", "approval", "generator", "repair", "multi_step"}
    for name, text in streams.items():
        assert text.rstrip().endswith("data: [DONE]"), name


def test_an_executed_tool_is_done_with_the_servers_output(streams: dict[str, str]) -> None:
    machine = read(streams["execute"])
    (call,) = machine.list()
    assert (call.id, call.status, call.args) == ("call_1", Status.DONE, {"city": "Paris"})
    assert call.result == {"city": "Paris", "degrees": 21}
    assert machine.end.ok


def test_a_tool_without_execute_is_running_for_the_client(streams: dict[str, str]) -> None:
    (call,) = read(streams["no_execute"]).list()
    assert (call.status, call.args) == (Status.RUNNING, {"question": "Proceed?"})


def test_a_call_awaiting_approval_never_looks_running(streams: dict[str, str]) -> None:
    assert "tool-approval-request" in streams["approval"]
    machine = read(streams["approval"])
    (call,) = machine.list()
    assert call.status == Status.ERROR  # it never ran: the decision is the next request's
    assert isinstance(call.error, AISDKApprovalPending)
    assert call.error.approval_id.startswith("aitxt-")
    assert call.args_text == "{\"path\":\"/tmp/x\"}"


def test_a_generator_tool_has_its_final_output(streams: dict[str, str]) -> None:
    (call,) = read(streams["generator"]).list()
    assert (call.status, call.result) == (Status.DONE, {"done": 3})


@pytest.mark.parametrize(
    ("name", "args", "text"),
    [
        ("defaults", {"q": "x", "limit": 10}, '{"q":"x","limit":10}'),  # schema defaults
        ("repair", {"city": "Paris"}, '{"city":"Paris"}'),  # repairToolCall
        # JavaScript rounded the integer: the streamed, exact digits are kept
        ("big_int", {"id": 12345678901234567891}, '{"id":12345678901234567891}'),
        ("text_input", 'SELECT "a" FROM t;', '"SELECT \\"a\\" FROM t;"'),  # one JSON string
    ],
)
def test_the_stated_input_counts(streams: dict[str, str], name: str, args: Any, text: str) -> None:
    (call,) = read(streams[name]).list()
    assert call.status == Status.DONE
    assert (call.args, call.args_text) == (args, text)


def test_every_step_of_a_multi_step_run(streams: dict[str, str]) -> None:
    machine = read(streams["multi_step"])
    assert [(c.id, c.status, c.args) for c in machine.list()] == [
        ("call_s1", Status.DONE, {"city": "Oslo"}),
        ("call_s2", Status.DONE, {"city": "Rome"}),
    ]
    assert machine.end.ok


def test_a_length_cut_off_abandons_the_streaming_call(streams: dict[str, str]) -> None:
    machine = read(streams["length"])
    (call,) = machine.list()
    assert call.status == Status.ERROR and call.args_text == '{"city":"Par'
    assert (machine.end.ok, machine.end.reason) == (False, "length")


def test_an_abort_ends_the_turn_not_ok(streams: dict[str, str]) -> None:
    machine = read(streams["abort"])
    (call,) = machine.list()
    assert call.status == Status.ERROR
    assert (machine.end.ok, machine.end.reason) == (False, "abort")


def test_a_failing_tool_is_an_error(streams: dict[str, str]) -> None:
    (call,) = read(streams["tool_error"]).list()
    assert isinstance(call.error, AISDKToolError) and call.error.message == "Error: boom"


# -- parts the mock model cannot make the SDK write: as its chunk schema defines them --


def _parts(*parts: dict[str, Any]) -> Any:
    machine = tool_call_streaming_state_machine()
    apply_stream(machine, list(parts), AISDKAdapter())
    return machine


CALL = [
    {"type": "start-step"},
    {"type": "tool-input-start", "toolCallId": "c1", "toolName": "rm"},
    {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"p":1}'},
    {"type": "tool-input-available", "toolCallId": "c1", "toolName": "rm", "input": {"p": 1}},
]


def test_a_reset_step_retracts_its_calls_and_they_never_run() -> None:
    machine = _parts(*CALL, {"type": "reset-step"}, {"type": "finish-step"}, {"type": "finish"})
    (call,) = machine.list()
    assert isinstance(call.error, AISDKStepReset)


def test_a_call_is_ready_only_at_the_end_of_its_step() -> None:
    machine = tool_call_streaming_state_machine()
    adapter = AISDKAdapter()
    for part in CALL:
        adapter.write(part, machine)
    assert machine.status("c1") == Status.PENDING  # an approval request may still come
    adapter.write({"type": "finish-step"}, machine)
    assert machine.status("c1") == Status.RUNNING


def test_an_approved_call_run_by_the_server_is_done() -> None:
    approval = {"type": "tool-approval-request", "approvalId": "a1", "toolCallId": "c1"}
    output = {"type": "tool-output-available", "toolCallId": "c1", "output": "ok"}
    machine = _parts(*CALL, approval, {"type": "finish-step"}, output, {"type": "finish"})
    assert machine.get("c1").result == "ok"


def test_a_denied_call_never_ran() -> None:
    approval = {"type": "tool-approval-request", "approvalId": "a1", "toolCallId": "c1"}
    denied = {"type": "tool-output-denied", "toolCallId": "c1"}
    machine = _parts(*CALL, approval, {"type": "finish-step"}, denied, {"type": "finish"})
    call = machine.get("c1")
    assert isinstance(call.error, AISDKToolError)
    assert call.error.part_type == "tool-output-denied"


def test_the_sdk_reads_its_own_streams(streams: dict[str, str], tmp_path: Path) -> None:
    seen = consume(streams["approval"])
    assert seen["rejected"] == [] and seen["errors"] == []
    (tool,) = [p for p in seen["parts"] if p["type"].startswith("tool-")]
    assert tool["state"] == "approval-requested"
