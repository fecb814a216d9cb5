"""Anthropic Messages stream events (private declaration)."""

from __future__ import annotations

from .._registry import Provider, or_type, type_in

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
    rank=30,
)
