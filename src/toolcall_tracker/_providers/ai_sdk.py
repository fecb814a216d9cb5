"""Vercel AI SDK UI message stream parts (v5 and later; private declaration)."""

from __future__ import annotations

from typing import Any

from .._registry import Provider, item_field, or_type, text_field

_PREFIXES = (
    "tool-input-",
    "tool-output-",
    "text-",
    "reasoning-",
    "source-",
    "data-",
    "start-step",
    "finish-step",
)
_TYPES = frozenset({"finish", "abort", "file", "message-metadata"})


def recognise(item: Any) -> bool:
    """A part whose ``type`` is one of the UI message stream's."""
    kind = item_field(item, "type")
    return isinstance(kind, str) and (kind.startswith(_PREFIXES) or kind in _TYPES)


def text_of(item: Any) -> str | None:
    """The ``delta`` of a ``text-delta`` part."""
    if item_field(item, "type") != "text-delta":
        return None
    return text_field(item_field(item, "delta"))


PROVIDER = Provider(
    format="ai-sdk",
    title="AI SDK UI message stream parts",
    one="an AI SDK UI message stream part",
    recognise=recognise,
    understands=or_type(recognise, "start", "error"),  # names the seed events share
    adapter=".adapters.ai_sdk:AISDKAdapter",
    text_of=text_of,
    rank=50,
)
