"""Gemini: google-genai's response chunks, their failures, tools and results (one home).

This module holds only the declaration; the rest loads on first use: ``_adapter``
(:class:`GeminiAdapter` and :class:`GeminiMalformedCall`) and ``_request`` (the tool
declarations and function responses sent back, re-exported by
:mod:`toolcall_tracker.tools` and :mod:`toolcall_tracker.feedback`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from ..._registry import Provider, any_field, first, has_field, item_field, lazy_names, text_field

_KEYS = ("candidates", "promptFeedback", "prompt_feedback", "usageMetadata", "usage_metadata")


_recognise = any_field(_KEYS)
"""A response chunk: ``candidates``, prompt feedback or usage metadata."""


def _understands(item: Any) -> bool:
    """Its chunks, and an ``{"error": ...}`` body."""
    return _recognise(item) or has_field(item, "error")


def _text_of(item: Any) -> str | None:
    """The first candidate's text parts, joined (thought summaries left out)."""
    parts = item_field(item_field(first(item_field(item, "candidates")), "content"), "parts")
    if not isinstance(parts, list):
        return None
    texts = [item_field(part, "text") for part in parts if not item_field(part, "thought")]
    return text_field("".join(text for text in texts if isinstance(text, str)))


PROVIDERS: Final = (
    Provider(
        format="gemini",
        title="Gemini response chunks",
        one="a Gemini response chunk",
        recognise=_recognise,
        understands=_understands,
        adapter=".adapters.gemini._adapter:GeminiAdapter",
        tools=".adapters.gemini._request:gemini_tools",
        messages=".adapters.gemini._request:gemini_contents",
        extra="gemini",
        text_of=_text_of,
        rank=40,
    ),
)


if TYPE_CHECKING:
    from ._adapter import GeminiAdapter, GeminiMalformedCall

__all__ = [
    "GeminiAdapter",
    "GeminiMalformedCall",
]

__getattr__, __dir__ = lazy_names(
    globals(),
    {
        "GeminiAdapter": "._adapter",
        "GeminiMalformedCall": "._adapter",
    },
)
