"""OpenAI Chat Completions chunks, and every server that speaks them (private declaration).

LiteLLM's ``ModelResponseStream`` chunks, Mistral's wire chunks and Ollama's ``/v1``
chunks are Chat Completions chunks too: they are recognised, and read, as this format.
"""

from __future__ import annotations

from typing import Any

from .._registry import Provider, first, item_field, or_type, text_field


def recognise(item: Any) -> bool:
    """A chunk: a ``choices`` list, or ``object: "chat.completion.chunk"``."""
    return (
        isinstance(item_field(item, "choices"), list)
        or item_field(item, "object") == "chat.completion.chunk"
    )


def text_of(item: Any) -> str | None:
    """The first choice's ``delta.content``."""
    delta = item_field(first(item_field(item, "choices")), "delta")
    return text_field(item_field(delta, "content"))


PROVIDER = Provider(
    format="openai-chat",
    title="OpenAI Chat Completions chunks",
    one="an OpenAI Chat Completions chunk",
    recognise=recognise,
    understands=or_type(recognise, "chunk"),  # the SDK's .stream() helper: ChunkEvent
    adapter=".adapters.openai_chat:OpenAIChatAdapter",
    tools=".tools:openai_chat_tools",
    messages=".feedback:openai_chat_messages",
    extra="openai",
    text_of=text_of,
    rank=10,
)
