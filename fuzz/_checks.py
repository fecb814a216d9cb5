"""The invariants the fuzz targets check, in plain Python (no atheris needed).

``fuzz/fuzz_json.py`` and ``fuzz/fuzz_adapters.py`` run these under atheris (coverage
guided) or under the random-bytes fallback driver in ``fuzz/_driver.py``;
``tests/test_fuzz_corpus.py`` replays every corpus file through them in the normal suite.

Each check takes the fuzzer's bytes and raises ``AssertionError`` (or whatever escaped
the library) when an invariant is broken; it returns quietly otherwise.
"""

from __future__ import annotations

import importlib
import itertools
import json
import os
from collections.abc import Callable, Iterator
from typing import Any

from toolcall_tracker import (
    ArgumentsTooLarge,
    Delta,
    End,
    Error,
    InvalidArguments,
    InvalidEvent,
    Ready,
    Result,
    Start,
    Status,
    ToolCall,
    ToolCallStateMachine,
    ToolCallTracker,
)

__all__ = [
    "ADAPTERS",
    "ADAPTER_NAMES",
    "ByteReader",
    "adapter_items",
    "check_adapters",
    "check_json",
    "known_bug",
    "reference_json",
]

# --------------------------------------------------------------------------------------
# the JSON-at-ready path
# --------------------------------------------------------------------------------------


def reference_json(text: str) -> tuple[bool, Any]:
    """What ``JSON.parse`` accepts (the library's documented rule), via the stdlib."""

    def reject(name: str) -> Any:
        raise ValueError(name)

    if not text.strip(" \t\n\r"):
        return False, None
    try:
        return True, json.JSONDecoder(strict=True, parse_constant=reject).decode(text)
    except (ValueError, RecursionError):
        return False, None


def same(a: Any, b: Any) -> bool:
    """Equality that also holds between two NaNs (JSON has none, but be safe)."""
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if type(a) is not type(b) and not (isinstance(a, int | float) and isinstance(b, int | float)):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def decode_text(data: bytes) -> tuple[str, list[int]]:
    """Fuzzer bytes -> (argument text, cut points).

    The first byte says how many cuts follow (0-7), each one byte (a fraction of the
    text). The rest is the text: UTF-8 where it decodes, lone surrogates where it does
    not (``surrogateescape``), so invalid UTF-8 becomes hostile text, not lost input.
    """
    if not data:
        return "", []
    cuts = data[0] & 7
    raw_cuts, body = data[1 : 1 + cuts], data[1 + cuts :]
    text = body.decode("utf-8", "surrogateescape")
    points = sorted({len(text) * b // 255 for b in raw_cuts})
    return text, points


BYSTANDER_ARGS = '{"keep": [1, "two", {"3": null}]}'


def check_json(data: bytes) -> None:
    """Arbitrary bytes -> text -> one call's deltas -> ready.

    Invariants: ``apply`` never raises; the call is ``running`` with ``args`` equal to
    what the reference parser returns, or ``error`` with an :class:`InvalidArguments`
    whose position lies inside the text; its ``args_text`` is the text; a bystander call
    in the same machine is untouched.
    """
    text, points = decode_text(data)
    machine = ToolCallStateMachine()
    for event in (
        Start(id="by", name="bystander"),
        Delta(id="by", args_text_delta=BYSTANDER_ARGS),
        Ready(id="by"),
        Start(id="t", name="target"),
    ):
        machine.apply(event)
    before = machine.get("by")
    edges = [0, *points, len(text)]
    for a, b in itertools.pairwise(edges):
        machine.apply({"type": "delta", "id": "t", "argsTextDelta": text[a:b]})
    machine.apply({"type": "ready", "id": "t"})

    call = machine.get("t")
    assert call is not None
    assert call.args_text == text, "the argument text was not kept verbatim"
    ok, value = reference_json(text)
    if ok:
        assert call.status is Status.RUNNING, (text, call.error)
        assert same(call.args, value), (text, call.args, value)
    else:
        assert call.status is Status.ERROR, (text, call.args)
        error = call.error
        assert isinstance(error, InvalidArguments), error
        assert 0 <= error.position <= len(text), (text, error)
        assert error.line >= 1, error
        assert error.column >= 1, error
        assert error.message
    assert machine.get("by") == before, "a bystander call changed"
    assert [c.id for c in machine.list()] == ["by", "t"]


# --------------------------------------------------------------------------------------
# adapters
# --------------------------------------------------------------------------------------


def _load_adapters() -> dict[str, Callable[[], Any]]:
    """The adapter classes present now (they are being written): name -> factory."""
    wanted = [
        ("openai", "OpenAIChatAdapter"),
        ("openai", "OpenAIResponsesAdapter"),
        ("anthropic", "AnthropicAdapter"),
        ("gemini", "GeminiAdapter"),
        ("ai_sdk", "AISDKAdapter"),
    ]
    found: dict[str, Callable[[], Any]] = {}
    for module, name in wanted:
        try:
            cls = getattr(importlib.import_module(f"toolcall_tracker.adapters.{module}"), name)
        except (ImportError, AttributeError):
            continue
        found[name] = cls
    return found


ADAPTERS: dict[str, Callable[[], Any]] = _load_adapters()
ADAPTER_NAMES = sorted(ADAPTERS)

# Words the providers' stream items are made of: the fuzzer combines them into dicts.
KEYS = [
    # OpenAI chat
    "id", "object", "choices", "index", "delta", "tool_calls", "function", "name",
    "arguments", "finish_reason", "type", "role", "content", "error", "message",
    # OpenAI responses
    "output_index", "item_id", "item", "call_id", "response", "status", "output",
    "sequence_number", "incomplete_details", "reason",
    # Anthropic
    "content_block", "input", "partial_json", "stop_reason", "usage", "text",
    # Gemini
    "candidates", "parts", "functionCall", "function_call", "args", "partialArgs",
    "partial_args", "willContinue", "will_continue", "jsonPath", "json_path",
    "stringValue", "string_value", "numberValue", "boolValue", "nullValue",
    "finishReason", "finish_reason",
    # AI SDK
    "toolCallId", "toolName", "inputTextDelta", "errorText", "output", "dynamic",
    "providerExecuted", "preliminary",
]  # fmt: skip
WORDS = [
    # types and reasons
    "chat.completion.chunk", "function", "tool_calls", "stop", "length", "content_filter",
    "response.output_item.added", "response.function_call_arguments.delta",
    "response.function_call_arguments.done", "response.output_item.done",
    "response.completed", "response.incomplete", "response.failed", "error",
    "function_call", "message_start", "content_block_start", "content_block_delta",
    "content_block_stop", "message_delta", "message_stop", "tool_use", "server_tool_use",
    "input_json_delta", "text_delta", "end_turn", "max_tokens", "STOP", "MAX_TOKENS",
    "SAFETY", "MALFORMED_FUNCTION_CALL", "start", "finish", "tool-input-start",
    "tool-input-delta", "tool-input-available", "tool-input-error", "tool-output-available",
    "tool-output-error", "start-step", "finish-step", "abort", "text-delta",
    # ids, names and argument text
    "call_1", "call_2", "toolu_01", "fc_1", "item_1", "search", "get_weather", "",
    '{"q": ', '"hi"}', "{", "}", '{"a": 1}', "[1,", "2]", "null", "NaN", "\ud800",
    "x" * 300,
]  # fmt: skip


class ByteReader:
    """Draws choices from fuzzer bytes; past the end every draw is 0 (deterministic)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            return 0
        value = self.data[self.pos]
        self.pos += 1
        return value

    def below(self, n: int) -> int:
        return self.byte() % n if n > 0 else 0

    def left(self) -> int:
        return len(self.data) - self.pos

    def text(self) -> str:
        size = self.below(16)
        raw = self.data[self.pos : self.pos + size]
        self.pos += size
        return raw.decode("utf-8", "surrogateescape")

    def value(self, depth: int = 0) -> Any:
        kind = self.below(12 if depth < 4 else 7)
        if kind == 0:
            return None
        if kind == 1:
            return bool(self.byte() & 1)
        if kind == 2:
            return self.byte() - 128
        if kind == 3:
            return WORDS[self.below(len(WORDS))]
        if kind == 4:
            return self.text()
        if kind == 5:
            return (self.byte() - 128) / 7
        if kind == 6:
            return KEYS[self.below(len(KEYS))]
        if kind in (7, 8, 9):
            return self.mapping(depth + 1)
        return [self.value(depth + 1) for _ in range(self.below(4))]

    def mapping(self, depth: int = 0) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for _ in range(self.below(6)):
            key = KEYS[self.below(len(KEYS))] if self.byte() & 3 else self.text()
            out[key] = self.value(depth)
        return out


def adapter_items(data: bytes) -> tuple[str, list[dict[str, Any]]]:
    """Fuzzer bytes -> (adapter name, the stream of dict items to feed it).

    Byte 0 picks the adapter. If byte 1 is even, the rest is read as JSON lines (one
    item per line; lines that are not a JSON object are skipped), so real provider
    transcripts seed the corpus; if odd, items are built from the bytes with
    :class:`ByteReader`, from the providers' own vocabulary.
    """
    if len(data) < 2 or not ADAPTER_NAMES:
        return (ADAPTER_NAMES[0] if ADAPTER_NAMES else ""), []
    name = ADAPTER_NAMES[data[0] % len(ADAPTER_NAMES)]
    items: list[dict[str, Any]] = []
    if data[1] % 2 == 0:
        for line in data[2:].split(b"\n"):
            try:
                item = json.loads(line.decode("utf-8", "surrogateescape"))
            except (ValueError, RecursionError):
                continue
            if isinstance(item, dict):
                items.append(item)
    else:
        reader = ByteReader(data[2:])
        while reader.left() > 0 and len(items) < 64:
            items.append(reader.mapping())
    return name, items


_EVENT_TYPES = (Start, Delta, Ready, Result, Error, End)


def _events(out: object, where: str) -> Iterator[Any]:
    assert isinstance(out, list), f"{where} returned {type(out).__name__}, not a list"
    for event in out:
        assert isinstance(event, _EVENT_TYPES), f"{where} returned {event!r}"
        yield event


KNOWN_BUGS: dict[str, Callable[[BaseException], bool]] = {
    # (empty: "long-id", a provider id or tool name over the limits passed through to Start,
    # is fixed; its crash inputs stay in the corpus as regression checks)
}
"""Core/adapter bugs found by the fuzzer and reported, by name -> "is this that bug?".
With ``FUZZ_SKIP_KNOWN=1`` the fuzz targets pass over them, to look for other bugs."""


def known_bug(exc: BaseException) -> str | None:
    for name, matches in KNOWN_BUGS.items():
        if matches(exc):
            return name
    return None


def check_adapters(data: bytes) -> None:
    """Feed one adapter a stream of arbitrary dicts, then end it.

    Invariants: ``feed`` never raises on a dict item; it returns a list of event models;
    every event applies to a tracker without :class:`InvalidEvent`; ``end()`` likewise,
    and it ends the turn.
    """
    try:
        _check_adapters(data)
    except Exception as exc:
        if os.environ.get("FUZZ_SKIP_KNOWN") and known_bug(exc):
            return
        raise


def _check_adapters(data: bytes) -> None:
    name, items = adapter_items(data)
    if not name:
        return
    adapter = ADAPTERS[name]()
    tracker = ToolCallTracker()
    for index, item in enumerate(items):
        for event in _events(adapter.feed(item), f"{name}.feed(item {index})"):
            try:
                tracker.apply(event)
            except InvalidEvent as exc:
                raise AssertionError(f"{name}.feed({item!r}) produced {event!r}: {exc}") from exc
    for event in _events(adapter.end(), f"{name}.end()"):
        try:
            tracker.apply(event)
        except InvalidEvent as exc:
            raise AssertionError(f"{name}.end() produced {event!r}: {exc}") from exc
    for call in tracker.list():
        assert isinstance(call, ToolCall)
        if isinstance(call.error, ArgumentsTooLarge):
            assert call.args_text == ""
