"""Mistral: ``mistralai``'s completion events (one home).

This module holds only the declaration; ``_adapter`` (:class:`MistralAdapter`) loads on
first use. Mistral's wire chunks are Chat Completions chunks, and so are its tool
definitions and result messages: those of :mod:`toolcall_tracker.adapters.openai`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from ..._registry import Provider, has_field, item_field, lazy_names
from ..openai import chunk_text


def _recognise(item: Any) -> bool:
    """A wrapper whose only field ``data`` is a chunk (a ``choices`` list)."""
    data = item_field(item, "data")
    if data is None or has_field(item, "choices"):
        return False
    if isinstance(item, Mapping) and len(item) != 1:
        return False
    return isinstance(item_field(data, "choices"), list)


def _text_of(item: Any) -> str | None:
    """The text of the wrapped chunk (``data``), or of a bare Chat Completions chunk."""
    data = item_field(item, "data")
    return chunk_text(item if data is None else data)


PROVIDERS: Final = (
    Provider(
        format="mistral",
        title="Mistral completion events",
        one="a Mistral completion event",
        recognise=_recognise,
        adapter=".adapters.mistral._adapter:MistralAdapter",
        accepts=("openai-chat",),
        tools=".adapters.openai._request:openai_chat_tools",
        messages=".adapters.openai._request:openai_chat_messages",
        extra="mistral",
        text_of=_text_of,
        rank=90,
    ),
)


if TYPE_CHECKING:
    from ._adapter import MistralAdapter

__all__ = [
    "MistralAdapter",
]

__getattr__, __dir__ = lazy_names(
    globals(),
    {
        "MistralAdapter": "._adapter",
    },
)
