"""The AI SDK UI message stream against the real ``ai`` package (``tests/js``), both ways.

Reading: streams the SDK itself wrote (``streamText`` + its mock model) through
``AISDKAdapter``. Writing: the encoder's output read by the SDK's own parser, chunk schema
and chat state. Skips without Node / ``npm ci`` (fails instead when
``TOOLCALL_TRACKER_REQUIRE_NODE`` is set, as in CI).
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from _ai_sdk_node import JS, consume, need_node, produced
from toolcall_tracker import (
    ApprovalDenied,
    Delta,
    End,
    Error,
    Ready,
    Result,
    Start,
    Status,
    tool_call_streaming_state_machine,
)
from toolcall_tracker.adapters import (
    SSE_DONE,
    UI_MESSAGE_STREAM_HEADERS,
    AISDKAdapter,
    AISDKEncoder,
    AISDKListener,
    AISDKStreamIds,
    apply_stream,
    to_sse,
)
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
    assert call.args_text == '{"path":"/tmp/x"}'


@pytest.mark.parametrize("ready", ["step", "input"])
def test_approval_holds_one_call_while_the_next_runs(streams: dict[str, str], ready: Any) -> None:
    machine = tool_call_streaming_state_machine()
    adapter = AISDKAdapter(ready=ready)
    seen: list[tuple[str, Status | None]] = []
    for line in streams["approval_and_run"].splitlines():
        adapter.write(line, machine)
        seen.append(("call_rm", machine.status("call_rm")))
    adapter.finish(machine)
    assert ("call_rm", Status.RUNNING) not in seen  # never, at any point of the stream
    assert isinstance(machine.get("call_rm").error, AISDKApprovalPending)
    assert machine.get("call_ls").result == ["y"]


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
    assert call.status == Status.ERROR
    assert call.args_text == '{"city":"Par'
    assert (machine.end.ok, machine.end.reason) == (False, "length")


def test_an_abort_ends_the_turn_not_ok(streams: dict[str, str]) -> None:
    machine = read(streams["abort"])
    (call,) = machine.list()
    assert call.status == Status.ERROR
    assert (machine.end.ok, machine.end.reason) == (False, "abort")


def test_a_failing_tool_is_an_error(streams: dict[str, str]) -> None:
    (call,) = read(streams["tool_error"]).list()
    assert isinstance(call.error, AISDKToolError)
    assert call.error.message == "Error: boom"


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
    assert machine.status("c1") == Status.PENDING  # a reset-step may still retract it
    adapter.write({"type": "start-step"}, machine)  # the next step: this one stands
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


def test_the_sdk_reads_its_own_streams(streams: dict[str, str]) -> None:
    seen = consume(streams["approval"])
    assert seen["rejected"] == []
    assert seen["errors"] == []
    (tool,) = [p for p in seen["parts"] if p["type"].startswith("tool-")]
    assert tool["state"] == "approval-requested"


# -- the encoder, read by the SDK ---------------------------------------------------------


def called(call_id: str, name: str, text: str = "{}") -> list[Any]:
    """The events of one call whose arguments ``text`` streamed whole: start, delta, ready."""
    return [Start(id=call_id, name=name), Delta(id=call_id, argsTextDelta=text), Ready(id=call_id)]


def sse(parts: list[dict[str, Any]]) -> str:
    return "".join(to_sse(part) for part in parts) + SSE_DONE


def encoded(events: list[Any], encoder: AISDKEncoder | None = None) -> list[dict[str, Any]]:
    encoder = encoder or AISDKEncoder()
    return encoder.start() + [part for event in events for part in encoder.encode(event)]


def written(encoder: AISDKEncoder, events: list[Any]) -> list[dict[str, Any]]:
    return [part for event in events for part in encoder.encode(event)]


def tools(seen: dict[str, Any]) -> list[dict[str, Any]]:
    assert seen["rejected"] == [], seen["rejected"]  # no chunk the schema rejects
    return [part for part in seen["parts"] if part["type"].startswith("tool-")]


def test_a_turn_with_a_result_and_a_failure() -> None:
    seen = consume(
        sse(
            encoded(
                [
                    *called("a", "weather", '{"city":"Oslo"}'),
                    *called("b", "weather"),
                    Result(id="a", result={"degrees": 3}),
                    Error(id="b", error="no city"),
                    End(ok=True, reason="tool_calls"),
                ]
            )
        )
    )
    assert [(t["toolCallId"], t["state"]) for t in tools(seen)] == [
        ("a", "output-available"),
        ("b", "output-error"),
    ]
    assert tools(seen)[0]["output"] == {"degrees": 3}
    assert (seen["finishReason"], seen["errors"]) == ("tool-calls", [])


def test_a_length_cut_off_is_a_finish_and_later_outputs_still_show() -> None:
    encoder = AISDKEncoder()
    parts = encoded(
        [
            *called("a", "f"),
            Start(id="b", name="f"),
            Delta(id="b", argsTextDelta='{"x":'),
            End(ok=False, reason="length"),
            Result(id="a", result="late"),  # a tool that finishes after the cut-off
        ],
        encoder,
    )
    assert "error" not in [part["type"] for part in parts]
    seen = consume(sse(parts))
    assert (seen["finishReason"], seen["errors"]) == ("length", [])
    assert [(t["toolCallId"], t["state"]) for t in tools(seen)] == [
        ("a", "output-available"),
        ("b", "output-error"),
    ]


def test_a_failed_turn_is_an_error_for_the_chat() -> None:
    seen = consume(sse(encoded([End(ok=False, reason="upstream failed")])))
    assert "upstream failed" in seen["errors"]  # the chat goes to status error


def test_approval_parts_as_the_chat_shows_them() -> None:
    encoder = AISDKEncoder()
    events = called("a", "rm") + called("b", "rm")
    parts = encoded(events, encoder)
    parts += encoder.approval_request("a", "approval-a")
    parts += encoder.approval_request("b", "approval-b")
    parts += encoder.encode(
        Error(id="b", error=ApprovalDenied(message="no", tool="rm", reason="no"))
    )
    parts += encoder.encode(End(ok=True, reason="tool_calls"))
    seen = consume(sse(parts))
    a, b = tools(seen)
    assert (a["state"], a["approval"]["id"]) == ("approval-requested", "approval-a")
    assert b["state"] == "output-denied"


def test_steps_keep_every_call_apart_even_with_the_same_minted_id() -> None:
    encoder = AISDKEncoder()
    turn = [
        Start(id="ollama-call-0", name="f"),
        Delta(id="ollama-call-0", argsTextDelta="{}"),
        Ready(id="ollama-call-0"),
        Result(id="ollama-call-0", result=1),
    ]
    parts = encoded(turn, encoder)
    parts += encoder.next_step(End(ok=True, reason="tool_calls"))
    parts += [part for event in turn[:3] for part in encoder.encode(event)]
    parts += encoder.encode(Result(id="ollama-call-0", result=2))
    parts += encoder.encode(End(ok=True, reason="stop"))
    seen = consume(sse(parts))
    assert [(t["toolCallId"], t["output"]) for t in tools(seen)] == [
        ("ollama-call-0", 1),
        ("ollama-call-0~1", 2),
    ]
    assert [p["type"] for p in seen["parts"]].count("step-start") == 1
    assert seen["finishReason"] == "stop"


def test_resumed_outcomes_continue_the_message() -> None:
    encoder = AISDKEncoder()
    events = called("a", "rm") + called("b", "rm")
    first = encoded(events, encoder) + encoder.approval_request("a", "x")
    first += encoder.approval_request("b", "y") + encoder.encode(End(ok=True))
    message = {"id": "m1", "role": "assistant", "parts": consume(sse(first))["parts"]}
    # the decided calls, as runner.resume returns them: a approved and run, b denied
    machine = tool_call_streaming_state_machine()
    for event in called("a", "rm") + called("b", "rm"):
        machine.apply(event)
    machine.apply(Result(id="a", result="removed"))
    machine.apply(Error(id="b", error=ApprovalDenied(message="denied", tool="rm", reason="no")))
    second = AISDKEncoder()
    parts = second.start() + second.outcomes(machine.list()) + second.encode(End(ok=True))
    seen = consume(sse(parts), message)
    a, b = tools(seen)
    assert (a["state"], a["output"]) == ("output-available", "removed")
    assert b["state"] == "output-denied"


def test_the_headers_are_the_sdks() -> None:
    node = need_node()
    script = "import('ai').then(m => console.log(JSON.stringify(m.UI_MESSAGE_STREAM_HEADERS)))"
    done = subprocess.run([node, "-e", script], cwd=JS, capture_output=True, check=True, timeout=60)
    assert json.loads(done.stdout) == dict(UI_MESSAGE_STREAM_HEADERS)


def test_the_listener_writes_approval_requests_for_running_calls() -> None:
    machine = tool_call_streaming_state_machine()
    listener = AISDKListener(machine)
    machine.subscribe(listener, fragments=True)
    for event in called("a", "rm"):
        machine.apply(event)
    listener.approval_request("a", "approval-a")
    listener.approval_request("nobody", "approval-x")  # no such call: nothing
    machine.apply(End(ok=True, reason="tool_calls"))
    seen = consume(sse([{"type": "start"}, *listener.take()]))
    (a,) = tools(seen)
    assert (a["state"], a["approval"]["id"]) == ("approval-requested", "approval-a")


def test_the_listener_keeps_steps_and_their_calls_apart() -> None:
    """Two turns through one response, minting the same id, as the encoder writes them."""
    turn = [*called("ollama-call-0", "f"), End(ok=True, reason="tool_calls")]
    first = tool_call_streaming_state_machine()
    listener = AISDKListener(first, steps=True)
    first.subscribe(listener, fragments=True)
    for event in turn:
        first.apply(event)
    first.apply(Result(id="ollama-call-0", result=1))
    second = tool_call_streaming_state_machine()
    listener = listener.next_step(second)
    second.subscribe(listener, fragments=True)
    for event in turn[:3]:
        second.apply(event)
    second.apply(Result(id="ollama-call-0", result=2))
    second.apply(End(ok=True, reason="stop"))
    listener.finish()
    parts = listener.take()
    seen = consume(sse([{"type": "start"}, *parts]))
    assert [(t["toolCallId"], t["output"]) for t in tools(seen)] == [
        ("ollama-call-0", 1),
        ("ollama-call-0~1", 2),
    ]
    assert [p["type"] for p in seen["parts"]].count("step-start") == 1
    assert seen["finishReason"] == "stop"
    # the same parts as the encoder's, step for step
    encoder = AISDKEncoder()
    expected = written(encoder, [*turn[:3], Result(id="ollama-call-0", result=1)])
    expected += encoder.next_step(turn[3])
    expected += written(encoder, [*turn[:3], Result(id="ollama-call-0", result=2)])
    assert parts == expected + encoder.encode(End(ok=True, reason="stop"))


@pytest.mark.parametrize("writer", ["encoder", "listener"])
def test_approvals_over_two_requests_keep_the_ids_of_every_step(writer: str) -> None:
    """Request 1: step 0 runs ``ollama-call-0``; step 1 mints the same id for a call that
    awaits approval (``ollama-call-0~1`` in the stream). Request 2 writes the decided call
    under that id, and a new turn minting it again takes a fresh one: the message the
    client continues keeps every call apart."""
    step0 = [*called("ollama-call-0", "ls"), Result(id="ollama-call-0", result=["a.txt"])]
    step1 = called("ollama-call-0", "rm")
    if writer == "encoder":
        encoder = AISDKEncoder()
        first = encoded(step0, encoder) + encoder.next_step(End(ok=True, reason="tool_calls"))
        first += written(encoder, step1)
        first += encoder.approval_request("ollama-call-0", "approval-1")
        first += encoder.encode(End(ok=True, reason="tool_calls"))
        carried = encoder.stream_ids().to_json()
    else:
        machine = tool_call_streaming_state_machine()
        listener = AISDKListener(machine, steps=True)
        machine.subscribe(listener, fragments=True)
        for event in [*step0, End(ok=True, reason="tool_calls")]:
            machine.apply(event)
        machine = tool_call_streaming_state_machine()
        listener = listener.next_step(machine)
        machine.subscribe(listener, fragments=True)
        for event in [*step1, End(ok=True, reason="tool_calls")]:
            machine.apply(event)
        listener.approval_request("ollama-call-0", "approval-1")
        listener.finish()
        first = [{"type": "start"}, *listener.take()]
        carried = listener.stream_ids().to_json()
    seen = consume(sse(first))
    assert [(t["toolCallId"], t["state"]) for t in tools(seen)] == [
        ("ollama-call-0", "output-available"),
        ("ollama-call-0~1", "approval-requested"),
    ]
    message = {"id": "m1", "role": "assistant", "parts": seen["parts"]}

    # request 2: the decided call, as runner.resume returns it (its own id), then a new turn
    decided = tool_call_streaming_state_machine()
    for event in [*step1, Result(id="ollama-call-0", result="removed")]:
        decided.apply(event)
    second = AISDKEncoder(continues=AISDKStreamIds.from_json(carried))
    parts = second.start() + second.outcomes(decided.list())
    parts += written(second, called("ollama-call-0", "ls"))
    parts += second.encode(Result(id="ollama-call-0", result=[]))
    parts += second.encode(End(ok=True, reason="stop"))
    seen = consume(sse(parts), message)
    assert [(t["toolCallId"], t["state"], t.get("output")) for t in tools(seen)] == [
        ("ollama-call-0", "output-available", ["a.txt"]),
        ("ollama-call-0~1", "output-available", "removed"),
        ("ollama-call-0~0", "output-available", []),
    ]
