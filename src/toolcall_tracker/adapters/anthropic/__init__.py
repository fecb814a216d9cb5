"""Anthropic: the Messages stream, its failures, tools and results (one home).

This module holds only the declaration; the rest loads on first use: ``_adapter``
(:class:`AnthropicAdapter` and its failure values) and ``_request`` (the tool definitions
and result messages sent back, re-exported by :mod:`toolcall_tracker.tools` and
:mod:`toolcall_tracker.feedback`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from ..._registry import Provider, item_field, lazy_names, or_type, text_field, type_in

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


_recognise = type_in(_TYPES)
"""An event of one of the Messages stream's ``type`` names."""


def _text_of(item: Any) -> str | None:
    """The ``text`` of a ``content_block_delta`` whose delta is a ``text_delta``."""
    if item_field(item, "type") != "content_block_delta":
        return None
    delta = item_field(item, "delta")
    if item_field(delta, "type") != "text_delta":
        return None
    return text_field(item_field(delta, "text"))


PROVIDERS: Final = (
    Provider(
        format="anthropic",
        title="Anthropic events",
        one="an Anthropic event",
        recognise=_recognise,
        understands=or_type(_recognise, "error"),  # an error event says nothing of the format
        adapter=".adapters.anthropic._adapter:AnthropicAdapter",
        tools=".adapters.anthropic._request:anthropic_tools",
        messages=".adapters.anthropic._request:anthropic_messages",
        extra="anthropic",
        text_of=_text_of,
        rank=30,
    ),
)


if TYPE_CHECKING:
    from ._adapter import AnthropicAdapter, AnthropicMalformedEvent, AnthropicServerToolError

__all__ = [
    "AnthropicAdapter",
    "AnthropicMalformedEvent",
    "AnthropicServerToolError",
]

__getattr__, __dir__ = lazy_names(
    globals(),
    {
        "AnthropicAdapter": "._adapter",
        "AnthropicMalformedEvent": "._adapter",
        "AnthropicServerToolError": "._adapter",
    },
)
