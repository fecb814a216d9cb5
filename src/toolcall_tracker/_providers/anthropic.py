"""Anthropic Messages stream events (private declaration)."""

from __future__ import annotations

from typing import Any

from .._registry import Provider, item_field, or_type, text_field, type_in

_TYPES = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "ping",
    }
)


recognise = type_in(_TYPES)
"""An event of one of the Messages stream's ``type`` names."""


def text_of(item: Any) -> str | None:
    """The ``text`` of a ``content_block_delta`` whose delta is a ``text_delta``."""
    if item_field(item, "type") != "content_block_delta":
        return None
    delta = item_field(item, "delta")
    if item_field(delta, "type") != "text_delta":
        return None
    return text_field(item_field(delta, "text"))


PROVIDER = Provider(
    format="anthropic",
    title="Anthropic events",
    one="an Anthropic event",
    recognise=recognise,
    understands=or_type(recognise, "error"),  # an error event says nothing of the format
    adapter=".adapters.anthropic:AnthropicAdapter",
    tools=".tools:anthropic_tools",
    messages=".feedback:anthropic_messages",
    extra="anthropic",
    text_of=text_of,
    rank=30,
)
