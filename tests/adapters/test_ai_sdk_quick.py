"""The AI SDK reader's quick routes, written into a machine, give what its general route
gives.

A plain-dict part takes a quick route when no call is due: ``tool-input-delta`` for a held
call is held at once, ``tool-input-start`` and ``tool-input-available`` go to their
handler without the general route's reading. The same parts as ``data:`` lines take the
general route. Generated streams (usable and unusable ids, names, text inputs, stated
inputs that match the streamed text or not, steps, approvals, parts after the turn's
end, both ``ready`` modes, small limits) must leave the machine with the same calls:
statuses, names, ``args_text``, arguments, errors and the turn's end.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolcall_tracker import Limits, ToolCallStateMachine
from toolcall_tracker.adapters import AISDKAdapter

IDS = ["a", "b", "c", "", "much-too-long-id"]  # max_id_chars=8 below: the last is unusable
INPUTS = [{"x": 1}, {"x": True}, {"x": 1.0}, [1, 2], {}, "text", None, 9007199254740993]

_id = st.sampled_from(IDS)
part = st.one_of(
    st.builds(
        lambda i, t: {"type": "tool-input-delta", "toolCallId": i, "inputTextDelta": t},
        _id,
        st.one_of(st.sampled_from(['{"x":', " 1", "}", "true", "", "[1,", "2]", " "]), st.none()),
    ),
    st.builds(
        lambda i, name, text: {
            "type": "tool-input-start",
            "toolCallId": i,
            **({} if name is None else {"toolName": name}),
            **({"inputEncoding": "text"} if text else {}),
        },
        _id,
        st.sampled_from(["f", "", None]),
        st.booleans(),
    ),
    st.builds(
        lambda i, v, missing: {
            "type": "tool-input-available",
            "toolCallId": i,
            "toolName": "f",
            **({} if missing else {"input": v}),
        },
        _id,
        st.sampled_from(INPUTS),
        st.booleans(),
    ),
    st.builds(lambda i: {"type": "tool-input-error", "toolCallId": i, "errorText": "no"}, _id),
    st.builds(lambda i: {"type": "tool-output-available", "toolCallId": i, "output": 1}, _id),
    st.builds(lambda i: {"type": "tool-approval-request", "toolCallId": i, "approvalId": "p"}, _id),
    st.sampled_from(
        [
            {"type": "start-step"},
            {"type": "finish-step"},
            {"type": "reset-step"},
            {"type": "finish"},
            {"type": "text-delta", "delta": "hi"},
        ]
    ),
)


def _state(parts: list[Any], *, as_text: bool, ready: Any, max_args: int) -> Any:
    limits = Limits(max_args_chars=max_args, max_id_chars=8)
    machine = ToolCallStateMachine(limits=limits)
    adapter = AISDKAdapter(ready=ready)
    for item in parts:
        adapter.write("data: " + json.dumps(item) if as_text else item, machine)
    adapter.finish(machine)
    calls = [
        (c.id, c.name, c.status, c.args_text, c.args, None if c.error is None else c.error)
        for c in machine.list()
    ]
    end = machine.end
    return calls, None if end is None else (end.ok, end.reason)


@settings(max_examples=400, deadline=None)
@given(
    parts=st.lists(part, max_size=30),
    ready=st.sampled_from(["step", "input"]),
    max_args=st.sampled_from([4, 12, 1000]),
)
def test_dict_parts_leave_the_machine_as_text_parts_do(
    parts: list[Any], ready: str, max_args: int
) -> None:
    quick = _state(parts, as_text=False, ready=ready, max_args=max_args)
    general = _state(parts, as_text=True, ready=ready, max_args=max_args)
    assert quick == general
