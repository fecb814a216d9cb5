"""LiteLLM's OpenAI-shaped ``ModelResponseStream`` chunks through ``OpenAIChatAdapter``.

``litellm`` is large and not a test dependency: its chunk models are mirrored below
(``ModelResponseStream`` / ``StreamingChoices`` / ``Delta`` / ``ChatCompletionDeltaToolCall``
/ ``Function``, pydantic models read by attribute), and the real classes are used too when
the package is installed (with ``LITELLM_LOCAL_MODEL_COST_MAP=True``: no network).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from conftest import DEADLINE
from toolcall_tracker import Limits, Status, ToolCallTracker, tool_call_streaming_state_machine
from toolcall_tracker.adapters import OpenAIChatAdapter, adapt, apply_stream

LITELLM = (
    Path(__file__).resolve().parents[2].parent
    / "shared"
    / "real-streams"
    / "new-formats"
    / "litellm"
)


class Function(BaseModel):
    arguments: str = ""
    name: str | None = None


class ChatCompletionDeltaToolCall(BaseModel):
    id: str | None = None
    function: Function
    type: str | None = None
    index: int


class Delta(BaseModel):
    content: str | None = None
    role: str | None = None
    function_call: Any = None
    tool_calls: list[ChatCompletionDeltaToolCall] | None = None


class StreamingChoices(BaseModel):
    finish_reason: str | None = None
    index: int = 0
    delta: Delta
    logprobs: Any = None


class ModelResponseStream(BaseModel):
    id: str
    choices: list[StreamingChoices]
    created: int = 0
    model: str | None = None
    object: str = "chat.completion.chunk"
    system_fingerprint: str | None = None


def real_model() -> Callable[..., Any] | None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        from litellm.types.utils import ModelResponseStream as Real  # type: ignore[import-not-found]
    except ImportError:
        return None
    return Real  # type: ignore[no-any-return]


def chunk(
    *calls: dict[str, Any], finish: str | None = None, content: str | None = ""
) -> dict[str, Any]:
    delta: dict[str, Any] = {"content": content, "role": "assistant"}
    if calls:
        delta["tool_calls"] = list(calls)
    return {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def tc(index: int, call_id: str | None, name: str | None, arguments: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "index": index,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


def run(items: Iterable[Any]) -> Any:
    machine = tool_call_streaming_state_machine()
    apply_stream(machine, items, OpenAIChatAdapter())
    return machine


QUIRKS: list[tuple[str, list[dict[str, Any]], list[tuple[str, str, Any]], bool]] = [
    (
        "the only call has index 1 (Anthropic's block index), content '' beside it",
        [
            chunk(content="Let me query."),
            chunk(tc(1, "toolu_1", "sql_query", "")),
            chunk(tc(1, None, None, "")),  # a fragment with null id and null name
            chunk(tc(1, None, None, '{"query": "SELECT')),
            chunk(tc(1, None, None, ' 1;"}')),
            chunk(finish="tool_calls", content=None),
        ],
        [("toolu_1", "sql_query", {"query": "SELECT 1;"})],
        True,
    ),
    (
        "a new id on every fragment, empty name, ends with stop",
        [
            chunk(tc(0, "chatcmpl-tool-a", "get_weather", "")),
            chunk(tc(0, "call_b", "", '{"city": ')),
            chunk(tc(0, "call_c", "", '"Paris"}')),
            chunk(finish="stop"),
        ],
        [("chatcmpl-tool-a", "get_weather", {"city": "Paris"})],
        True,
    ),
    (
        "parallel calls stay apart (no concatenated JSON)",
        [
            chunk(tc(0, "a", "f", '{"x":'), tc(1, "b", "g", '{"y":')),
            chunk(tc(1, None, None, "2}"), tc(0, None, None, "1}")),
            chunk(finish="tool_calls"),
        ],
        [("a", "f", {"x": 1}), ("b", "g", {"y": 2})],
        True,
    ),
    (
        "parallel calls with ids and names only on their first fragment",
        [
            chunk(tc(0, "a", "f", "")),
            chunk(tc(0, None, None, "{}")),
            chunk(tc(1, "b", "f", "")),
            chunk(tc(1, None, None, '{"k": 1}')),
            chunk(finish="tool_calls"),
        ],
        [("a", "f", {}), ("b", "f", {"k": 1})],
        True,
    ),
    (
        "cut by length: nothing runs",
        [chunk(tc(0, "a", "f", '{"x": "ab')), chunk(finish="length")],
        [],
        False,
    ),
]


@pytest.mark.parametrize("kind", ["dict", "mirror", "litellm"])
@pytest.mark.parametrize(
    ("items", "want", "ok"), [q[1:] for q in QUIRKS], ids=[q[0] for q in QUIRKS]
)
def test_quirk(kind: str, items: list[dict[str, Any]], want: list[Any], ok: bool) -> None:
    if kind == "dict":
        feed: list[Any] = items
    else:
        model = ModelResponseStream if kind == "mirror" else real_model()
        if model is None:
            pytest.skip("litellm is not installed")
        feed = [model(**item) for item in items]
    machine = run(feed)
    running = [(c.id, c.name, c.args) for c in machine.list() if c.status == Status.RUNNING]
    assert running == want
    assert machine.end is not None
    assert machine.end.ok is ok


def recorded() -> list[str]:
    return sorted(p.name for p in LITELLM.glob("*")) if LITELLM.is_dir() else []


def recorded_chunks(name: str) -> list[dict[str, Any]]:
    text = (LITELLM / name).read_text()
    if name.endswith(".jsonl"):
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    return [json.loads(d) for d in data if d != "[DONE]"]


@pytest.mark.skipif(not LITELLM.is_dir(), reason="the recordings are absent")
@pytest.mark.parametrize("kind", ["mirror", "litellm"])
@pytest.mark.parametrize("name", recorded())
def test_recorded_chunks_as_objects_equal_dicts(kind: str, name: str) -> None:
    model = ModelResponseStream if kind == "mirror" else real_model()
    if model is None:
        pytest.skip("litellm is not installed")
    chunks = recorded_chunks(name)
    objects = run(model(**c) for c in chunks)
    dicts = run(chunks)
    assert [c.model_dump() for c in objects.list()] == [c.model_dump() for c in dicts.list()]
    assert objects.end == dicts.end


def test_custom_limits() -> None:
    items = [chunk(tc(0, "i" * 9, "n" * 13, "{}"), tc(1, "ok", "g", '{"s": "' + "x" * 20 + '"}'))]
    machine = tool_call_streaming_state_machine(
        limits=Limits(max_id_chars=8, max_name_chars=12, max_args_chars=16)
    )
    apply_stream(
        machine,
        [ModelResponseStream(**c) for c in [*items, chunk(finish="tool_calls")]],
        OpenAIChatAdapter(),
    )
    first, second = machine.list()
    assert (first.id, first.name) == ("call_0_0", "nnnn...(cut)")
    assert second.error is not None
    assert second.error.kind == "arguments_too_large"


ARGS = {"query": "SELECT COUNT(*) FROM users WHERE name = 'Ōno';", "limit": 5}


@settings(max_examples=100, deadline=None)
@given(
    st.sets(st.integers(0, len(json.dumps(ARGS, ensure_ascii=False))), max_size=25), st.booleans()
)
def test_any_chunking_with_litellm_noise(cuts: set[int], fresh_ids: bool) -> None:
    body = json.dumps(ARGS, ensure_ascii=False)
    points = sorted(cuts)
    pieces = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    items = [chunk(tc(1, "toolu_1", "sql_query", "")), chunk(tc(1, None, None, ""))]
    items += [
        chunk(tc(1, f"x{n}" if fresh_ids else None, "" if fresh_ids else None, p))
        for n, p in enumerate(pieces)
    ]
    machine = run([ModelResponseStream(**c) for c in [*items, chunk(finish="tool_calls")]])
    (call,) = machine.list()
    assert (call.id, call.args_text, call.args) == ("toolu_1", body, ARGS)


@pytest.mark.anyio
async def test_consume_adapt_on_each_backend(anyio_backend: str) -> None:
    items = [ModelResponseStream(**c) for c in QUIRKS[0][1]]

    async def source() -> AsyncIterator[Any]:  # what litellm.acompletion(stream=True) yields
        for item in items:
            yield item

    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            await tracker.consume(adapt(source(), OpenAIChatAdapter()))
            (call,) = tracker.list()
            assert (call.id, call.args) == ("toolu_1", {"query": "SELECT 1;"})
            assert tracker.end is not None
            assert tracker.end.ok
