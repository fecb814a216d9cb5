"""The AI SDK v4 data stream protocol: ``AISDKDataStreamAdapter``, its recognition, the CLI.

The recorded streams (``tests/fixtures/recorded/ai_sdk_v4/``) are checked against the
manifest by ``test_own_recordings.py``; this module checks each rule of the protocol's
wire map on small streams, the line forms accepted, and the command line's support.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import DEADLINE
from toolcall_tracker import Status, ToolCallTracker, tool_call_streaming_state_machine
from toolcall_tracker._recognise import item_format
from toolcall_tracker.adapters import AISDKDataStreamAdapter, adapt, apply_stream
from toolcall_tracker.cli import main

RECORDED = Path(__file__).parents[1] / "fixtures" / "recorded" / "ai_sdk_v4"

START = 'b:{"toolCallId":"c1","toolName":"add"}'
DELTAS = [
    'c:{"toolCallId":"c1","argsTextDelta":"{\\"a\\":"}',
    'c:{"toolCallId":"c1","argsTextDelta":"1}"}',
]
WHOLE = '9:{"toolCallId":"c1","toolName":"add","args":{"a":1}}'
STEP = 'e:{"finishReason":"tool-calls","usage":{"promptTokens":1},"isContinued":false}'
DONE = 'd:{"finishReason":"tool-calls","usage":{"promptTokens":1,"completionTokens":2}}'


def replay(lines: list[Any]) -> Any:
    machine = tool_call_streaming_state_machine()
    apply_stream(machine, lines, AISDKDataStreamAdapter())
    return machine


def test_streamed_text_then_the_whole_call_makes_it_ready() -> None:
    machine = replay([START, *DELTAS, WHOLE, STEP, DONE])
    call = machine.get("c1")
    assert call.status == Status.RUNNING
    assert call.args == {"a": 1}
    assert call.args_text == '{"a":1}'  # the streamed text, checked against args
    assert machine.end.ok
    assert machine.end.reason == "tool-calls"


def test_a_whole_call_without_streamed_text_gets_its_args_as_text() -> None:
    machine = replay([WHOLE, DONE])
    assert machine.get("c1").args == {"a": 1}
    assert machine.get("c1").status == Status.RUNNING


def test_the_args_count_over_streamed_text_that_differs() -> None:
    mismatch = '9:{"toolCallId":"c1","toolName":"add","args":{"a":2}}'
    machine = replay([START, *DELTAS, mismatch, DONE])
    call = machine.get("c1")
    assert (call.status, call.args) == (Status.RUNNING, {"a": 2})


def test_a_result_finishes_the_call_as_done() -> None:
    result = 'a:{"toolCallId":"c1","result":{"sum":1}}'
    machine = replay([START, *DELTAS, WHOLE, result, STEP, DONE])
    call = machine.get("c1")
    assert call.status == Status.DONE  # the server ran it: nothing left to run
    assert call.result == {"sum": 1}


def test_every_step_is_one_turn_that_ends_at_d() -> None:
    second = '9:{"toolCallId":"c2","toolName":"add","args":{"a":2}}'
    lines = [WHOLE, 'a:{"toolCallId":"c1","result":1}', STEP, '0:"and now"', second, STEP]
    machine = replay([*lines, 'd:{"finishReason":"stop"}'])
    assert [call.id for call in machine.list()] == ["c1", "c2"]
    assert machine.get("c1").status == Status.DONE
    assert machine.get("c2").status == Status.RUNNING
    assert machine.end.ok
    without_d = replay(lines)
    assert not without_d.end.ok
    assert without_d.end.reason == "stream ended without a finish part"


def test_an_error_line_ends_the_turn_not_ok() -> None:
    machine = replay([START, DELTAS[0], '3:"An error occurred."', DONE])
    assert machine.end.ok is False
    assert machine.end.reason == "An error occurred."
    assert machine.get("c1").status == Status.ERROR  # cut off: it must not run


@pytest.mark.parametrize("reason", ["length", "content-filter", "error", "other", "unknown"])
def test_a_finish_reason_other_than_stop_or_tool_calls_is_not_ok(reason: str) -> None:
    machine = replay([WHOLE, f'd:{{"finishReason":"{reason}"}}'])
    assert machine.end.ok is False
    assert machine.end.reason == reason


def test_line_forms_bytes_newlines_and_sse_data_lines() -> None:
    lines: list[Any] = [
        START.encode() + b"\n",
        f"data: {DELTAS[0]}\r\n",
        DELTAS[1].encode(),
        f"data:{WHOLE}",
        DONE + "\n",
    ]
    machine = replay(lines)
    assert machine.get("c1").args == {"a": 1}
    assert machine.end.ok


@pytest.mark.parametrize(
    "junk",
    [
        '0:"text"',
        'g:"reasoning"',
        '2:[{"x":1}]',
        '8:[{"note":1}]',
        'f:{"messageId":"m"}',
        "9:{not json",
        "9:" + "[" * 100_000 + "]" * 100_000,  # nested too deeply for json
        "c:" + "{" * 50_000,
        "c:[1,2]",
        "not a part",
        "",
        None,
        42,
        {"type": "tool-input-start"},
    ],
)
def test_other_parts_and_junk_are_ignored(junk: Any) -> None:
    machine = replay([START, junk, *DELTAS, WHOLE, DONE])
    assert machine.get("c1").args == {"a": 1}
    assert machine.end.ok


def test_recognition_of_the_lines() -> None:
    for line in (START, WHOLE, DONE, '0:"hi"', '3:"boom"', f"data: {WHOLE}", WHOLE.encode()):
        assert item_format(line) == "ai-sdk-v4"
    for other in ("data: {}", "hello", "0:hello", "Z:{}", {"type": "finish"}):
        assert item_format(other) != "ai-sdk-v4"


@pytest.mark.anyio
async def test_consumed_from_a_sync_list_of_lines(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            await tracker.consume(
                adapt([START, *DELTAS, WHOLE, STEP, DONE], AISDKDataStreamAdapter())
            )
            call = await tracker.wait_ready("c1")
    assert call.args == {"a": 1}
    assert tracker.end is not None
    assert tracker.end.ok


def test_the_command_line_replays_and_validates_v4_lines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    roundtrip = RECORDED / "vercel_server_side_tool_roundtrip.txt"
    assert main(["replay", "--json", str(roundtrip)]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["format"] == "ai-sdk-v4"
    assert [(c["name"], c["status"], c["args"]) for c in document["calls"]] == [
        ("tool-name", "done", {"city": "London"})
    ]
    assert main(["validate", "--format", "ai-sdk-v4", str(roundtrip)]) == 0
    mismatch = RECORDED / "vercel_tool_call_streaming_extra_brace.txt"
    capsys.readouterr()
    # one brace too many in the streamed text: the `9:` args count, as useChat shows them
    assert main(["replay", "--json", str(mismatch)]) == 0
    (call,) = json.loads(capsys.readouterr().out)["calls"]
    assert (call["status"], call["args"]) == ("done", {"testArg": "test-value"})


# -- any sequence of parts: never raises, and nothing runs with arguments it was not given --

IDS = st.sampled_from(["c1", "c2", "", "x" * 300])
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)


def _line(code: str, value: Any) -> str:
    return f"{code}:{json.dumps(value)}"


PARTS = st.one_of(
    st.builds(
        lambda i, n: _line("b", {"toolCallId": i, "toolName": n}),
        IDS,
        st.sampled_from(["f", "g", 3]),
    ),
    st.builds(
        lambda i, t: _line("c", {"toolCallId": i, "argsTextDelta": t}),
        IDS,
        st.sampled_from(['{"a":', "1}", "", "[", 5]),
    ),
    st.builds(lambda i, a: _line("9", {"toolCallId": i, "toolName": "f", "args": a}), IDS, JSONISH),
    st.builds(lambda i, r: _line("a", {"toolCallId": i, "result": r}), IDS, JSONISH),
    st.builds(lambda r: _line("e", {"finishReason": r}), st.sampled_from(["stop", "tool-calls"])),
    st.builds(lambda r: _line("d", {"finishReason": r}), st.sampled_from(["stop", "length", None])),
    st.builds(lambda t: _line("3", t), st.text(max_size=5)),
    st.text(max_size=12),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(PARTS, max_size=14))
def test_any_sequence_of_parts(lines: list[str]) -> None:
    machine = replay(lines)  # never raises
    assert machine.end is not None  # every stream ends its turn
    given: dict[str, Any] = {}
    for line in lines:
        if line.startswith("9:"):
            part = json.loads(line[2:])
            args = part["args"]
            given.setdefault(part["toolCallId"], {} if args is None else args)  # null: {}
    for call in machine.list():
        if call.status in (Status.RUNNING, Status.DONE) and call.id in given:
            # a call that became ready through its 9: line has exactly that line's args
            # (no args, null, is the empty object, as for the UI stream's missing input)
            assert json.dumps(call.args, sort_keys=True) == json.dumps(
                given[call.id], sort_keys=True
            )
