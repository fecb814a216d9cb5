"""OpenAI Responses API stream events (private declaration)."""

from __future__ import annotations

from typing import Any

from .._registry import Provider, item_field, or_type, text_field


def recognise(item: Any) -> bool:
    """An event whose ``type`` starts with ``response.``."""
    kind = item_field(item, "type")
    return isinstance(kind, str) and kind.startswith("response.")


def text_of(item: Any) -> str | None:
    """The ``delta`` of a ``response.output_text.delta`` event."""
    if item_field(item, "type") != "response.output_text.delta":
        return None
    return text_field(item_field(item, "delta"))


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
    text_of=text_of,
    rank=20,
)
