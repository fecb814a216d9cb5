"""What a request to Bedrock Converse carries back: tool specifications and results (private).

:func:`bedrock_tools` and :func:`bedrock_messages`, re-exported by :mod:`toolcall_tracker.tools`
and :mod:`toolcall_tracker.feedback`, whose docstring states the rules they follow. A result
that is a JSON object goes as a ``json`` block, anything else as text, unless a custom
renderer is given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..._feedback_common import (
    TextRenderer,
    _finished,
    _input,
    _note,
    _renderers,
    _reply,
    _structured,
)
from ..._jsonout import _plain_text
from ...calls import Status, ToolCall
from ...tools import ToolsInput, tools_by_name

__all__ = ["bedrock_messages", "bedrock_tools"]


def bedrock_tools(tools: ToolsInput) -> list[dict[str, Any]]:
    """Bedrock Converse ``toolConfig["tools"]``: ``{"toolSpec": {"name", "description",
    "inputSchema": {"json": <schema>}}}`` each.

    Pass as ``client.converse(..., toolConfig={"tools": bedrock_tools(tools)})``; valid for
    botocore's ``bedrock-runtime`` ``Converse`` request shape.
    """
    out: list[dict[str, Any]] = []
    for spec in tools_by_name(tools).values():
        entry: dict[str, Any] = {"name": spec.name}
        if spec.description:
            entry["description"] = _plain_text(spec.description)
        entry["inputSchema"] = {"json": spec.parameters}
        out.append({"toolSpec": entry})
    return out


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
