"""The Vercel AI SDK: its UI message stream both ways, and v4's data stream (one home).

This module holds only the declarations (the UI message stream, ``ai-sdk``; the v4 data
stream protocol, ``ai-sdk-v4``); the rest loads on first use:

- ``_adapter``: :class:`AISDKAdapter`, reading UI message stream parts;
- ``_v4``: :class:`AISDKDataStreamAdapter`, reading v4's ``CODE:JSON`` lines;
- ``_lines``: the v4 line syntax (what the declaration recognises);
- ``_encoder`` and ``_listener``: :class:`AISDKEncoder` / :func:`encode_ai_sdk` and
  :class:`AISDKListener`, writing the parts from events or a tracker's change feed;
- ``_parts``: the wire: SSE framing and finish reasons; ``_ids``: :class:`AISDKStreamIds`;
- ``_input``: the input text a call's parts build up; ``_errors``: the failure values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from ..._registry import Provider, item_field, lazy_names, or_type, text_field
from ._lines import line_text, recognise_line

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


def _recognise(item: Any) -> bool:
    """A part whose ``type`` is one of the UI message stream's."""
    kind = item_field(item, "type")
    return isinstance(kind, str) and (kind.startswith(_PREFIXES) or kind in _TYPES)


def _text_of(item: Any) -> str | None:
    """The ``delta`` of a ``text-delta`` part."""
    if item_field(item, "type") != "text-delta":
        return None
    return text_field(item_field(item, "delta"))


UI = Provider(
    format="ai-sdk",
    title="AI SDK UI message stream parts",
    one="an AI SDK UI message stream part",
    recognise=_recognise,
    understands=or_type(_recognise, "start", "error"),  # names the protocol events share
    adapter=".adapters.ai_sdk._adapter:AISDKAdapter",
    text_of=_text_of,
    rank=50,
)


V4 = Provider(
    format="ai-sdk-v4",
    title="AI SDK v4 data stream lines",
    one="an AI SDK v4 data stream line",
    recognise=recognise_line,
    adapter=".adapters.ai_sdk._v4:AISDKDataStreamAdapter",
    lines=True,
    text_of=line_text,
    rank=55,
)


PROVIDERS: Final = (UI, V4)


if TYPE_CHECKING:
    from ._adapter import AISDKAdapter
    from ._encoder import AISDKEncoder, encode_ai_sdk
    from ._errors import (
        AISDKApprovalPending,
        AISDKInputMismatch,
        AISDKMalformedPart,
        AISDKStepReset,
        AISDKToolError,
    )
    from ._ids import AISDKStreamIds
    from ._listener import AISDKListener
    from ._parts import SSE_DONE, UI_MESSAGE_STREAM_HEADERS, to_sse
    from ._v4 import AISDKDataStreamAdapter

__all__ = [
    "AISDKAdapter",
    "AISDKApprovalPending",
    "AISDKDataStreamAdapter",
    "AISDKEncoder",
    "AISDKInputMismatch",
    "AISDKListener",
    "AISDKMalformedPart",
    "AISDKStepReset",
    "AISDKStreamIds",
    "AISDKToolError",
    "SSE_DONE",
    "UI_MESSAGE_STREAM_HEADERS",
    "encode_ai_sdk",
    "to_sse",
]

__getattr__, __dir__ = lazy_names(
    globals(),
    {
        "AISDKAdapter": "._adapter",
        "AISDKApprovalPending": "._errors",
        "AISDKDataStreamAdapter": "._v4",
        "AISDKEncoder": "._encoder",
        "AISDKInputMismatch": "._errors",
        "AISDKListener": "._listener",
        "AISDKMalformedPart": "._errors",
        "AISDKStepReset": "._errors",
        "AISDKStreamIds": "._ids",
        "AISDKToolError": "._errors",
        "SSE_DONE": "._parts",
        "UI_MESSAGE_STREAM_HEADERS": "._parts",
        "encode_ai_sdk": "._encoder",
        "to_sse": "._parts",
    },
)
