"""AWS Bedrock: the Converse stream's events, their failures, tools and results (one home).

This module holds only the declaration; the rest loads on first use: ``_adapter``
(:class:`BedrockConverseAdapter` and its failure values) and ``_request`` (the tool
specifications and tool results sent back, re-exported by :mod:`toolcall_tracker.tools`
and :mod:`toolcall_tracker.feedback`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from ..._registry import Provider, any_field, item_field, lazy_names, text_field

_KEYS = (
    "messageStart",
    "contentBlockStart",
    "contentBlockDelta",
    "contentBlockStop",
    "messageStop",
)


_recognise = any_field(_KEYS)
"""An event dict keyed by its event type (``contentBlockDelta``...)."""


def _text_of(item: Any) -> str | None:
    """The ``text`` of a ``contentBlockDelta`` event's delta."""
    delta = item_field(item_field(item, "contentBlockDelta"), "delta")
    return text_field(item_field(delta, "text"))


PROVIDERS: Final = (
    Provider(
        format="bedrock",
        title="Bedrock Converse events",
        one="a Bedrock Converse event",
        recognise=_recognise,
        adapter=".adapters.bedrock._adapter:BedrockConverseAdapter",
        tools=".adapters.bedrock._request:bedrock_tools",
        messages=".adapters.bedrock._request:bedrock_messages",
        extra="bedrock",
        text_of=_text_of,
        rank=60,
    ),
)


if TYPE_CHECKING:
    from ._adapter import BedrockConverseAdapter, BedrockMalformedEvent, BedrockServerToolError

__all__ = [
    "BedrockConverseAdapter",
    "BedrockMalformedEvent",
    "BedrockServerToolError",
]

__getattr__, __dir__ = lazy_names(
    globals(),
    {
        "BedrockConverseAdapter": "._adapter",
        "BedrockMalformedEvent": "._adapter",
        "BedrockServerToolError": "._adapter",
    },
)
