"""AWS Bedrock ``converse_stream`` event dicts (private declaration)."""

from __future__ import annotations

from typing import Any

from .._registry import Provider, any_field, item_field, text_field

_KEYS = (
    "messageStart",
    "contentBlockStart",
    "contentBlockDelta",
    "contentBlockStop",
    "messageStop",
)


recognise = any_field(_KEYS)
"""An event dict keyed by its event type (``contentBlockDelta``...)."""


def text_of(item: Any) -> str | None:
    """The ``text`` of a ``contentBlockDelta`` event's delta."""
    delta = item_field(item_field(item, "contentBlockDelta"), "delta")
    return text_field(item_field(delta, "text"))


PROVIDER = Provider(
    format="bedrock",
    title="Bedrock Converse events",
    one="a Bedrock Converse event",
    recognise=recognise,
    adapter=".adapters.bedrock:BedrockConverseAdapter",
    tools=".tools:bedrock_tools",
    messages=".feedback:bedrock_messages",
    extra="bedrock",
    text_of=text_of,
    rank=60,
)
