"""Gemini ``GenerateContentResponse`` chunks, as google-genai yields them (private declaration)."""

from __future__ import annotations

from typing import Any

from .._registry import Provider, any_field, has_field

_KEYS = ("candidates", "promptFeedback", "prompt_feedback", "usageMetadata", "usage_metadata")


recognise = any_field(_KEYS)
"""A response chunk: ``candidates``, prompt feedback or usage metadata."""


def understands(item: Any) -> bool:
    """Its chunks, and an ``{"error": ...}`` body."""
    return recognise(item) or has_field(item, "error")


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
    rank=40,
)
