"""CohereAdapter: the quirks of the v2 chat stream, re-chunking, limits, async drivers."""

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

from conftest import DEADLINE
from toolcall_tracker import (
    IncompleteArguments,
    Limits,
    ToolCallTracker,
    tool_call_streaming_state_machine,
)
from toolcall_tracker.adapters import CohereAdapter, CohereMalformedEvent, adapt, apply_stream

COHERE = Path(__file__).resolve().parents[2].parent / "shared" / "real-streams" / "new-formats"


def start(i: int, call_id: Any, name: Any, arguments: Any = "") -> dict[str, Any]:
    tool_call = {"id": call_id, "type": "function", "function": {"name": name}}
    if arguments is not None:
        tool_call["function"]["arguments"] = arguments
    return {"type": "tool-call-start", "index": i, "delta": {"message": {"tool_calls": tool_call}}}


def delta(i: int, text: Any) -> dict[str, Any]:
    message = {"tool_calls": {"function": {"arguments": text}}}
    return {"type": "tool-call-delta", "index": i, "delta": {"message": message}}


def end(i: int) -> dict[str, Any]:
    return {"type": "tool-call-end", "index": i}


def message_end(reason: str = "TOOL_CALL", **extra: Any) -> dict[str, Any]:
    return {"type": "message-end", "delta": {"finish_reason": reason, **extra}}


MESSAGE_START = {
    "id": "m1",
    "type": "message-start",
    "delta": {"message": {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": []}},
}
PLAN = {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "I will look."}}}


def run(items: Iterable[Any], adapter: CohereAdapter | None = None) -> Any:
    machine = tool_call_streaming_state_machine()
    apply_stream(machine, items, adapter or CohereAdapter())
    return machine


QUIRKS: list[tuple[str, list[Any], list[tuple[str, str, Any]]]] = [
    (
        "start straight to end, no delta: {}",
        [MESSAGE_START, PLAN, start(0, "now_1", "currentTime"), end(0), message_end()],
        [("now_1", "currentTime", {})],
    ),
    (
        "pretty-printed arguments",
        [
            start(0, "w_1", "weather"),
            delta(0, '{\n    "'),
            delta(0, 'location": "Tokyo"\n}'),
            end(0),
            message_end(),
        ],
        [("w_1", "weather", {"location": "Tokyo"})],
    ),
    (
        "arguments whole in tool-call-start",
        [start(0, "w_1", "weather", '{"city": "Oslo"}'), end(0), message_end()],
        [("w_1", "weather", {"city": "Oslo"})],
    ),
    (
        "tool-call-start without arguments at all",
        [start(0, "w_1", "weather", None), delta(0, "{}"), end(0), message_end()],
        [("w_1", "weather", {})],
    ),
    (
        "parallel calls, text and citations around them",
        [
            MESSAGE_START,
            PLAN,
            start(0, "a", "f"),
            delta(0, '{"x": 1}'),
            end(0),
            {"type": "content-delta", "index": 0, "delta": {"message": {"content": {}}}},
            start(1, "b", "g"),
            delta(1, '{"y": 2}'),
            end(1),
            {"type": "citation-start"},
            message_end(),
        ],
        [("a", "f", {"x": 1}), ("b", "g", {"y": 2})],
    ),
    (
        "tool_calls given as a one-element list",
        [
            {
                "type": "tool-call-start",
                "index": 0,
                "delta": {"message": {"tool_calls": [{"id": "a", "function": {"name": "f"}}]}},
            },
            end(0),
            message_end(),
        ],
        [("a", "f", {})],
    ),
]


@pytest.mark.parametrize(("items", "want"), [q[1:] for q in QUIRKS], ids=[q[0] for q in QUIRKS])
def test_quirk(items: list[Any], want: list[tuple[str, str, Any]]) -> None:
    machine = run(items)
    assert [(c.id, c.name, c.args) for c in machine.list()] == want
    assert all(c.status == "running" for c in machine.list())
    assert machine.end is not None
    assert machine.end.ok


FINISH = [
    ("TOOL_CALL", True),
    ("COMPLETE", True),
    ("STOP_SEQUENCE", True),
    ("MAX_TOKENS", False),
    ("TIMEOUT", False),
    ("ERROR", False),
    ("ERROR_TOXIC", False),
]


@pytest.mark.parametrize(("reason", "ok"), FINISH)
def test_finish_reason_decides_ok(reason: str, ok: bool) -> None:
    machine = run([start(0, "a", "f"), end(0), message_end(reason)])
    assert machine.end is not None
    assert (machine.end.ok, machine.end.reason) == (ok, reason)


def test_an_error_in_message_end_ends_not_ok() -> None:
    machine = run([start(0, "a", "f"), delta(0, '{"x"'), message_end("ERROR", error="overload")])
    assert machine.end is not None
    assert (machine.end.ok, machine.end.reason) == (False, "error: overload")
    assert isinstance(machine.list()[0].error, IncompleteArguments)


def test_max_tokens_mid_call_never_runs_it() -> None:
    machine = run([start(0, "a", "f"), delta(0, '{"x": "ab'), message_end("MAX_TOKENS")])
    (call,) = machine.list()
    assert isinstance(call.error, IncompleteArguments)
    assert call.args_text == '{"x": "ab'


def test_stream_ending_without_message_end_ends_not_ok() -> None:
    machine = run([start(0, "a", "f"), end(0)])
    assert machine.end is not None
    assert (machine.end.ok, machine.end.reason) == (False, "stream ended before message-end")


def test_ok_finish_reasons_are_configurable() -> None:
    machine = run([message_end("MAX_TOKENS")], CohereAdapter(ok_finish_reasons=("MAX_TOKENS",)))
    assert machine.end is not None
    assert machine.end.ok


# -- malformed items -------------------------------------------------------------------------


def test_non_string_arguments_fail_their_call_only() -> None:
    items = [start(0, "a", "f"), delta(0, {"x": 1}), end(0)]
    items += [start(1, "b", "g"), delta(1, "{}"), end(1), message_end()]
    first, second = run(items).list()
    assert isinstance(first.error, CohereMalformedEvent)
    assert (second.status, second.args) == ("running", {})


def test_a_call_without_name_fails() -> None:
    (call,) = run([start(0, "a", None), end(0), message_end()]).list()
    assert isinstance(call.error, CohereMalformedEvent)


def test_a_delta_before_its_start_fails_the_call() -> None:
    items = [delta(0, '{"x":'), start(0, "a", "f"), delta(0, "1}"), end(0), message_end()]
    (call,) = run(items).list()
    assert isinstance(call.error, CohereMalformedEvent)


def test_missing_and_reused_ids() -> None:
    items = [start(0, None, "f"), end(0), start(1, "cohere-call-0", "g"), end(1), message_end()]
    assert [c.id for c in run(items).list()] == ["cohere-call-0"]
    items = [start(1, "cohere-call-0", "g"), end(1), start(0, None, "f"), end(0), message_end()]
    assert [c.id for c in run(items).list()] == ["cohere-call-0", "cohere-call-0-2"]


@pytest.mark.parametrize(
    "junk",
    [
        None,
        0,
        "tool-call-start",
        {"type": "tool-call-start"},
        {"type": "tool-call-start", "index": 3, "delta": None},
        {"type": "tool-call-delta", "index": "0"},
        {"type": "tool-call-end", "index": None},
        {"type": None},
    ],
)
def test_junk_never_raises(junk: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, "toolcall_tracker.adapters")
    CohereAdapter().feed(junk)
    machine = run([junk, start(0, "a", "f"), delta(0, "{}"), end(0), message_end()])
    assert [(c.id, c.status) for c in machine.list() if c.id == "a"] == [("a", "running")]


def test_custom_limits() -> None:
    limits = Limits(max_id_chars=10, max_name_chars=12, max_args_chars=16)
    items = [start(0, "i" * 11, "n" * 13), end(0)]
    items += [start(1, "ok", "g"), delta(1, '{"s": "' + "x" * 20 + '"}'), end(1), message_end()]
    machine = tool_call_streaming_state_machine(limits=limits)
    apply_stream(machine, items, CohereAdapter())
    first, second = machine.list()
    assert (first.id, first.name, first.args) == ("cohere-cal", "nnnn...(cut)", {})
    assert second.error is not None
    assert second.error.kind == "arguments_too_large"


# -- re-chunking -----------------------------------------------------------------------------

ARGS = {"location": "Tōkyō", "units": ["c", "f"], "q": 'say "hi"\n', "n": None}


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_chunking_gives_the_same_calls(data: st.DataObject) -> None:
    body = json.dumps(ARGS, ensure_ascii=False, indent=data.draw(st.sampled_from([None, 4])))
    cuts = sorted(data.draw(st.sets(st.integers(0, len(body)), max_size=30)))
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    whole_first = data.draw(st.booleans())
    head = start(0, "a", "f", pieces[0] if whole_first else "")
    rest = pieces[1:] if whole_first else pieces
    items = [MESSAGE_START, PLAN, head, *(delta(0, p) for p in rest), end(0)]
    items += [start(1, "b", "g"), end(1), message_end()]
    first, second = run(items).list()
    assert (first.args_text, first.args) == (body, ARGS)
    assert second.args == {}


# -- async, on asyncio and trio --------------------------------------------------------------


@pytest.mark.anyio
async def test_consume_adapt_on_each_backend(anyio_backend: str) -> None:
    items = [MESSAGE_START, PLAN, start(0, "a", "f"), delta(0, '{"x": 1}'), end(0)]
    items += [start(1, "b", "g"), end(1), message_end()]

    async def source() -> AsyncIterator[Any]:
        for item in items:
            yield item

    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            await tracker.consume(adapt(source(), CohereAdapter()))
            assert [(c.id, c.args) for c in tracker.list()] == [("a", {"x": 1}), ("b", {})]
            assert tracker.end is not None
            assert (tracker.end.ok, tracker.end.reason) == (True, "TOOL_CALL")


@pytest.mark.anyio
async def test_a_call_is_ready_at_its_tool_call_end(anyio_backend: str) -> None:
    send, receive = anyio.create_memory_object_stream[Any](100)
    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker, anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, adapt(receive, CohereAdapter()))
            async with send:
                for item in [start(0, "a", "f"), delta(0, '{"x": 1}'), end(0)]:
                    await send.send(item)
                assert (await tracker.wait_ready("a")).args == {"x": 1}
                for item in [start(1, "b", "g"), end(1), message_end()]:
                    await send.send(item)


# -- differential: the cohere client's own stream parser, when installed ----------------------


@pytest.mark.skipif(not (COHERE / "cohere").is_dir(), reason="the recordings are absent")
@pytest.mark.parametrize(
    "name",
    sorted(p.name for p in (COHERE / "cohere").glob("*")) if (COHERE / "cohere").is_dir() else [],
)
def test_the_cohere_client_gives_the_same_calls(name: str) -> None:
    cohere = pytest.importorskip("cohere")
    import httpx

    path = COHERE / "cohere" / name
    text = path.read_text()
    if path.suffix == ".jsonl":
        text = "".join(f"data: {line}\n\n" for line in text.splitlines() if line.strip())
    body = text.encode()
    transport = httpx.MockTransport(
        lambda _: httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)
    )
    client = cohere.ClientV2(api_key="x", httpx_client=httpx.Client(transport=transport))
    stream = client.chat_stream(model="m", messages=[{"role": "user", "content": "x"}])
    typed = run(stream)
    data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    plain = run(json.loads(d) for d in data if d != "[DONE]")
    assert [(c.id, c.name, c.args) for c in typed.list()] == [
        (c.id, c.name, c.args) for c in plain.list()
    ]
    assert typed.end == plain.end
