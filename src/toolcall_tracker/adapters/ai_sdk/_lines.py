"""The AI SDK v4 data stream's line syntax: a type code, a colon, a JSON value.

What the ``ai-sdk-v4`` declaration recognises a line by, without loading the adapter
(:class:`~toolcall_tracker.adapters.AISDKDataStreamAdapter`, which reads the same lines).
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from ..._registry import text_field

_LINE: Final = re.compile(r"(?:data:[ \t]*)?([0-9a-z]):(.*)", re.DOTALL)
"""A data stream part: its type code and its JSON (optionally inside an SSE data line)."""


def split_line(item: Any) -> tuple[str, str] | None:
    """A line's type code and JSON text, or ``None`` if it is not a data stream part."""
    if isinstance(item, bytes | bytearray):
        item = bytes(item).decode("utf-8", "replace")
    if not isinstance(item, str):
        return None
    match = _LINE.fullmatch(item.strip())
    return None if match is None else (match.group(1), match.group(2))


def recognise_line(item: Any) -> bool:
    """A line whose type code is one of the protocol's and whose rest starts a JSON value."""
    split = split_line(item)
    return split is not None and split[1][:1] in ('"', "{", "[")


def line_text(item: Any) -> str | None:
    """The text of a ``0:`` line (a JSON string)."""
    split = split_line(item)
    if split is None or split[0] != "0":
        return None
    try:
        value = json.loads(split[1])
    except (ValueError, RecursionError):
        return None
    return text_field(value)
