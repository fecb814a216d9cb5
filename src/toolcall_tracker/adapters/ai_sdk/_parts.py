"""The AI SDK UI message stream's parts and framing (private; public names are re-exported
by :mod:`toolcall_tracker.adapters.ai_sdk` and :mod:`toolcall_tracker.adapters`): the one
place each part's fields are written, as the SDK's chunk schema (``uiMessageChunkSchema``)
defines them, and the finish reasons it accepts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from ..._jsonout import _json_text
from ...events import End
from .._common import _short

__all__ = ["SSE_DONE", "UI_MESSAGE_STREAM_HEADERS", "finish_reason", "to_sse"]

UI_MESSAGE_STREAM_HEADERS: Final[Mapping[str, str]] = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "connection": "keep-alive",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}
"""The HTTP response headers of a UI message stream (as the AI SDK's own server sends)."""

SSE_DONE: Final = "data: [DONE]\n\n"
"""The line that ends a UI message stream."""

# A turn's end reason, as each provider names it -> the SDK's finishReason.
_FINISH_REASONS: Final[Mapping[str, str]] = {
    "stop": "stop",
    "end_turn": "stop",
    "completed": "stop",
    "STOP": "stop",
    "finish": "stop",
    "tool-calls": "tool-calls",
    "tool_calls": "tool-calls",
    "tool_use": "tool-calls",
    "function_call": "tool-calls",
    "length": "length",
    "max_tokens": "length",
    "max_output_tokens": "length",
    "MAX_TOKENS": "length",
    "content-filter": "content-filter",
    "content_filter": "content-filter",
    "SAFETY": "content-filter",
    "refusal": "content-filter",
}
CUT_OFF: Final = frozenset({"length", "content-filter"})
"""Finish reasons that end a turn early without an error: the SDK ends with ``finish``."""


def finish_reason(end: End) -> str:
    """The SDK's ``finishReason`` for a turn's end: the provider's reason mapped (``length``
    for every token cut-off), ``stop`` for other ok ends, ``error`` for other failed ones."""
    reason = _FINISH_REASONS.get(end.reason or "")
    if reason is not None and (end.ok or reason in CUT_OFF):
        return reason
    return "stop" if end.ok else "error"


def _json(value: Any) -> str:
    """Compact JSON text of a part or an error value: the one place parts become JSON.

    It follows the library's output rules (see README, Reliability): strict JSON that a
    browser's ``JSON.parse`` accepts, NaN and infinities as ``null``, lone surrogates as
    ``\\uXXXX`` escapes; values pydantic can serialise (models, dataclasses, dates...) as
    it writes them, any other object as its text. It never raises.
    """
    return _json_text(value)


def to_sse(part: Mapping[str, Any]) -> str:
    """Frame one part as a server-sent event: ``data: {json}`` and a blank line.

    The JSON is compact; values pydantic can serialise (models, dataclasses, dates...)
    are accepted in ``input`` and ``output``.
    """
    return "data: " + _json(part) + "\n\n"


def _error_text(error: Any) -> str:
    message = getattr(error, "message", None)
    if isinstance(message, str) and message:
        return message
    if isinstance(error, str):
        return error
    try:
        return _json(error)
    except Exception:
        return _short(error, 500)


def _start_part(call_id: str, name: str) -> dict[str, Any]:
    return {"type": "tool-input-start", "toolCallId": call_id, "toolName": name}


def _delta_part(call_id: str, text: str) -> dict[str, Any]:
    return {"type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": text}


def _available_part(call_id: str, name: str, value: Any) -> dict[str, Any]:
    return {"type": "tool-input-available", "toolCallId": call_id, "toolName": name, "input": value}


def _input_error_part(call_id: str, name: str, text: str, error: str) -> dict[str, Any]:
    return {
        "type": "tool-input-error",
        "toolCallId": call_id,
        "toolName": name,
        "input": text,
        "errorText": error,
    }


def _output_part(call_id: str, value: Any) -> dict[str, Any]:
    return {"type": "tool-output-available", "toolCallId": call_id, "output": value}


def _preliminary_part(call_id: str, value: Any) -> dict[str, Any]:
    return {**_output_part(call_id, value), "preliminary": True}


def _output_error_part(call_id: str, error: str) -> dict[str, Any]:
    return {"type": "tool-output-error", "toolCallId": call_id, "errorText": error}


def _end_parts(end: End, *, steps: bool = False) -> list[dict[str, Any]]:
    """The parts that end a response: ``finish`` with the SDK's ``finishReason``, after an
    ``error`` part when the turn failed (not for a cut-off: the SDK writes no error then);
    ``finish-step`` first when ``steps``."""
    parts: list[dict[str, Any]] = [{"type": "finish-step"}] if steps else []
    reason = finish_reason(end)
    if reason == "error":
        parts.append({"type": "error", "errorText": end.reason or "the turn ended abnormally"})
    parts.append({"type": "finish", "finishReason": reason})
    return parts


def _abandoned_text(reason: str | None) -> str:
    why = f" ({reason})" if reason else ""
    return f"the turn ended{why} before the arguments were complete"


def _approval_part(call_id: str, approval_id: str) -> dict[str, Any]:
    return {"type": "tool-approval-request", "approvalId": approval_id, "toolCallId": call_id}


def _denied(error: Any) -> bool:
    """Whether a call's error is a denied approval (the runner's ``ApprovalDenied``)."""
    return getattr(error, "kind", None) == "approval_denied"


def _decode_text(item: str | bytes) -> Any:
    """A part from a ``data:`` line or a JSON text; ``None`` for ``[DONE]`` and blanks."""
    text = item.decode() if isinstance(item, bytes) else item
    text = text.strip()
    if text.startswith("data:"):
        text = text[5:].strip()
    if not text or text == "[DONE]":
        return None
    return json.loads(text)
