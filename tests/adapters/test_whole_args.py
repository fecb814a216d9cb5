"""Arguments that arrive whole (Gemini's ``args``, Ollama's ``arguments`` object, an
announced input): written as JSON text once, and parsed once.

``_json_written`` writes a value with pydantic-core and keeps that text only when parsing
it gives the value back, handing the parse to the machine; anything else is written by
``json.dumps``, which decides as it always did.
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
from typing import Any

import pytest
from hypothesis import given

from _json_values import JSON_VALUES, count_parses, same
from toolcall_tracker import Status, ToolCallStateMachine, ToolCallTracker, _reducer
from toolcall_tracker._json import parse_json
from toolcall_tracker.adapters import GeminiAdapter, OllamaAdapter, apply_stream
from toolcall_tracker.adapters._common import NOT_PARSED, _json_text, _json_written


def _dumps(value: Any) -> str | None:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None


@given(JSON_VALUES)
def test_a_plain_value_is_written_and_parsed_as_json_dumps_would(value: Any) -> None:
    written = _json_written(value)
    expected = _dumps(value)
    assert written is not None
    assert expected is not None
    text, parsed = written
    assert same(parse_json(text), parse_json(expected))  # the same arguments either way
    if parsed is not NOT_PARSED:  # the parse handed over is the parse of that text
        assert same(parsed, parse_json(text))
    assert _json_text(value) == text


@pytest.mark.parametrize(
    "value",
    [
        {"a": (1, 2)},  # json.dumps writes a tuple as a list
        {1: "one", None: "none"},  # and a non-string key as a string
        {"a": math.nan},
        {"a": math.inf},
        {"a": datetime.date(2026, 12, 4)},  # pydantic-core writes these; json.dumps refuses
        {"a": decimal.Decimal("1.5")},
        {"a": {1, 2}},
        {"a": b"bytes"},
        {"a": "\ud800"},  # a lone surrogate: pydantic-core refuses, json.dumps writes it
        {"a": [1.0, -0.0, 1e-7, 2**64]},
    ],
)
def test_what_is_not_plain_json_is_decided_by_json_dumps(value: Any) -> None:
    written = _json_written(value)
    expected = _dumps(value)
    if expected is None:
        assert written is None
        return
    assert written is not None
    text, parsed = written
    assert same(parse_json(text), parse_json(expected))
    if parsed is not NOT_PARSED:
        assert same(parsed, parse_json(text))


def test_a_recursive_value_cannot_be_written() -> None:
    cycle: dict[str, Any] = {}
    cycle["self"] = cycle
    assert _json_written(cycle) is None


def _gemini(args: Any) -> list[dict[str, Any]]:
    part = {"functionCall": {"name": "f", "args": args}}
    finish = {"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}
    return [
        {"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}]},
        {"candidates": [{**finish, "index": 0}]},
    ]


def _ollama(args: Any) -> list[dict[str, Any]]:
    call = {"function": {"name": "f", "arguments": args}}
    return [
        {"message": {"role": "assistant", "content": "", "tool_calls": [call]}, "done": False},
        {"message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"},
    ]


@pytest.mark.parametrize(
    ("render", "adapter"), [(_gemini, GeminiAdapter), (_ollama, OllamaAdapter)]
)
def test_arguments_that_arrive_whole_are_parsed_once(
    render: Any, adapter: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed_by_machine = count_parses(monkeypatch, _reducer)
    args = {"q": "x", "n": [1, 2.5, True, None, 1e-7]}
    for sink in (ToolCallStateMachine(), ToolCallTracker()):
        apply_stream(sink, render(args), adapter())
        (call,) = sink.list()
        assert call.status is Status.RUNNING
        assert same(call.args, args)
        assert call.args_text == '{"q":"x","n":[1,2.5,true,null,1e-7]}'
    assert parsed_by_machine == []
    # a tuple is no JSON value of its own: written by json.dumps, parsed by the machine
    machine = ToolCallStateMachine()
    apply_stream(machine, render({"t": (1, 2)}), adapter())
    (call,) = machine.list()
    assert call.args == {"t": [1, 2]}
    assert parsed_by_machine == [("_reducer", '{"t":[1,2]}')]
