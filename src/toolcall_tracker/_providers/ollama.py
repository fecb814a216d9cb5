"""Ollama's native ``/api/chat`` lines and ``ChatResponse`` objects (private declaration).

Ollama's OpenAI-compatible ``/v1`` chunks are Chat Completions chunks, which its adapter
reads too. Its tool definitions are the Chat Completions ones.
"""

from __future__ import annotations

from typing import Any

from .._registry import Provider, has_field, item_field


def recognise(item: Any) -> bool:
    """A line with a boolean ``done`` and a ``created_at`` or a ``message``."""
    return isinstance(item_field(item, "done"), bool) and (
        has_field(item, "created_at") or has_field(item, "message")
    )


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
    rank=80,
)
