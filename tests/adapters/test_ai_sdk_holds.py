"""AISDKAdapter's holding rules as a property: whatever the parts, a call that awaits
approval, or whose step was retracted, never looks ``running`` to a runner (with the
default ``ready="step"``, no call of the current step does: a ``reset-step`` may retract
it until the next ``start-step``), and a retracted call fails with ``AISDKStepReset``
whatever its state; and a call the adapter makes ready always carries the input its
``tool-input-available`` stated. (An
approval request for a call already ready, or for no call, is ignored and logged: the
SDK writes it in the call's step, before ``finish-step``.)

The parts are drawn from the AI SDK's chunk types (ids from a small set, so that parts
meet the same calls), including malformed ones, one part at a time: after each, the
machine is checked, as a runner would look at it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcall_tracker import Status, tool_call_streaming_state_machine
from toolcall_tracker.adapters import AISDKAdapter
from toolcall_tracker.adapters.ai_sdk import AISDKStepReset

IDS = st.sampled_from(["c1", "c2", "c3"])
INPUTS = st.one_of(
    st.dictionaries(st.sampled_from(["a", "b"]), st.integers(-3, 2**60), max_size=2),
    st.text(max_size=3),
    st.none(),
)


def _part(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **fields}


PARTS = st.one_of(
    st.builds(lambda i: _part("tool-input-start", toolCallId=i, toolName="f"), IDS),
    st.builds(
        lambda i: _part("tool-input-start", toolCallId=i, toolName="f", inputEncoding="text"),
        IDS,
    ),
    st.builds(
        lambda i, t: _part("tool-input-delta", toolCallId=i, inputTextDelta=t),
        IDS,
        st.sampled_from(['{"a":', "1}", "x", " ", '"', 5]),
    ),
    st.builds(
        lambda i, v: _part("tool-input-available", toolCallId=i, toolName="f", input=v),
        IDS,
        INPUTS,
    ),
    st.builds(lambda i: _part("tool-approval-request", approvalId="a", toolCallId=i), IDS),
    st.builds(lambda i: _part("tool-output-available", toolCallId=i, output=1), IDS),
    st.builds(lambda i: _part("tool-output-denied", toolCallId=i), IDS),
    st.builds(lambda i: _part("tool-output-error", toolCallId=i, errorText="e"), IDS),
    st.sampled_from(
        [_part("start-step"), _part("finish-step"), _part("reset-step"), _part("finish")]
    ),
    st.sampled_from([_part("abort"), _part("error", errorText="x")]),
)


@pytest.mark.parametrize("ready", ["step", "input"])
@settings(max_examples=300, deadline=None)
@given(parts=st.lists(PARTS, max_size=16))
def test_nothing_held_back_ever_looks_running(ready: Any, parts: list[dict[str, Any]]) -> None:
    machine = tool_call_streaming_state_machine()
    adapter = AISDKAdapter(ready=ready)
    asked: set[str] = set()  # approval requested, no server outcome yet
    retracted: set[str] = set()  # in a step that was reset (since its start-step)
    step: list[str] = []
    stated: dict[str, Any] = {}
    for part in parts:
        before = {call.id: call.status for call in machine.list()}
        adapter.write(part, machine)
        kind, call_id = part["type"], part.get("toolCallId")
        if kind in ("start-step", "finish", "error", "abort"):
            step = []  # the step stands (the next one starts, or the turn ends)
        elif kind == "tool-input-start" and call_id not in before:
            step.append(call_id)
        elif kind == "tool-input-available" and call_id not in stated:
            stated[call_id] = part["input"]
            if call_id not in before:
                step.append(call_id)
        elif kind == "tool-approval-request" and before.get(call_id) == Status.PENDING:
            asked.add(call_id)  # (one for a call already ready, or none, is ignored)
        elif kind == "reset-step":
            now = {c for c in step if before.get(c) in (Status.PENDING, Status.RUNNING)}
            for c in now:  # failed whatever its state, ready (ready="input") included
                call = machine.get(c)
                assert call is not None
                assert isinstance(call.error, AISDKStepReset)
            retracted.update(now)
            step = []
        elif kind.startswith("tool-output-"):
            asked.discard(call_id)  # the server decided: its outcome counts
        for call in machine.list():
            if call.status is Status.RUNNING:
                assert call.id not in asked, "a call awaiting approval looks running"
                assert call.id not in retracted, "a retracted call looks running"
                if ready == "step":
                    assert call.id not in step, "a call of a step not yet standing runs"
                given = stated.get(call.id)
                if isinstance(given, dict) and given:
                    # made ready by the adapter: exactly the stated input
                    assert json.loads(call.args_text) == given
    adapter.finish(machine)
    assert machine.end is not None
