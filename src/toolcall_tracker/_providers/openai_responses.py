"""OpenAI Responses API stream events (private declaration)."""

from __future__ import annotations

from typing import Any

from .._registry import Provider, item_field, or_type


def recognise(item: Any) -> bool:
    """An event whose ``type`` starts with ``response.``."""
    kind = item_field(item, "type")
    return isinstance(kind, str) and kind.startswith("response.")


PROVIDER = Provider(
    format="openai-responses",
    title="OpenAI Responses events",
    one="an OpenAI Responses event",
    recognise=recognise,
    understands=or_type(recognise, "error"),  # an error event says nothing of the format
    adapter=".adapters.openai_responses:OpenAIResponsesAdapter",
    tools=".tools:openai_responses_tools",
    messages=".feedback:openai_responses_items",
    extra="openai",
    rank=20,
)
