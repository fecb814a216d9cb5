"""OpenAI Responses API stream events (private declaration)."""

from __future__ import annotations

from typing import Any

from .._registry import Provider, item_field


def recognise(item: Any) -> bool:
    """An event whose ``type`` starts with ``response.``."""
    kind = item_field(item, "type")
    return isinstance(kind, str) and kind.startswith("response.")


def understands(item: Any) -> bool:
    """Its own events, and an ``error`` event (which says nothing of the format)."""
    return recognise(item) or item_field(item, "type") == "error"


PROVIDER = Provider(
    format="openai-responses",
    title="OpenAI Responses events",
    one="an OpenAI Responses event",
    recognise=recognise,
    understands=understands,
    adapter=".adapters.openai_responses:OpenAIResponsesAdapter",
    tools=".tools:openai_responses_tools",
    messages=".feedback:openai_responses_items",
    extra="openai",
    rank=20,
)
