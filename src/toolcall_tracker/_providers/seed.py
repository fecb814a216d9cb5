"""The tracker's own protocol events, applied as they are read (private declaration).

Not a provider: the format of recorded event streams (``--format seed``), and what
:meth:`ToolCallTracker.consume` reads without an adapter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._registry import Provider

_TYPES = frozenset({"start", "delta", "ready", "result", "error", "end"})


def recognise(item: Any) -> bool:
    """A mapping of a seed ``type`` with that event's fields.

    Other formats reuse some of these type names (``start`` and ``error`` in the AI SDK,
    ``error`` in the Anthropic and Responses streams) with other fields.
    """
    if not isinstance(item, Mapping):
        return False
    kind = item.get("type")
    if not isinstance(kind, str) or kind not in _TYPES:
        return False
    if kind == "end":
        return set(item) <= {"type", "ok", "reason"}
    if not isinstance(item.get("id"), str):
        return False
    if kind == "start":
        return isinstance(item.get("name"), str)
    if kind == "delta":
        return "argsTextDelta" in item or "args_text_delta" in item
    if kind == "ready":
        return set(item) <= {"type", "id"}
    return kind in item  # result / error


PROVIDER = Provider(
    format="seed", title="tracker events", one="a tracker event", recognise=recognise, rank=0
)
