"""Cohere v2 chat stream events (private declaration)."""

from __future__ import annotations

from typing import Any

from .._registry import Provider, item_field, text_field, type_in

_TYPES = frozenset(
    {
        "message-start",
        "message-end",
        "tool-plan-delta",
        "tool-call-start",
        "tool-call-delta",
        "tool-call-end",
        "content-start",
        "content-delta",
        "content-end",
        "citation-start",
        "citation-end",
    }
)


recognise = type_in(_TYPES)
"""An event of one of the v2 chat stream's ``type`` names."""


def text_of(item: Any) -> str | None:
    """The ``delta.message.content.text`` of a ``content-delta`` event."""
    if item_field(item, "type") != "content-delta":
        return None
    message = item_field(item_field(item, "delta"), "message")
    return text_field(item_field(item_field(message, "content"), "text"))


PROVIDER = Provider(
    format="cohere",
    title="Cohere v2 events",
    one="a Cohere v2 event",
    recognise=recognise,
    adapter=".adapters.cohere:CohereAdapter",
    tools=".tools:cohere_tools",
    messages=".feedback:cohere_messages",
    extra="cohere",
    text_of=text_of,
    rank=70,
)
