"""The AI SDK reader's quick routes give exactly what its general route gives.

Plain-dict ``tool-input-delta`` parts take a fast path; the same parts as JSON texts (a
``data:`` line) take the general one. And the stated input is compared with the streamed
text by Python's equality where that is JavaScript's (no booleans), else in full.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcall_tracker import Limits, ToolCallStateMachine
from toolcall_tracker.adapters import AISDKAdapter
from toolcall_tracker.adapters._common import NOT_PARSED
from toolcall_tracker.adapters.ai_sdk._input import Held, input_text, json_equal

IDS = ["a", "b", "c"]

part = st.one_of(
    st.builds(
        lambda i, t: {"type": "tool-input-delta", "toolCallId": i, "inputTextDelta": t},
        st.sampled_from([*IDS, "zz"]),
        st.one_of(st.sampled_from(['{"x":', " 1", "}", "true", "", "[1,", "2]"]), st.none()),
    ),
    st.builds(
        lambda i: {"type": "tool-input-start", "toolCallId": i, "toolName": "f"},
        st.sampled_from(IDS),
    ),
    st.builds(
        lambda i, v: {"type": "tool-input-available", "toolCallId": i, "toolName": "f", "input": v},
        st.sampled_from(IDS),
        st.sampled_from([{"x": 1}, {"x": True}, [1, 2], {}, None]),
    ),
    st.builds(
        lambda i: {"type": "tool-input-error", "toolCallId": i, "errorText": "no"},
        st.sampled_from(IDS),
    ),
    st.builds(
        lambda i: {"type": "tool-output-available", "toolCallId": i, "output": 1},
        st.sampled_from(IDS),
    ),
    st.builds(
        lambda i: {"type": "tool-approval-request", "toolCallId": i, "approvalId": "p"},
        st.sampled_from(IDS),
    ),
    st.sampled_from([{"type": "start-step"}, {"type": "finish-step"}, {"type": "reset-step"}]),
)


def _events(parts: list[Any], *, as_text: bool, ready: Any, max_args: int) -> list[Any]:
    adapter = AISDKAdapter(limits=Limits(max_args_chars=max_args), ready=ready)
    out: list[Any] = []
    for item in parts:
        out += adapter.feed("data: " + json.dumps(item) if as_text else item)
    out += adapter.feed({"type": "finish"}) + adapter.end()
    return [event.model_dump() for event in out]


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(part, max_size=30),
    ready=st.sampled_from(["step", "input"]),
    max_args=st.sampled_from([4, 12, 1000]),
)
def test_dict_parts_give_what_text_parts_give(parts: list[Any], ready: str, max_args: int) -> None:
    fast = _events(parts, as_text=False, ready=ready, max_args=max_args)
    general = _events(parts, as_text=True, ready=ready, max_args=max_args)
    assert fast == general


def test_a_delta_beyond_max_args_chars_fails_the_call_through_the_fast_path() -> None:
    machine = ToolCallStateMachine(limits=Limits(max_args_chars=10))
    adapter = AISDKAdapter()
    adapter.write({"type": "tool-input-start", "toolCallId": "a", "toolName": "f"}, machine)
    for text in ['{"s":"', "0123456789", '"}']:
        adapter.write(
            {"type": "tool-input-delta", "toolCallId": "a", "inputTextDelta": text}, machine
        )
    call = machine.get("a")
    assert call is not None
    assert call.status.value == "error"
    assert type(call.error).__name__ == "ArgumentsTooLarge"


@pytest.mark.parametrize(
    ("streamed", "stated", "kept"),
    [
        ('{"a": 1}', {"a": True}, False),  # a boolean never equals a number
        ('{"a": true}', {"a": 1}, False),
        ('{"a": true, "b": 1}', {"a": 1, "b": True}, False),  # as many booleans, elsewhere
        ('{"a": 0}', {"a": False}, False),
        ('{"a": true}', {"a": True}, True),
        ('{"a": "true", "b": 1}', {"a": "true", "b": 1}, True),
        ('{"a": 1}', {"a": 1.0}, True),  # numbers by value
        ('{"1": 1}', {1: 1}, False),  # keys are strings
        ("[1, 2]", (1, 2), True),  # a tuple is an array
        ('{"n": 9007199254740995}', {"n": 9007199254740996.0}, True),  # JS rounding
        ('{"b": 1, "a": 2}', {"a": 2, "b": 1}, True),  # key order does not matter
    ],
)
def test_the_streamed_text_is_kept_when_it_is_the_stated_input(
    streamed: str, stated: Any, kept: bool
) -> None:
    held = Held(None, text_input=False)  # type: ignore[arg-type]
    held.add(streamed)
    text, replaced, parsed = input_text(held, stated)
    assert (text == streamed) is kept
    assert replaced is not kept
    # the streamed text kept comes with its parse, for the machine to take at ready
    assert parsed == (json.loads(streamed) if kept else NOT_PARSED)
    assert json_equal(json.loads(streamed), stated) is kept
