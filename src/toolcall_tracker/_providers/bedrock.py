"""AWS Bedrock ``converse_stream`` event dicts (private declaration)."""

from __future__ import annotations

from .._registry import Provider, any_field

_KEYS = (
    "messageStart",
    "contentBlockStart",
    "contentBlockDelta",
    "contentBlockStop",
    "messageStop",
)


recognise = any_field(_KEYS)
"""An event dict keyed by its event type (``contentBlockDelta``...)."""


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
