"""The Bedrock Converse and Cohere v2 feedback builders (private; re-exported by
:mod:`toolcall_tracker.feedback`, whose docstring states the rules they follow).

Both send a result that is a JSON object as structured data (a Bedrock ``json`` block, a
Cohere ``document``), anything else as text, unless a custom renderer is given: then the
rendered text is sent, as the other builders do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ._feedback_common import (
    TextRenderer,
    _finished,
    _input,
    _reply,
    error_text,
    result_text,
    retry_message,
)
from ._jsonout import _escape_surrogates, _jsonable, _plain_text
from .calls import Status, ToolCall

__all__ = ["bedrock_messages", "cohere_messages"]


def bedrock_messages(
    calls: Iterable[ToolCall],
    *,
    include_calls: bool = True,
    render_result: TextRenderer | None = None,
    render_error: TextRenderer | None = None,
    notes: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Bedrock Converse messages: an ``assistant`` message of ``toolUse`` blocks, then a
    ``user`` message of ``toolResult`` blocks (``status: "error"`` for failed calls).

    By default a result that is a JSON object is sent as ``content: [{"json": {...}}]`` and
    any other result as ``[{"text": ...}]`` (a ``str`` as it is, other values as JSON
    text); a failed call's content is ``[{"json": {"error": {...}}}]``. A note is sent as a
    further ``{"text": "(Note: ...)"}`` block (appended to the text when the content is
    text). A call whose arguments never parsed to an object is sent with ``input: {}``.

    Args:
        calls: the finished calls, in the order the model made them.
        include_calls: also return the assistant message (first) that made the calls.
        render_result: turns a result into the text sent back (then always a ``text``
            block); ``None`` for the default above.
        render_error: turns an error value into the text sent back; ``None`` for the
            default above.
        notes: a note per call id (for example ``RunControl.notes()``).

    Returns:
        ``Message`` dicts for ``client.converse(messages=...)`` (an empty list for no
        calls), valid for botocore's ``bedrock-runtime`` ``Converse`` request shape.

    Raises:
        ValueError: a call is not finished yet.
    """
    finished = _finished(calls)
    if not finished:
        return []
    messages: list[dict[str, Any]] = []
    if include_calls:
        uses = [
            {
                "toolUse": {
                    "toolUseId": _plain_text(call.id),
                    "name": _plain_text(call.name),
                    "input": _input(call),
                }
            }
            for call in finished
        ]
        messages.append({"role": "assistant", "content": uses})
    results: list[dict[str, Any]] = []
    for call in finished:
        failed = call.status is Status.ERROR
        data = _structured(call, render_result, render_error)
        content: list[dict[str, Any]]
        if data is None:
            content = [{"text": _reply(call, *_renderers(render_result, render_error), notes)}]
        else:
            content = [{"json": data}, *_note(call, notes, lambda text: {"text": text})]
        results.append(
            {
                "toolResult": {
                    "toolUseId": _plain_text(call.id),
                    "content": content,
                    "status": "error" if failed else "success",
                }
            }
        )
    messages.append({"role": "user", "content": results})
    return messages


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


def _structured(
    call: ToolCall, render_result: TextRenderer | None, render_error: TextRenderer | None
) -> dict[str, Any] | None:
    """The JSON object sent for ``call`` as data, or ``None`` when it is sent as text."""
    if call.status is Status.ERROR:  # a retry's message is sent as text, as it is
        if render_error or retry_message(call.error) is not None:
            return None
        return {"error": _jsonable(call.error)}
    if render_result or isinstance(call.result, str):
        return None
    data = _jsonable(call.result)
    return data if isinstance(data, dict) else None


def _renderers(
    render_result: TextRenderer | None, render_error: TextRenderer | None
) -> tuple[TextRenderer, TextRenderer]:
    return render_result or result_text, render_error or error_text


def _note(
    call: ToolCall,
    notes: Mapping[str, str] | None,
    block: Callable[[str], dict[str, Any]],
) -> list[dict[str, Any]]:
    """The content block carrying ``call``'s note, if it has one."""
    note = notes.get(call.id) if notes else None
    return [block(_plain_text(f"(Note: {note})"))] if note else []
