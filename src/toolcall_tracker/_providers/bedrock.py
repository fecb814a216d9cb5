"""AWS Bedrock ``converse_stream`` event dicts (private declaration)."""

from __future__ import annotations

from typing import Any

from .._registry import Provider, has_field

_KEYS = (
    "messageStart",
    "contentBlockStart",
    "contentBlockDelta",
    "contentBlockStop",
    "messageStop",
)


def recognise(item: Any) -> bool:
    """An event dict keyed by its event type (``contentBlockDelta``...)."""
    return any(has_field(item, key) for key in _KEYS)


PROVIDER = Provider(
    format="bedrock",
    title="Bedrock Converse events",
    one="a Bedrock Converse event",
    recognise=recognise,
    adapter=".adapters.bedrock:BedrockConverseAdapter",
    tools=".tools:bedrock_tools",
    messages=".feedback:bedrock_messages",
    extra="bedrock",
    rank=60,
)
