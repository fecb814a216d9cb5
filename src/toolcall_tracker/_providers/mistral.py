"""``mistralai`` ``CompletionEvent`` objects, ``{"data": chunk}`` (private declaration).

Mistral's wire chunks are Chat Completions chunks (recognised as ``openai-chat``), which
its adapter reads too; so are its tool definitions and result messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._registry import Provider, has_field, item_field
from .openai_chat import text_of as _chunk_text


def recognise(item: Any) -> bool:
    """A wrapper whose only field ``data`` is a chunk (a ``choices`` list)."""
    data = item_field(item, "data")
    if data is None or has_field(item, "choices"):
        return False
    if isinstance(item, Mapping) and len(item) != 1:
        return False
    return isinstance(item_field(data, "choices"), list)


def text_of(item: Any) -> str | None:
    """The text of the wrapped chunk (``data``), or of a bare Chat Completions chunk."""
    data = item_field(item, "data")
    return _chunk_text(item if data is None else data)


PROVIDER = Provider(
    format="mistral",
    title="Mistral completion events",
    one="a Mistral completion event",
    recognise=recognise,
    adapter=".adapters.mistral:MistralAdapter",
    accepts=("openai-chat",),
    tools=".tools:openai_chat_tools",
    messages=".feedback:openai_chat_messages",
    extra="mistral",
    text_of=text_of,
    rank=90,
)
