"""``tracker.consume()`` given provider items without ``adapt()``: the error names the fix.

Only items that fail to parse as events get the hint (it is computed on that error path
alone). Items with a ``type`` the protocol does not know (Anthropic's, the Responses API's)
are ignored as unknown types, for forward compatibility, as before.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from conftest import DEADLINE
from toolcall_tracker import InvalidEvent, ToolCallTracker

pytestmark = pytest.mark.anyio

CHAT_CHUNK = {
    "id": "chatcmpl-1",
    "object": "chat.completion.chunk",
    "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}],
}


async def from_list(items: list[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item


@pytest.mark.parametrize(
    ("item", "says"),
    [
        (
            CHAT_CHUNK,
            "an OpenAI Chat Completions chunk; wrap the stream with "
            "adapt(stream, OpenAIChatAdapter())",
        ),
        (
            {"candidates": [{"content": {"parts": [{"text": "hi"}]}}]},
            "a Gemini response chunk; wrap the stream with adapt(stream, GeminiAdapter())",
        ),
        (
            {
                "model": "qwen3",
                "created_at": "2025",
                "message": {"role": "assistant"},
                "done": False,
            },
            "an Ollama chat line; wrap the stream with adapt(stream, OllamaAdapter())",
        ),
        (
            {"contentBlockStop": {"contentBlockIndex": 0}},
            "a Bedrock Converse event; wrap the "
            "stream with adapt(stream, BedrockConverseAdapter())",
        ),
    ],
)
async def test_a_raw_provider_item_names_its_adapter(
    anyio_backend: str, item: dict[str, Any], says: str
) -> None:
    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            with pytest.raises(InvalidEvent, match="this looks like") as caught:
                await tracker.consume(from_list([item]))
    assert str(caught.value).endswith(f"this looks like {says}")
    assert caught.value.event is item


async def test_an_sdk_object_names_its_adapter(anyio_backend: str) -> None:
    types = pytest.importorskip("openai.types.chat")
    chunk = types.ChatCompletionChunk.model_validate(
        {**CHAT_CHUNK, "created": 0, "model": "gpt-4o"}
    )
    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            with pytest.raises(InvalidEvent, match=r"adapt\(stream, OpenAIChatAdapter\(\)\)"):
                await tracker.consume(from_list([chunk]))


async def test_a_malformed_seed_event_keeps_its_own_message(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            with pytest.raises(InvalidEvent) as caught:
                await tracker.consume(from_list([{"type": "start", "id": "a"}]))
    assert "looks like" not in str(caught.value)
