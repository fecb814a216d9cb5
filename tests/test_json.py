"""JSON at ``ready`` follows ``JSON.parse``: parity cases and a differential test."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from _json_values import JSON_VALUES, same
from toolcall_tracker import (
    CallFailure,
    InvalidArguments,
    ToolCall,
    tool_call_streaming_state_machine,
)

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CHUNK = 65536


def ready_with(text: str, chunk: int = CHUNK) -> ToolCall:
    """Stream ``text`` as the arguments of call t1, make it ready, return its snapshot."""
    machine = tool_call_streaming_state_machine()
    machine.apply({"type": "start", "id": "t1", "name": "tool"})
    for i in range(0, len(text), chunk):
        machine.apply({"type": "delta", "id": "t1", "argsTextDelta": text[i : i + chunk]})
    machine.apply({"type": "ready", "id": "t1"})
    call = machine.get("t1")
    assert call is not None
    return call


def assert_invalid(call: ToolCall, *needles: str) -> InvalidArguments:
    assert call.status == "error"
    assert call.args is None
    error = call.error
    assert isinstance(error, InvalidArguments)
    assert isinstance(error, CallFailure)
    assert error.kind == "invalid_arguments"
    for needle in needles:
        assert needle in error.message
    assert 0 <= error.position <= len(call.args_text)
    assert error.line >= 1
    assert error.column >= 1
    assert len(error.message) < 300  # readable, not a dump of the input
    return error


# --------------------------------------------------------------------------------------
# Valid texts.
# --------------------------------------------------------------------------------------

VALID: list[tuple[str, str, Any]] = [
    ("object", '{"q": "hi"}', {"q": "hi"}),
    ("json-whitespace-around", ' \t\r\n{"a": [1, 2]}\n\r\t ', {"a": [1, 2]}),
    ("whitespace-inside", '{ "a" :\n[ 1 ,\t2 ] }', {"a": [1, 2]}),
    ("integer", "42", 42),
    ("negative-float", "-1.5e3", -1500.0),
    ("minus-zero", "-0", 0),
    ("true", "true", True),
    ("false", "false", False),
    ("null", "null", None),
    ("string", '"hello"', "hello"),
    ("empty-string", '""', ""),
    ("array", '[1, "two", null, {"x": false}]', [1, "two", None, {"x": False}]),
    ("empty-object", "{}", {}),
    ("empty-array", "[]", []),
    ("duplicate-keys-last-wins", '{"a": 1, "b": 2, "a": 3}', {"a": 3, "b": 2}),
    ("escapes", r'"\"\\\/\b\f\n\r\t\u00e9"', '"\\/\b\f\n\r\té'),
    ("surrogate-pair-escape", r'"\ud83d\ude00"', "\U0001f600"),
    ("lone-surrogate-escape", r'"\ud800"', "\ud800"),
    ("lone-low-surrogate-escape", r'["\udc00x"]', ["\udc00x"]),
    ("del-char-in-string", '"\x7f"', "\x7f"),
    ("unicode-raw", '"héllo ☃"', "héllo ☃"),
    ("nbsp-inside-string", '"a\u00a0b"', "a\u00a0b"),
    ("big-int-under-limit", "9" * 4000, int("9" * 4000)),
    ("tiny-float-underflows", "1e-400", 0.0),
]


@pytest.mark.parametrize(("text", "expected"), [v[1:] for v in VALID], ids=[v[0] for v in VALID])
def test_valid_json_becomes_args(text: str, expected: Any) -> None:
    call = ready_with(text)
    assert call.status == "running", call.error
    assert call.error is None
    assert call.args == expected
    assert type(call.args) is type(expected)
    assert call.args_text == text


@pytest.mark.parametrize("text", ["1e999", "1E400", "-1e999", "[1e999]"])
def test_overflowing_numbers_become_infinity_like_json_parse(text: str) -> None:
    call = ready_with(text)
    assert call.status == "running"
    value = call.args[0] if isinstance(call.args, list) else call.args
    assert isinstance(value, float)
    assert math.isinf(value)
    assert (value < 0) == text.startswith("-")


@pytest.mark.parametrize("depth", [199, 200, 201, 300])
@pytest.mark.parametrize("shape", ["array", "object"])
def test_nesting_beyond_pydantic_core_limit_is_valid(depth: int, shape: str) -> None:
    arrays = "[" * depth + "]" * depth
    text = arrays if shape == "array" else '{"a":' * depth + "1" + "}" * depth
    call = ready_with(text)
    assert call.status == "running", call.error
    value = call.args
    for _ in range(depth - 1):
        value = value[0] if shape == "array" else value["a"]
    assert value == ([] if shape == "array" else {"a": 1})


# --------------------------------------------------------------------------------------
# Invalid texts.
# --------------------------------------------------------------------------------------

INVALID: list[tuple[str, str, str]] = [
    ("nbsp-before", "\u00a0{}", "invalid JSON"),
    ("nbsp-after", "{}\u00a0", "invalid JSON"),
    ("form-feed-before", "\x0c{}", "invalid JSON"),
    ("vertical-tab-after", "{}\x0b", "invalid JSON"),
    ("bom", "\ufeff{}", "invalid JSON"),
    ("line-separator", "\u2028{}", "invalid JSON"),
    ("nan", "NaN", "NaN"),
    ("infinity", "Infinity", "Infinity"),
    ("minus-infinity", "-Infinity", "Infinity"),
    ("nan-in-array", "[1, NaN]", "NaN"),
    ("infinity-in-object", '{"a": Infinity}', "Infinity"),
    ("short-escape", r'"\u12"', "escape"),
    ("short-escape-at-end", r'"\u12', "invalid JSON"),
    ("bad-escape-letter", r'"\x41"', "escape"),
    ("raw-newline-in-string", '"a\nb"', "control character"),
    ("raw-tab-in-string", '"a\tb"', "control character"),
    ("raw-nul-in-string", '"a\x00b"', "control character"),
    ("trailing-comma-array", "[1,]", "invalid JSON"),
    ("trailing-comma-object", '{"a": 1,}', "invalid JSON"),
    ("single-quotes", "{'a': 1}", "invalid JSON"),
    ("unquoted-key", "{a: 1}", "invalid JSON"),
    ("leading-zero", "01", "invalid JSON"),
    ("leading-plus", "+1", "invalid JSON"),
    ("bare-dot", "1.", "invalid JSON"),
    ("hex", "0x10", "invalid JSON"),
    ("two-values", "1 2", "invalid JSON"),
    ("trailing-garbage", '{"a": 1} x', "invalid JSON"),
    ("truncated", '{"a": [1, 2', "invalid JSON"),
    ("python-literal", "None", "invalid JSON"),
    ("capital-true", "True", "invalid JSON"),
    ("comment", "[1] // c", "invalid JSON"),
    ("digits-over-limit", "1" * 4301, "digits"),
]


@pytest.mark.parametrize(("text", "needle"), [v[1:] for v in INVALID], ids=[v[0] for v in INVALID])
def test_invalid_json_is_an_error_state(text: str, needle: str) -> None:
    call = ready_with(text)
    assert_invalid(call, needle)
    assert call.args_text == text


@pytest.mark.parametrize("text", ["", " ", "\t\r\n ", "\n\n"])
def test_empty_or_whitespace_only_is_an_error(text: str) -> None:
    machine = tool_call_streaming_state_machine()
    machine.apply({"type": "start", "id": "t1", "name": "tool"})
    if text:
        machine.apply({"type": "delta", "id": "t1", "argsTextDelta": text})
    machine.apply({"type": "ready", "id": "t1"})
    call = machine.get("t1")
    assert call is not None
    error = assert_invalid(call, "empty")
    assert error.position == len(text)


@pytest.mark.parametrize(
    "text",
    ['{"a": 1,\n "b": x}', "[\n1,\n2,\n]", '{\n  "k": "v"\n  "j": 1\n}', '"ok"\n\nnope'],
)
def test_error_position_line_and_column_agree(text: str) -> None:
    error = assert_invalid(ready_with(text))
    pos = error.position
    assert error.line == text.count("\n", 0, pos) + 1
    assert error.column == pos - (text.rfind("\n", 0, pos) + 1) + 1
    assert f"line {error.line} column {error.column}" in error.message


def test_error_position_points_at_the_problem() -> None:
    text = '{"a": 1, "b": tru}'
    error = assert_invalid(ready_with(text))
    assert error.position == text.index("tru")


# --------------------------------------------------------------------------------------
# Hostile texts: never raise out of apply, end in error with a readable message.
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", ["[", '{"a":', '[{"a":'])
def test_nesting_100000_deep_is_an_error_not_a_crash(shape: str) -> None:
    text = shape * 100_000
    call = ready_with(text)
    error = assert_invalid(call, "deep")
    assert "nested" in error.message


def test_nesting_100000_deep_closed_is_an_error_not_a_crash() -> None:
    call = ready_with("[" * 100_000 + "]" * 100_000)
    assert_invalid(call, "deep")


def test_10000_digit_number_is_an_error() -> None:
    call = ready_with("7" * 10_000)
    error = assert_invalid(call, "digits")
    assert "10000" in error.message


def test_10000_digit_number_inside_object_is_an_error() -> None:
    assert_invalid(ready_with('{"n": ' + "1" * 10_000 + "}"), "digits")


def test_long_float_mantissa_is_valid() -> None:
    call = ready_with("0." + "3" * 10_000)
    assert call.status == "running"
    assert call.args == pytest.approx(1 / 3)


def test_almost_8_mb_of_garbage_is_invalid_arguments() -> None:
    call = ready_with("x" * 8_000_000)
    error = assert_invalid(call, "invalid JSON")
    assert error.position == 0


def test_10_mb_of_garbage_ends_in_error_with_a_readable_message() -> None:
    # With default limits this may fail at a delta (arguments too large) or at ready
    # (invalid JSON); either way: error state, a CallFailure, a short message, no raise.
    call = ready_with("}{" * 5_000_000)
    assert call.status == "error"
    assert isinstance(call.error, CallFailure)
    assert len(call.error.message) < 300
    json.dumps(call.error.model_dump())


def test_10_mb_valid_string_parses() -> None:
    text = '"' + "a" * 7_000_000 + '"'
    call = ready_with(text)
    assert call.status == "running"
    assert len(call.args) == 7_000_000


# --------------------------------------------------------------------------------------
# The error value is structured and JSON-serialisable.
# --------------------------------------------------------------------------------------


def test_error_value_is_structured_and_serialisable() -> None:
    call = ready_with('{"a": NaN}')
    error = assert_invalid(call, "NaN")
    assert error.position == 6
    assert (error.line, error.column) == (1, 7)
    dumped = error.model_dump()
    assert dumped == {
        "kind": "invalid_arguments",
        "message": error.message,
        "position": 6,
        "line": 1,
        "column": 7,
    }
    assert json.loads(json.dumps(dumped)) == dumped
    as_json = call.model_dump(mode="json")
    assert as_json["error"] == dumped
    assert as_json["status"] == "error"
    assert json.loads(json.dumps(as_json)) == as_json
    wire = call.model_dump(mode="json", by_alias=True)
    assert wire["argsText"] == '{"a": NaN}'
    assert InvalidArguments.model_validate(dumped) == error


def test_error_value_is_frozen() -> None:
    error = assert_invalid(ready_with("nope"))
    with pytest.raises(ValueError, match="frozen"):
        error.position = 3  # type: ignore[misc]


# --------------------------------------------------------------------------------------
# Raw (unescaped) lone surrogates in the argument text.
# --------------------------------------------------------------------------------------


def test_raw_lone_surrogate_in_string_is_valid_like_json_parse() -> None:
    # JSON.parse('"\ud800"') (a raw lone surrogate, as in a JS string) returns it; so does
    # json.loads. Such strings reach us from a provider's JSON-decoded SSE payload.
    assert json.loads('"\ud800"') == "\ud800"
    call = ready_with('{"s": "\ud800"}')
    assert call.status == "running"
    assert call.args == {"s": "\ud800"}


def test_raw_lone_surrogate_outside_string_is_an_error_state() -> None:
    call = ready_with("[1, \ud800]")
    assert_invalid(call)


# --------------------------------------------------------------------------------------
# Differential tests against the standard library.
# --------------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def stdlib_parse(text: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return False, None


@SETTINGS
@given(JSON_VALUES, st.booleans(), st.sampled_from([None, 0, 2]))
def test_json_dumps_parses_back_equal(value: Any, ascii_only: bool, indent: int | None) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    call = ready_with(text, chunk=7)
    assert call.status == "running", call.error
    assert same(call.args, value), (call.args, value)


JSONISH = [
    *'[]{}",:0123456789.eE+- \t\n\r\\/abfnrtuNIaly',
    "true",
    "false",
    "null",
    "NaN",
    "Infinity",
    "\\u",
    "\\ud800",
    "\\udc00",
    "\\u00e9",
    '"k"',
    "\x00",
    "\x0b",
    "\x0c",
    "\x1f",
    "\u00a0",
    "\ufeff",
    "\u2028",
    "é",
    "1e999",
]

ARBITRARY_TEXT = (
    st.lists(st.sampled_from(JSONISH), max_size=20).map("".join)
    | st.text(max_size=20)
    | JSON_VALUES.map(json.dumps).flatmap(
        lambda t: st.tuples(st.just(t), st.integers(0, len(t)), st.sampled_from(JSONISH)).map(
            lambda x: x[0][: x[1]] + x[2] + x[0][x[1] :]
        )
    )
)


@SETTINGS
@given(ARBITRARY_TEXT)
@example("")
@example(" ")
@example("\u00a01")
@example("[NaN]")
@example("-Infinity")
@example('"\\ud800"')
@example('"\\u12"')
@example("1" * 4301)
@example("[" * 250 + "]" * 250)
@example("1e999")
@example('{"a":1,"a":2}')
def test_accepts_exactly_what_the_stdlib_accepts(text: str) -> None:
    ok, expected = stdlib_parse(text)
    call = ready_with(text)
    if ok:
        assert call.status == "running", (text, call.error)
        assert same(call.args, expected), (text, call.args, expected)
    else:
        assert call.status == "error", (text, call.args)
        assert isinstance(call.error, InvalidArguments)


# --------------------------------------------------------------------------------------
# Positions are character offsets, also after non-ASCII text.
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "bad_part"),
    [('["é", x]', "x"), ('{"日本": 1,\n "é": tru}', "tru"), ('["\U0001f600", ]', "]")],
)
def test_position_counts_characters_after_non_ascii_text(text: str, bad_part: str) -> None:
    error = assert_invalid(ready_with(text))
    bad = text.rindex(bad_part)
    assert error.position == bad
    assert error.line == text.count("\n", 0, bad) + 1
    assert error.column == bad - (text.rfind("\n", 0, bad) + 1) + 1


@pytest.mark.parametrize(
    ("text", "literal"),
    [('["é", NaN]', "NaN"), ('{"日本語": Infinity}', "Infinity"), ('["\U0001f600", NaN]', "NaN")],
)
def test_nan_position_counts_characters_after_non_ascii_text(text: str, literal: str) -> None:
    error = assert_invalid(ready_with(text), literal)
    assert error.position == text.index(literal)
    assert error.column == text.index(literal) + 1


@pytest.mark.parametrize(("text", "literal"), [("[NaN]", "NaN"), ('{"a": Infinity}', "Infinity")])
def test_nan_position_in_ascii_text(text: str, literal: str) -> None:
    error = assert_invalid(ready_with(text), literal)
    assert error.position == text.index(literal)
    assert error.column == text.index(literal) + 1
