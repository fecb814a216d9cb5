"""Anthropic Messages stream events (private declaration)."""

from __future__ import annotations

from typing import Any

from .._registry import Provider, item_field

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


def recognise(item: Any) -> bool:
    """An event of one of the Messages stream's ``type`` names."""
    kind = item_field(item, "type")
    return isinstance(kind, str) and kind in _TYPES


def understands(item: Any) -> bool:
    """Its own events, and an ``error`` event (which says nothing of the format)."""
    return recognise(item) or item_field(item, "type") == "error"


PROVIDER = Provider(
    format="anthropic",
    title="Anthropic events",
    one="an Anthropic event",
    recognise=recognise,
    understands=understands,
    adapter=".adapters.anthropic:AnthropicAdapter",
    tools=".tools:anthropic_tools",
    messages=".feedback:anthropic_messages",
    extra="anthropic",
    rank=30,
)
