"""Cohere v2 chat stream events (private declaration)."""

from __future__ import annotations

from .._registry import Provider, type_in

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


recognise = type_in(_TYPES)
"""An event of one of the v2 chat stream's ``type`` names."""


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
