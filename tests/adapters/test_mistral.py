"""MistralAdapter: the mistralai SDK's stream objects and Mistral's wire quirks.

``mistralai`` is not a test dependency; its stream models are mirrored below (same field
defaults: a missing tool-call ``id`` is ``"null"``, a missing ``index`` is ``0``, arguments
may be an object), and the real client is used too when it is installed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from conftest import DEADLINE
from toolcall_tracker import Limits, Status, ToolCallTracker, tool_call_streaming_state_machine
from toolcall_tracker.adapters import MistralAdapter, adapt, apply_stream

MISTRAL = (
    Path(__file__).resolve().parents[2].parent
    / "shared"
    / "real-streams"
    / "new-formats"
    / "mistral"
)


# -- stand-ins for mistralai.models (field names and defaults as the SDK has them) ---------


class FunctionCall(BaseModel):
    name: str
    arguments: dict[str, Any] | str


class ToolCall(BaseModel):
    id: str | None = "null"
    type: str | None = None
    function: FunctionCall
    index: int | None = 0


class DeltaMessage(BaseModel):
    role: str | None = None
    content: str | None = None
    tool_calls: list[ToolCall] | None = None


class CompletionResponseStreamChoice(BaseModel):
    index: int
    delta: DeltaMessage
    finish_reason: str | None


class CompletionChunk(BaseModel):
    id: str
    model: str
    choices: list[CompletionResponseStreamChoice]


class CompletionEvent(BaseModel):
    data: CompletionChunk


def event(*calls: dict[str, Any], finish: str | None = None, content: str | None = "") -> Any:
    """A CompletionEvent as the SDK builds it from the wire JSON (unset fields stay unset)."""
    delta: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        delta["tool_calls"] = list(calls)
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return CompletionEvent.model_validate(
        {"data": {"id": "c", "model": "mistral-small", "choices": [choice]}}
    )


def wire(*calls: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    delta: dict[str, Any] = {"role": "assistant", "content": None}
    if calls:
        delta["tool_calls"] = list(calls)
    return {"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def fn(name: str, arguments: Any, **extra: Any) -> dict[str, Any]:
    return {"function": {"name": name, "arguments": arguments}, **extra}


def run(items: Iterable[Any], adapter: MistralAdapter | None = None) -> Any:
    machine = tool_call_streaming_state_machine()
    apply_stream(machine, items, adapter or MistralAdapter())
    return machine


QUIRKS: list[tuple[str, list[Any], list[tuple[str, str, Any]]]] = [
    (
        "SDK: whole call in the finish chunk, no index, id given",
        [
            event(content=""),
            event(fn("weather", '{"location":"SF"}', id="gSIMJiOkT"), finish="tool_calls"),
        ],
        [("gSIMJiOkT", "weather", {"location": "SF"})],
    ),
    (
        "SDK: missing id arrives as 'null'",
        [event(fn("test-tool", '{"value":"Sparkle Day"}'), finish="tool_calls")],
        [("call_0_0", "test-tool", {"value": "Sparkle Day"})],
    ),
    (
        "SDK: two whole calls to one tool, no ids, no index (both default to 0)",
        [event(fn("f", '{"a":1}'), fn("f", '{"a":2}'), finish="tool_calls")],
        [("call_0_0", "f", {"a": 1}), ("call_0_1", "f", {"a": 2})],
    ),
    (
        "SDK: arguments as an object are serialised",
        [event(fn("f", {"a": [1, "ü"]}, id="x1"), finish="tool_calls")],
        [("x1", "f", {"a": [1, "ü"]})],
    ),
    (
        "SDK: an explicit index is kept; incremental text with an empty name",
        [
            event(fn("search", "", id="t1", index=0)),
            event({"function": {"name": "", "arguments": '{"q": "Berlin"}'}, "index": 0}),
            event(finish="tool_calls"),
        ],
        [("t1", "search", {"q": "Berlin"})],
    ),
    (
        "wire: id 'null' is missing too, arguments object serialised",
        [wire(fn("f", {"x": 1}, id="null"), finish="tool_calls")],
        [("call_0_0", "f", {"x": 1})],
    ),
    (
        "wire: the CompletionEvent shape as a dict",
        [{"data": wire(fn("f", "{}", id="a"), finish="stop")}],
        [("a", "f", {})],
    ),
]


@pytest.mark.parametrize(("items", "want"), [q[1:] for q in QUIRKS], ids=[q[0] for q in QUIRKS])
def test_quirk(items: list[Any], want: list[tuple[str, str, Any]]) -> None:
    machine = run(items)
    assert [(c.id, c.name, c.args) for c in machine.list()] == want
    assert all(c.status == Status.RUNNING for c in machine.list())
    assert machine.end is not None
    assert machine.end.ok


@pytest.mark.parametrize(
    ("finish", "ok"),
    [
        ("tool_calls", True),
        ("stop", True),
        ("length", False),
        ("model_length", False),
        ("error", False),
    ],
)
def test_finish_reason_decides_ok(finish: str, ok: bool) -> None:
    machine = run([event(fn("f", "{}", id="a")), event(finish=finish)])
    assert machine.end is not None
    assert machine.end.ok is ok
    assert machine.list()[0].status == (Status.RUNNING if ok else Status.ERROR)


@pytest.mark.parametrize("junk", [None, "data: {}", 5, [], {"data": None}, {"choices": "x"}])
def test_junk_never_raises(junk: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, "toolcall_tracker.adapters")
    MistralAdapter().feed(junk)
    machine = run([junk, event(fn("f", "{}", id="a"), finish="tool_calls")])
    assert [c.id for c in machine.list()] == ["a"]


def test_an_object_argument_json_cannot_hold_fails_the_call() -> None:
    (call,) = run([wire(fn("f", {"x": float("nan")}, id="a"), finish="tool_calls")]).list()
    assert call.status == Status.ERROR


def test_custom_limits() -> None:
    limits = Limits(max_id_chars=6, max_name_chars=12, max_args_chars=16)
    items = [
        event(
            fn("n" * 13, "{}", id="i" * 7), fn("g", {"s": "x" * 20}, id="ok"), finish="tool_calls"
        )
    ]
    machine = tool_call_streaming_state_machine(limits=limits)
    apply_stream(machine, items, MistralAdapter())
    first, second = machine.list()
    assert len(first.id) <= 6
    assert first.name == "nnnn...(cut)"
    assert second.error is not None
    assert second.error.kind == "arguments_too_large"


ARGS = {"query": "current Berlin weather", "n": [1, 2.5], "u": 'ß"\\'}


@settings(max_examples=120, deadline=None)
@given(st.sets(st.integers(0, len(json.dumps(ARGS, ensure_ascii=False))), max_size=25))
def test_any_chunking_of_incremental_arguments(cuts: set[int]) -> None:
    body = json.dumps(ARGS, ensure_ascii=False)
    points = sorted(cuts)
    pieces = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    items = [event(fn("webSearchTool", "", id="t1", index=0))]
    items += [event({"function": {"name": "", "arguments": p}, "index": 0}) for p in pieces]
    (call,) = run([*items, event(finish="tool_calls")]).list()
    assert (call.args_text, call.args) == (body, ARGS)


@pytest.mark.anyio
async def test_consume_adapt_on_each_backend(anyio_backend: str) -> None:
    items = [
        event(content="Let me check"),
        event(fn("f", '{"a":1}'), fn("g", {}), finish="tool_calls"),
    ]

    async def source() -> AsyncIterator[Any]:
        for item in items:
            yield item

    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            await tracker.consume(adapt(source(), MistralAdapter()))
            assert [(c.id, c.name, c.args) for c in tracker.list()] == [
                ("call_0_0", "f", {"a": 1}),
                ("call_0_1", "g", {}),
            ]
            assert tracker.end is not None
            assert tracker.end.ok


# -- differential: the real mistralai client over httpx.MockTransport, when installed -----------


@pytest.mark.skipif(not MISTRAL.is_dir(), reason="the recordings are absent")
@pytest.mark.parametrize(
    "name", sorted(p.name for p in MISTRAL.glob("*")) if MISTRAL.is_dir() else []
)
def test_the_mistralai_client_gives_the_same_calls(name: str) -> None:
    mistralai = pytest.importorskip("mistralai")
    import httpx

    mistral_cls = getattr(mistralai, "Mistral", None)
    if mistral_cls is None:
        mistral_cls = pytest.importorskip("mistralai.client").Mistral
    path = MISTRAL / name
    text = path.read_text()
    if path.suffix == ".jsonl":
        text = "".join(f"data: {line}\n\n" for line in text.splitlines() if line.strip())
    body = text.encode()
    transport = httpx.MockTransport(
        lambda _: httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)
    )
    client = mistral_cls(api_key="x", client=httpx.Client(transport=transport))
    typed = run(client.chat.stream(model="m", messages=[{"role": "user", "content": "x"}]))
    data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    plain = run(json.loads(d) for d in data if d != "[DONE]")
    assert [(c.id, c.name, c.args) for c in typed.list()] == [
        (c.id, c.name, c.args) for c in plain.list()
    ]
    assert typed.end == plain.end
