"""What a request to Cohere v2 carries back: tool definitions and tool messages (private).

:func:`cohere_tools` and :func:`cohere_messages`, re-exported by :mod:`toolcall_tracker.tools`
and :mod:`toolcall_tracker.feedback`, whose docstring states the rules they follow. A result
that is a JSON object goes as a ``document`` block, anything else as text, unless a custom
renderer is given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..._feedback_common import (
    TextRenderer,
    _finished,
    _note,
    _renderers,
    _reply,
    _structured,
)
from ..._jsonout import _escape_surrogates, _plain_text
from ...calls import ToolCall
from ...tools import ToolsInput, tools_by_name

__all__ = ["cohere_messages", "cohere_tools"]


def cohere_tools(tools: ToolsInput) -> list[dict[str, Any]]:
    """Cohere v2 ``tools``: ``{"type": "function", "function": {"name", "description",
    "parameters"}}`` each, valid ``cohere.ToolV2`` values for ``client.v2.chat(tools=...)``.
    """
    out: list[dict[str, Any]] = []
    for spec in tools_by_name(tools).values():
        function: dict[str, Any] = {"name": spec.name}
        if spec.description:
            function["description"] = _plain_text(spec.description)
        function["parameters"] = spec.parameters
        out.append({"type": "function", "function": function})
    return out


def cohere_messages(
    calls: Iterable[ToolCall],
    *,
    include_calls: bool = True,
    render_result: TextRenderer | None = None,
    render_error: TextRenderer | None = None,
    notes: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Cohere v2 chat messages: the assistant's ``tool_calls``, then one ``role: "tool"``
    message per call, with its ``tool_call_id``.

    A tool message's ``content`` is a list of tool content blocks, as Cohere documents: by
    default a result that is a JSON object is one ``{"type": "document", "document":
    {"data": {...}}}`` block (a document the model can cite), a failed call's is the
    document ``{"error": {...}}``, and any other result is a ``{"type": "text"}`` block (a
    ``str`` as it is, other values as JSON text). A note is a further text block
    ``(Note: ...)`` (appended to the text when the content is text). The calls' arguments
    are sent as their JSON text (``"{}"`` when the model sent none). If the model's message
    had a ``tool_plan``, append that message yourself and pass ``include_calls=False``.

    Args:
        calls: the finished calls, in the order the model made them.
        include_calls: also return the assistant message (first) that made the calls.
        render_result: turns a result into the text sent back (then always a ``text``
            block); ``None`` for the default above.
        render_error: turns an error value into the text sent back; ``None`` for the
            default above.
        notes: a note per call id (for example ``RunControl.notes()``).

    Returns:
        ``cohere.ChatMessageV2``-shaped dicts for ``client.v2.chat(messages=...)`` (an
        empty list for no calls).

    Raises:
        ValueError: a call is not finished yet.
    """
    finished = _finished(calls)
    if not finished:
        return []
    messages: list[dict[str, Any]] = []
    if include_calls:
        tool_calls = [
            {
                "id": _plain_text(call.id),
                "type": "function",
                "function": {
                    "name": _plain_text(call.name),
                    "arguments": _escape_surrogates(call.args_text)
                    if call.args_text.strip()
                    else "{}",
                },
            }
            for call in finished
        ]
        messages.append({"role": "assistant", "tool_calls": tool_calls})
    for call in finished:
        data = _structured(call, render_result, render_error)
        content: list[dict[str, Any]]
        if data is None:
            text = _reply(call, *_renderers(render_result, render_error), notes)
            content = [{"type": "text", "text": text}]
        else:
            content = [
                {"type": "document", "document": {"data": data}},
                *_note(call, notes, lambda text: {"type": "text", "text": text}),
            ]
        messages.append({"role": "tool", "tool_call_id": _plain_text(call.id), "content": content})
    return messages
