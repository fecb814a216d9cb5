"""Gemini ``GenerateContentResponse`` chunks, as google-genai yields them (private declaration)."""

from __future__ import annotations

from typing import Any

from .._registry import Provider, any_field, first, has_field, item_field, text_field

_KEYS = ("candidates", "promptFeedback", "prompt_feedback", "usageMetadata", "usage_metadata")


recognise = any_field(_KEYS)
"""A response chunk: ``candidates``, prompt feedback or usage metadata."""


def understands(item: Any) -> bool:
    """Its chunks, and an ``{"error": ...}`` body."""
    return recognise(item) or has_field(item, "error")


def text_of(item: Any) -> str | None:
    """The first candidate's text parts, joined (thought summaries left out)."""
    parts = item_field(item_field(first(item_field(item, "candidates")), "content"), "parts")
    if not isinstance(parts, list):
        return None
    texts = [item_field(part, "text") for part in parts if not item_field(part, "thought")]
    return text_field("".join(text for text in texts if isinstance(text, str)))


PROVIDER = Provider(
    format="gemini",
    title="Gemini response chunks",
    one="a Gemini response chunk",
    recognise=recognise,
    understands=understands,
    adapter=".adapters.gemini:GeminiAdapter",
    tools=".tools:gemini_tools",
    messages=".feedback:gemini_contents",
    extra="gemini",
    text_of=text_of,
    rank=40,
)
