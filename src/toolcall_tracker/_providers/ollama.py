"""Ollama's native ``/api/chat`` lines and ``ChatResponse`` objects (private declaration).

Ollama's OpenAI-compatible ``/v1`` chunks are Chat Completions chunks, which its adapter
reads too. Its tool definitions are the Chat Completions ones.
"""

from __future__ import annotations

from typing import Any

from .._registry import Provider, has_field, item_field, text_field
from .openai_chat import text_of as _chunk_text


def recognise(item: Any) -> bool:
    """A line with a boolean ``done`` and a ``created_at`` or a ``message``."""
    return isinstance(item_field(item, "done"), bool) and (
        has_field(item, "created_at") or has_field(item, "message")
    )


def text_of(item: Any) -> str | None:
    """A native line's ``message.content``, or a ``/v1`` chunk's text."""
    message = item_field(item, "message")
    if message is None:
        return _chunk_text(item)
    return text_field(item_field(message, "content"))


PROVIDER = Provider(
    format="ollama",
    title="Ollama chat lines",
    one="an Ollama chat line",
    recognise=recognise,
    adapter=".adapters.ollama:OllamaAdapter",
    accepts=("openai-chat",),
    tools=".tools:openai_chat_tools",
    messages=".feedback:ollama_messages",
    extra="ollama",
    text_of=text_of,
    rank=80,
)
