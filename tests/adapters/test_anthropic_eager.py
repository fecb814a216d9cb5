"""Anthropic fine-grained tool streaming (``eager_input_streaming`` / the beta header).

Input streams without server-side JSON validation: it can be invalid at
``content_block_stop``, or cut off by ``max_tokens`` with no ``content_block_stop``. Such a
call never runs, keeps its raw text, and ``anthropic_messages`` sends that text back
wrapped as ``{"INVALID_JSON": raw}``, as Anthropic's documentation advises.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import DEADLINE
from toolcall_tracker import (
    IncompleteArguments,
    InvalidArguments,
    Limits,
    Status,
    ToolCallTracker,
    tool_call_streaming_state_machine,
)
from toolcall_tracker.adapters import AnthropicAdapter, adapt, apply_stream
from toolcall_tracker.feedback import anthropic_messages

EAGER = (
    Path(__file__).resolve().parents[2].parent
    / "shared"
    / "real-streams"
    / "new-formats"
    / "anthropic_eager"
)


def block_start(i: int, call_id: str, name: str) -> dict[str, Any]:
    block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    return {"type": "content_block_start", "index": i, "content_block": block}


def part(i: int, text: str) -> dict[str, Any]:
    delta = {"type": "input_json_delta", "partial_json": text}
    return {"type": "content_block_delta", "index": i, "delta": delta}


def block_stop(i: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": i}


def finish(reason: str) -> list[dict[str, Any]]:
    return [{"type": "message_delta", "delta": {"stop_reason": reason}}, {"type": "message_stop"}]


def run(items: list[Any]) -> Any:
    machine = tool_call_streaming_state_machine()
    apply_stream(machine, items, AnthropicAdapter())
    return machine


QUIRKS: list[tuple[str, list[Any], str, type, str]] = [
    (
        "invalid JSON at content_block_stop",
        [
            block_start(0, "t1", "f"),
            part(0, '{"a": tru'),
            part(0, "e,}"),
            block_stop(0),
            *finish("tool_use"),
        ],
        '{"a": true,}',
        InvalidArguments,
        "tool_use",
    ),
    (
        "raw newline inside a string",
        [
            block_start(0, "t1", "f"),
            part(0, '{"text": "line one\nline two"}'),
            block_stop(0),
            *finish("tool_use"),
        ],
        '{"text": "line one\nline two"}',
        InvalidArguments,
        "tool_use",
    ),
    (
        "cut by max_tokens, no content_block_stop",
        [block_start(0, "t1", "f"), part(0, '{"lines": ["a", "b'), *finish("max_tokens")],
        '{"lines": ["a", "b',
        IncompleteArguments,
        "max_tokens",
    ),
    (
        "cut, and the stream ends with no message_stop",
        [block_start(0, "t1", "f"), part(0, '{"lines": ["a'), {"type": "ping"}],
        '{"lines": ["a',
        IncompleteArguments,
        "stream ended before message_stop",
    ),
]


@pytest.mark.parametrize(
    ("items", "raw", "error", "reason"), [q[1:] for q in QUIRKS], ids=[q[0] for q in QUIRKS]
)
def test_invalid_or_cut_input_never_runs_and_goes_back_wrapped(
    items: list[Any], raw: str, error: type, reason: str
) -> None:
    machine = run(items)
    (call,) = machine.list()
    assert call.status is Status.ERROR
    assert isinstance(call.error, error)
    assert call.args_text == raw  # the raw text is kept
    assert machine.end is not None
    assert machine.end.reason == reason
    assistant, user = anthropic_messages(machine.list())
    assert assistant["content"][0]["input"] == {"INVALID_JSON": raw}
    assert user["content"][0]["is_error"] is True


def test_a_valid_call_beside_an_invalid_one_still_runs_and_goes_back_as_parsed() -> None:
    items = [block_start(0, "bad", "f"), part(0, "{oops"), block_stop(0)]
    items += [block_start(1, "good", "g"), part(1, '{"x": 1}'), block_stop(1)]
    machine = run(items + finish("tool_use"))
    bad, good = machine.list()
    assert (bad.status, good.status) == (Status.ERROR, Status.RUNNING)
    good = good.model_copy(update={"status": Status.DONE, "result": "ok"})
    assistant, _ = anthropic_messages([bad, good])
    assert [b["input"] for b in assistant["content"]] == [{"INVALID_JSON": "{oops"}, {"x": 1}]


def test_argument_less_call_still_sends_an_empty_input() -> None:
    machine = run([block_start(0, "t1", "f"), block_stop(0), *finish("tool_use")])
    (call,) = machine.list()
    done = call.model_copy(update={"status": Status.DONE, "result": 1})
    assistant, _ = anthropic_messages([done])
    assert assistant["content"][0]["input"] == {}


def test_limits_bound_a_runaway_eager_input() -> None:
    machine = tool_call_streaming_state_machine(limits=Limits(max_args_chars=32))
    items = [block_start(0, "t1", "f"), *(part(0, '"' + "x" * 10) for _ in range(10))]
    apply_stream(machine, [*items, *finish("max_tokens")], AnthropicAdapter())
    (call,) = machine.list()
    assert call.error is not None
    assert call.error.kind == "arguments_too_large"


# Eager input arrives in large, arbitrary pieces: any split gives the same call.
BODY = '{"filename": "taxes.txt", "lines_of_text": [\n"# GUIDE",\n"",\n"## Ōne \\"q\\""\n]}'


@settings(max_examples=120, deadline=None)
@given(st.sets(st.integers(0, len(BODY)), max_size=20))
def test_any_split_of_eager_input_gives_the_same_call(cuts: set[int]) -> None:
    points = sorted(cuts)
    pieces = [BODY[a:b] for a, b in zip([0, *points], [*points, len(BODY)], strict=True)]
    items = [block_start(0, "t1", "make_file"), *(part(0, p) for p in pieces), block_stop(0)]
    (call,) = run(items + finish("tool_use")).list()
    assert (call.args_text, call.args) == (BODY, json.loads(BODY))


@pytest.mark.anyio
async def test_cut_call_is_failed_at_the_end_on_each_backend(anyio_backend: str) -> None:
    items = [block_start(0, "t1", "f"), part(0, '{"a": "b'), *finish("max_tokens")]

    async def source() -> AsyncIterator[Any]:
        for item in items:
            yield item

    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            await tracker.consume(adapt(source(), AnthropicAdapter()))
            (call,) = tracker.list()
            assert isinstance(call.error, IncompleteArguments)
            assert tracker.end is not None
            assert not tracker.end.ok


# -- differential: the official client, with the fine-grained beta header ----------------


@pytest.mark.skipif(not EAGER.is_dir(), reason=f"{EAGER} is absent")
@pytest.mark.parametrize(
    "name", sorted(p.name for p in EAGER.glob("*.sse")) if EAGER.is_dir() else []
)
def test_matches_the_official_client_with_the_beta_header(name: str) -> None:
    anthropic = pytest.importorskip("anthropic")
    httpx2 = pytest.importorskip("httpx2")
    body = (EAGER / name).read_bytes()

    def handler(request: Any) -> Any:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    client = anthropic.Anthropic(
        api_key="x",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    machine = tool_call_streaming_state_machine()
    with client.beta.messages.stream(
        model="m",
        max_tokens=1024,
        messages=[{"role": "user", "content": "x"}],
        extra_headers={"anthropic-beta": "fine-grained-tool-streaming-2025-05-14"},
    ) as stream:
        apply_stream(machine, stream, AnthropicAdapter())
        final = stream.get_final_message()
    official = [b for b in final.content if b.type == "tool_use"]
    calls = machine.list()
    assert [(c.id, c.name) for c in calls] == [(b.id, b.name) for b in official]
    assert machine.end is not None
    assert machine.end.reason == final.stop_reason
    for call, block in zip(calls, official, strict=True):
        if final.stop_reason == "max_tokens":  # the client keeps a partial parse; never run
            assert call.status is Status.ERROR
            assert isinstance(call.error, IncompleteArguments)
        else:
            assert (call.status, call.args) == (Status.RUNNING, block.input)
