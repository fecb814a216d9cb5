"""A held call's room under ``Limits.max_args_chars``, when the adapter changes sinks.

The AI SDK reader holds a call's streamed text until ``tool-input-available`` and keeps,
per held call, the room left under the limit of the sink it writes into. Bound to a sink
with other limits, that room is recomputed: a held call outgrows the new limit at the
next fragment (it is written, and the sink fails it, ``ArgumentsTooLarge``) exactly when
its text is longer than the new limit, whichever route the fragment takes (a dict part:
the fast path; a ``data:`` line: the general route).
"""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolcall_tracker import Limits, Status, ToolCallStateMachine
from toolcall_tracker.adapters import AISDKAdapter
from toolcall_tracker.adapters.ai_sdk._input import Held, resize

_SWITCHES: dict[str, Any] = {
    "size": st.integers(0, 40),  # the string the call's input is
    "cuts": st.lists(st.integers(0, 50), max_size=8),  # where its text is cut in fragments
    "split": st.integers(0, 9),  # how many fragments go through feed() before the switch
    "before": st.integers(1, 60),  # max_args_chars through feed()
    "after": st.integers(1, 60),  # max_args_chars of the machine switched to
}


def _delta(text: str) -> dict[str, Any]:
    return {"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": text}


def _chunks(text: str, cuts: list[int]) -> list[str]:
    points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in pairwise(points) if b > a]


def _run(
    chunks: list[str], split: int, before: int, after: int, *, as_text: bool
) -> tuple[list[Any], list[tuple[Status, str | None]], Any]:
    """Feed the start and ``split`` fragments through ``feed`` (limit ``before``), then
    the rest and the stated input into a machine (limit ``after``). The events fed, the
    call's status (and error kind) after each fragment written into the machine, and the
    call at the end."""

    def shape(part: dict[str, Any]) -> Any:
        return "data: " + json.dumps(part) if as_text else part

    adapter = AISDKAdapter(limits=Limits(max_args_chars=before))
    fed = adapter.feed(shape({"type": "tool-input-start", "toolCallId": "c", "toolName": "f"}))
    for text in chunks[:split]:
        fed += adapter.feed(shape(_delta(text)))
    machine = ToolCallStateMachine(limits=Limits(max_args_chars=after))
    machine.write_start("c", "f")
    seen: list[tuple[Status, str | None]] = []
    for text in chunks[split:]:
        adapter.write(shape(_delta(text)), machine)
        call = machine.get("c")
        assert call is not None
        seen.append((call.status, None if call.error is None else type(call.error).__name__))
    stated = json.loads("".join(chunks))
    adapter.write(
        shape(
            {"type": "tool-input-available", "toolCallId": "c", "toolName": "f", "input": stated}
        ),
        machine,
    )
    adapter.write(shape({"type": "finish-step"}), machine)
    adapter.write(shape({"type": "start-step"}), machine)  # the step stands: ready now
    return [event.model_dump() for event in fed], seen, machine.get("c")


@settings(max_examples=300, deadline=None)
@given(**_SWITCHES, as_text=st.booleans())
def test_a_held_call_outgrows_the_limit_of_the_sink_it_is_written_into(
    size: int, cuts: list[int], split: int, before: int, after: int, as_text: bool
) -> None:
    text = json.dumps("x" * size)
    chunks = _chunks(text, cuts)
    split = min(split, len(chunks))
    if len("".join(chunks[:split])) > before:  # outgrown before the switch: not this test
        split = 0
    fed, seen, call = _run(chunks, split, before, after, as_text=as_text)
    assert [event["type"] for event in fed] == ["start"]  # the text is held, not written
    held = len("".join(chunks[:split]))
    for (status, error), text_in in zip(seen, chunks[split:], strict=True):
        held += len(text_in)
        if held > after:
            assert (status, error) == (Status.ERROR, "ArgumentsTooLarge")
            break
        assert (status, error) == (Status.PENDING, None)
    assert call is not None
    if len(text) > after:
        assert call.status is Status.ERROR
        assert type(call.error).__name__ == "ArgumentsTooLarge"
    else:
        assert call.status is Status.RUNNING
        assert call.args == "x" * size
        assert call.args_text == text


@settings(max_examples=200, deadline=None)
@given(**_SWITCHES)
def test_dict_parts_and_text_parts_agree_across_a_change_of_sink(
    size: int, cuts: list[int], split: int, before: int, after: int
) -> None:
    chunks = _chunks(json.dumps("x" * size), cuts)
    split = min(split, len(chunks))
    fast = _run(chunks, split, before, after, as_text=False)
    general = _run(chunks, split, before, after, as_text=True)
    assert fast[:2] == general[:2]
    assert fast[2].model_dump() == general[2].model_dump()


def test_resize_gives_the_room_a_new_limit_leaves() -> None:
    held = Held(None, text_input=False, limit=10)  # type: ignore[arg-type]
    assert held.add("abcd")
    assert held.room == 6
    resize([held], 3)
    assert held.room == -1
    assert not held.add("")  # already outgrown
    resize([held], 100)
    assert held.add("e" * 95)
    assert held.room == 1
    assert len(held.text()) == held.limit - held.room == 99  # the room counts the text
