"""What a request to Ollama carries back: tool messages (private).

:func:`ollama_messages`, re-exported by :mod:`toolcall_tracker.feedback`, whose docstring
states the rules it follows. Ollama's tool definitions are the Chat Completions ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..._feedback_common import (
    TextRenderer,
    _finished,
    _input,
    _reply,
    error_text,
    result_text,
)
from ..._jsonout import _plain_text
from ...calls import ToolCall

__all__ = ["ollama_messages"]


def ollama_messages(
    calls: Iterable[ToolCall],
    *,
    include_calls: bool = True,
    render_result: TextRenderer = result_text,
    render_error: TextRenderer = error_text,
    notes: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Ollama ``/api/chat`` messages: the assistant's ``tool_calls``, then ``role: tool``
    replies, each naming its tool by ``tool_name`` (Ollama's native API has no call ids;
    replies are matched to calls by name and order).

    The arguments are sent as the JSON object Ollama streamed (``{}`` for a call whose
    arguments never parsed to one).

    Returns:
        ``ollama.Message``-shaped dicts (an empty list for no calls).

    Raises:
        ValueError: a call is not finished yet.
    """
    finished = _finished(calls)
    if not finished:
        return []
    messages: list[dict[str, Any]] = []
    if include_calls:
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"function": {"name": _plain_text(call.name), "arguments": _input(call)}}
                    for call in finished
                ],
            }
        )
    messages.extend(
        {
            "role": "tool",
            "content": _reply(call, render_result, render_error, notes),
            "tool_name": _plain_text(call.name),
        }
        for call in finished
    )
    return messages
