"""OllamaAdapter: native /api/chat lines, the OpenAI-compatible endpoint, feedback, limits."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import DEADLINE
from toolcall_tracker import Limits, Status, ToolCallTracker, tool_call_streaming_state_machine
from toolcall_tracker.adapters import (
    OllamaAdapter,
    OllamaMalformedToolCall,
    OpenAIChatAdapter,
    adapt,
    apply_stream,
)
from toolcall_tracker.feedback import ollama_messages

OLLAMA = (
    Path(__file__).resolve().parents[2].parent
    / "shared"
    / "real-streams"
    / "new-formats"
    / "ollama"
)


def line(*calls: dict[str, Any], content: str = "", done: bool = False, **extra: Any) -> Any:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = list(calls)
    return {"model": "llama3.2", "message": message, "done": done, **extra}


def fn(name: Any, arguments: Any = None, **extra: Any) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name}
    if arguments is not None:
        function["arguments"] = arguments
    return {"function": function, **extra}


DONE = line(content="", done=True, done_reason="stop")


def run(items: Iterable[Any], adapter: OllamaAdapter | None = None) -> Any:
    machine = tool_call_streaming_state_machine()
    apply_stream(machine, items, adapter or OllamaAdapter())
    return machine


QUIRKS: list[tuple[str, list[Any], list[tuple[str, str, Any]]]] = [
    (
        "whole call with object arguments and no id, then done with stop",
        [line(fn("get_weather", {"city": "Tokyo"})), line(content="It is 18°C."), DONE],
        [("ollama-call-0", "get_weather", {"city": "Tokyo"})],
    ),
    (
        "parallel calls in one line, and a call in a later line",
        [line(fn("f", {"a": 1}), fn("f", {"a": 2})), line(fn("g", {})), DONE],
        [
            ("ollama-call-0", "f", {"a": 1}),
            ("ollama-call-1", "f", {"a": 2}),
            ("ollama-call-2", "g", {}),
        ],
    ),
    (
        "no arguments at all means {}",
        [line(fn("now")), DONE],
        [("ollama-call-0", "now", {})],
    ),
    (
        "arguments as a JSON string",
        [line(fn("f", '{"x": [1, 2]}')), DONE],
        [("ollama-call-0", "f", {"x": [1, 2]})],
    ),
    (
        "a server-given id is kept; a synthetic id never collides with one",
        [line(fn("f", {}, id="ollama-call-1"), fn("g", {})), DONE],
        [("ollama-call-1", "f", {}), ("ollama-call-1-2", "g", {})],
    ),
    (
        "thinking and text lines are ignored",
        [line(content="", thinking="hmm"), line(content="Let me see."), line(fn("f", {})), DONE],
        [("ollama-call-0", "f", {})],
    ),
]


@pytest.mark.parametrize(("items", "want"), [q[1:] for q in QUIRKS], ids=[q[0] for q in QUIRKS])
def test_quirk(items: list[Any], want: list[tuple[str, str, Any]]) -> None:
    machine = run(items)
    assert [(c.id, c.name, c.args) for c in machine.list()] == want
    assert all(c.status == "running" for c in machine.list())
    assert machine.end is not None
    assert (machine.end.ok, machine.end.reason) == (True, "stop")


@pytest.mark.parametrize(
    ("last", "ok", "reason"),
    [
        (line(done=True, done_reason="stop"), True, "stop"),
        (line(done=True), True, "done"),
        (line(done=True, done_reason="length"), False, "length"),
        (line(done=True, done_reason="unload"), False, "unload"),
        ({"error": "model 'x' not found"}, False, "error: model 'x' not found"),
    ],
)
def test_how_the_turn_ends(last: Any, ok: bool, reason: str) -> None:
    machine = run([line(fn("f", {})), last])
    assert machine.end is not None
    assert (machine.end.ok, machine.end.reason) == (ok, reason)


def test_a_stream_without_done_ends_not_ok() -> None:
    machine = run([line(fn("f", {}))])
    assert machine.end is not None
    assert (machine.end.ok, machine.end.reason) == (False, "stream ended before done")


def test_ids_are_stable_across_replays() -> None:
    items = [line(fn("f", {"a": 1})), line(fn("f", {"a": 2})), DONE]
    assert [c.id for c in run(items).list()] == [c.id for c in run(items).list()]


@pytest.mark.parametrize(
    ("call", "field"),
    [(fn(None, {}), "function.name"), (fn("f", {"x": float("nan")}), "function.arguments")],
)
def test_malformed_calls_fail_alone(call: dict[str, Any], field: str) -> None:
    bad, good = run([line(call, fn("g", {"ok": True})), DONE]).list()
    assert isinstance(bad.error, OllamaMalformedToolCall)
    assert bad.error.field == field
    assert (good.status, good.args) == (Status.RUNNING, {"ok": True})


@pytest.mark.parametrize(
    "junk",
    [None, 3, "done", [], {}, {"message": None}, {"message": {"tool_calls": "x"}}, line({})],
)
def test_junk_never_raises(junk: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, "toolcall_tracker.adapters")
    OllamaAdapter().feed(junk)
    machine = run([junk, line(fn("f", {})), DONE])
    assert [(c.name, c.args) for c in machine.list()] == [("f", {})]


def test_custom_limits() -> None:
    limits = Limits(max_id_chars=8, max_name_chars=12, max_args_chars=20)
    items = [line(fn("n" * 13, {}), fn("g", {"s": "x" * 30}, id="i" * 9)), DONE]
    machine = tool_call_streaming_state_machine(limits=limits)
    apply_stream(machine, items, OllamaAdapter())
    first, second = machine.list()
    assert (first.id, first.name, first.args) == ("ollama-c", "nnnn...(cut)", {})
    assert len(second.id) <= 8
    assert second.id != first.id
    assert second.error is not None
    assert second.error.kind == "arguments_too_large"
    assert OllamaAdapter(limits=Limits(max_calls=1)).feed(line(fn("a"), fn("b")))[0].name == "a"


# -- the OpenAI-compatible endpoint (/v1/chat/completions) --------------------------------


def chunk(tool_calls: list[Any] | None = None, finish: str | None = None) -> dict[str, Any]:
    delta: dict[str, Any] = {"role": "assistant", "content": ""}
    if tool_calls:
        delta["tool_calls"] = tool_calls
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def whole(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "index": 0,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


COMPAT = [
    chunk([whole("call_a", "get_weather", '{"city":"Paris"}')]),
    chunk([whole("call_b", "get_weather", '{"city":"Rome"}')]),  # index 0 again (ollama#15457)
    chunk(finish="stop"),
]


@pytest.mark.parametrize("adapter", [OllamaAdapter, OpenAIChatAdapter])
def test_openai_compatible_chunks_all_at_index_zero_stay_apart(adapter: Any) -> None:
    machine = tool_call_streaming_state_machine()
    apply_stream(machine, COMPAT, adapter())
    assert [(c.id, c.args, c.status) for c in machine.list()] == [
        ("call_a", {"city": "Paris"}, Status.RUNNING),
        ("call_b", {"city": "Rome"}, Status.RUNNING),
    ]
    assert machine.end is not None
    assert (machine.end.ok, machine.end.reason) == (True, "stop")


def test_openai_compatible_stream_cut_by_length_fails_its_calls() -> None:
    items = [chunk([whole("call_a", "f", '{"x": ')]), chunk(finish="length")]
    machine = run(items)
    (call,) = machine.list()
    assert call.status is Status.ERROR
    assert machine.end is not None
    assert not machine.end.ok


# -- feeding results back: tool_name, not ids ----------------------------------------------


def test_ollama_messages_name_each_reply_by_tool_name() -> None:
    machine = run([line(fn("get_weather", {"city": "Tokyo"}), fn("now")), DONE])
    first, second = machine.list()
    done = [
        first.model_copy(update={"status": Status.DONE, "result": {"temp": 18}}),
        second.model_copy(update={"status": Status.DONE, "result": "12:00"}),
    ]
    assistant, *replies = ollama_messages(done)
    assert assistant == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"function": {"name": "get_weather", "arguments": {"city": "Tokyo"}}},
            {"function": {"name": "now", "arguments": {}}},
        ],
    }
    assert replies == [
        {"role": "tool", "content": '{"temp":18}', "tool_name": "get_weather"},
        {"role": "tool", "content": "12:00", "tool_name": "now"},
    ]
    assert ollama_messages(done, include_calls=False) == replies
    assert ollama_messages([]) == []
    with pytest.raises(ValueError, match="not finished"):
        ollama_messages(machine.list())


def test_ollama_messages_validate_against_the_client_when_installed() -> None:
    ollama = pytest.importorskip("ollama")
    (call,) = run([line(fn("f", {"a": 1})), DONE]).list()
    messages = ollama_messages([call.model_copy(update={"status": Status.DONE, "result": 1})])
    for message in messages:
        ollama.Message.model_validate(message)


# -- async, on asyncio and trio ---------------------------------------------------------------


@pytest.mark.anyio
async def test_consume_adapt_on_each_backend(anyio_backend: str) -> None:
    items = [line(content="Checking"), line(fn("f", {"a": 1}), fn("g", {})), DONE]

    async def source() -> AsyncIterator[Any]:
        for item in items:
            yield item

    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            await tracker.consume(adapt(source(), OllamaAdapter()))
            assert [(c.name, c.args) for c in tracker.list()] == [("f", {"a": 1}), ("g", {})]
            assert tracker.end is not None
            assert tracker.end.ok


@pytest.mark.anyio
async def test_a_call_is_ready_as_soon_as_its_line_arrives(anyio_backend: str) -> None:
    send, receive = anyio.create_memory_object_stream[Any](10)
    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker, anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, adapt(receive, OllamaAdapter()))
            async with send:
                await send.send(line(fn("f", {"a": 1})))
                assert (await tracker.wait_ready("ollama-call-0")).args == {"a": 1}
                await send.send(DONE)


# -- differential: the ollama client over httpx.MockTransport, when installed -----------------


@pytest.mark.skipif(not OLLAMA.is_dir(), reason="the recordings are absent")
@pytest.mark.parametrize(
    "name", sorted(p.name for p in OLLAMA.glob("*.jsonl")) if OLLAMA.is_dir() else []
)
def test_the_ollama_client_gives_the_same_calls(name: str) -> None:
    ollama = pytest.importorskip("ollama")
    import httpx

    body = (OLLAMA / name).read_bytes()
    transport = httpx.MockTransport(
        lambda _: httpx.Response(
            200, headers={"content-type": "application/x-ndjson"}, content=body
        )
    )
    client = ollama.Client(host="http://ollama.invalid", transport=transport)
    stream = client.chat(model="m", messages=[{"role": "user", "content": "x"}], stream=True)
    typed = run(stream)
    plain = run(json.loads(text) for text in body.decode().splitlines() if text.strip())
    assert [(c.id, c.name, c.args) for c in typed.list()] == [
        (c.id, c.name, c.args) for c in plain.list()
    ]
    assert typed.end == plain.end
