"""What a request to Gemini carries back: tool declarations and function responses (private).

:func:`gemini_tools` and :func:`gemini_contents`, re-exported by :mod:`toolcall_tracker.tools`
and :mod:`toolcall_tracker.feedback`, whose docstring states the rules they follow.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..._feedback_common import (
    _finished,
    _input,
    retry_message,
)
from ..._jsonout import _jsonable, _plain_text
from ...calls import Status, ToolCall
from ...tools import ToolsInput, tools_by_name

__all__ = ["gemini_contents", "gemini_tools"]


def gemini_tools(tools: ToolsInput) -> list[dict[str, Any]]:
    """Gemini ``tools``: one tool holding a function declaration per function.

    Returns ``[{"function_declarations": [{"name", "description",
    "parameters_json_schema"}, ...]}]``, valid ``google.genai.types.Tool`` values (the
    JSON Schema goes in ``parameters_json_schema``, which accepts ``$ref``/``$defs``).
    """
    declarations: list[dict[str, Any]] = []
    for spec in tools_by_name(tools).values():
        entry: dict[str, Any] = {"name": spec.name}
        if spec.description:
            entry["description"] = _plain_text(spec.description)
        entry["parameters_json_schema"] = spec.parameters
        declarations.append(entry)
    return [{"function_declarations": declarations}]


def gemini_contents(
    calls: Iterable[ToolCall],
    *,
    include_calls: bool = True,
    include_ids: bool = False,
    notes: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Gemini contents: a ``model`` content of ``function_call`` parts, then a ``user``
    content of ``function_response`` parts.

    Each response is ``{"output": <result as JSON>}`` or ``{"error": <error value as
    JSON>}``, the keys Gemini documents for a function's output and its failure.

    Args:
        calls: the finished calls.
        include_calls: also return the model content (first) that made the calls. Gemini 3
            models require the thought signatures of their function calls: append the
            model's own content instead and pass ``False``.
        include_ids: set the calls' ``id`` on the parts. Off by default: Gemini matches
            responses to calls by name and order, and Vertex AI (and some Gemini API
            versions) reject ``id`` with a 400; turn it on only when Gemini itself sent the
            ids and your endpoint accepts them.
        notes: a note per call id, sent as ``"note"`` next to that call's output or error
            (for example ``RunControl.notes()``).

    Returns:
        ``google.genai.types.Content`` dicts (an empty list for no calls).

    Raises:
        ValueError: a call is not finished yet.
    """
    finished = _finished(calls)
    if not finished:
        return []
    contents: list[dict[str, Any]] = []
    if include_calls:
        contents.append(
            {
                "role": "model",
                "parts": [
                    {
                        "function_call": _with_id(
                            call, include_ids, name=_plain_text(call.name), args=_input(call)
                        )
                    }
                    for call in finished
                ],
            }
        )
    parts: list[dict[str, Any]] = []
    for call in finished:
        retry = retry_message(call.error) if call.status is Status.ERROR else None
        if retry is not None:  # the tool's own words on how to fix the call
            response = {"error": _plain_text(retry)}
        elif call.status is Status.ERROR:
            response = {"error": _jsonable(call.error)}
        else:
            response = {"output": _jsonable(call.result)}
        note = notes.get(call.id) if notes else None
        if note:
            response["note"] = _plain_text(note)
        name = _plain_text(call.name)
        parts.append(
            {"function_response": _with_id(call, include_ids, name=name, response=response)}
        )
    contents.append({"role": "user", "parts": parts})
    return contents


def _with_id(call: ToolCall, include_id: bool, **fields: Any) -> dict[str, Any]:
    return {"id": _plain_text(call.id), **fields} if include_id else fields
