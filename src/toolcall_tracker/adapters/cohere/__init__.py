"""Cohere: the v2 chat stream's events, their failures, tools and results (one home).

This module holds only the declaration; the rest loads on first use: ``_adapter``
(:class:`CohereAdapter` and :class:`CohereMalformedEvent`) and ``_request`` (the tool
definitions and tool messages sent back, re-exported by :mod:`toolcall_tracker.tools`
and :mod:`toolcall_tracker.feedback`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from ..._registry import Provider, item_field, lazy_names, text_field, type_in

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


_recognise = type_in(_TYPES)
"""An event of one of the v2 chat stream's ``type`` names."""


def _text_of(item: Any) -> str | None:
    """The ``delta.message.content.text`` of a ``content-delta`` event."""
    if item_field(item, "type") != "content-delta":
        return None
    message = item_field(item_field(item, "delta"), "message")
    return text_field(item_field(item_field(message, "content"), "text"))


PROVIDERS: Final = (
    Provider(
        format="cohere",
        title="Cohere v2 events",
        one="a Cohere v2 event",
        recognise=_recognise,
        adapter=".adapters.cohere._adapter:CohereAdapter",
        tools=".adapters.cohere._request:cohere_tools",
        messages=".adapters.cohere._request:cohere_messages",
        extra="cohere",
        text_of=_text_of,
        rank=70,
    ),
)


if TYPE_CHECKING:
    from ._adapter import CohereAdapter, CohereMalformedEvent

__all__ = [
    "CohereAdapter",
    "CohereMalformedEvent",
]

__getattr__, __dir__ = lazy_names(
    globals(),
    {
        "CohereAdapter": "._adapter",
        "CohereMalformedEvent": "._adapter",
    },
)
