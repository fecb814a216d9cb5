"""Cohere v2 chat stream events (private declaration)."""

from __future__ import annotations

from typing import Any

from .._registry import Provider, item_field

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


def recognise(item: Any) -> bool:
    """An event of one of the v2 chat stream's ``type`` names."""
    kind = item_field(item, "type")
    return isinstance(kind, str) and kind in _TYPES


PROVIDER = Provider(
    format="cohere",
    title="Cohere v2 events",
    one="a Cohere v2 event",
    recognise=recognise,
    adapter=".adapters.cohere:CohereAdapter",
    tools=".tools:cohere_tools",
    messages=".feedback:cohere_messages",
    extra="cohere",
    rank=70,
)
