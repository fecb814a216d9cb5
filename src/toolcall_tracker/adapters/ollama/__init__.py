"""Ollama: its native ``/api/chat`` lines, their failures and results (one home).

This module holds only the declaration; the rest loads on first use: ``_adapter``
(:class:`OllamaAdapter` and :class:`OllamaMalformedToolCall`) and ``_request`` (the tool
messages sent back, re-exported by :mod:`toolcall_tracker.feedback`). Its tool
definitions, and its ``/v1`` chunks, are the Chat Completions ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from ..._registry import Provider, has_field, item_field, lazy_names, text_field
from ..openai import chunk_text


def _recognise(item: Any) -> bool:
    """A line with a boolean ``done`` and a ``created_at`` or a ``message``."""
    return isinstance(item_field(item, "done"), bool) and (
        has_field(item, "created_at") or has_field(item, "message")
    )


def _text_of(item: Any) -> str | None:
    """A native line's ``message.content``, or a ``/v1`` chunk's text."""
    message = item_field(item, "message")
    if message is None:
        return chunk_text(item)
    return text_field(item_field(message, "content"))


PROVIDERS: Final = (
    Provider(
        format="ollama",
        title="Ollama chat lines",
        one="an Ollama chat line",
        recognise=_recognise,
        adapter=".adapters.ollama._adapter:OllamaAdapter",
        accepts=("openai-chat",),
        tools=".adapters.openai._request:openai_chat_tools",
        messages=".adapters.ollama._request:ollama_messages",
        extra="ollama",
        text_of=_text_of,
        rank=80,
    ),
)


if TYPE_CHECKING:
    from ._adapter import OllamaAdapter, OllamaMalformedToolCall

__all__ = [
    "OllamaAdapter",
    "OllamaMalformedToolCall",
]

__getattr__, __dir__ = lazy_names(
    globals(),
    {
        "OllamaAdapter": "._adapter",
        "OllamaMalformedToolCall": "._adapter",
    },
)
