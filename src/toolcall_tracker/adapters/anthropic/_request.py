"""What a request to Anthropic carries back: tool definitions and tool results (private).

:func:`anthropic_tools` and :func:`anthropic_messages`, re-exported by
:mod:`toolcall_tracker.tools` and :mod:`toolcall_tracker.feedback`. Each renderer returns
the element type the provider SDK's own ``create`` takes, so a ``mypy --strict`` program can
pass the list straight to the client; those types are the SDK's ``TypedDict`` params, named
for type checkers only. The builders follow the rules stated in
:mod:`toolcall_tracker.feedback`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..._feedback_common import (
    TextRenderer,
    _finished,
    _input,
    _reply,
    error_text,
    result_text,
)
from ..._jsonout import _plain_text
from ...calls import Status, ToolCall
from ...tools import ToolsInput, tools_by_name

if TYPE_CHECKING:
    # The SDKs' own request types, for type checkers only: nothing of an SDK is imported at
    # run time, and a program without the SDK sees them as ``Any``.
    from anthropic.types import MessageParam, ToolResultBlockParam, ToolUnionParam
    from anthropic.types import ToolParam as AnthropicToolParam

__all__ = ["anthropic_messages", "anthropic_tools"]


def anthropic_tools(tools: ToolsInput) -> list[ToolUnionParam]:
    """Anthropic Messages ``tools``: ``{"name", "description", "input_schema"}`` each.

    Typed as what ``client.messages.create(tools=...)`` takes (valid
    ``anthropic.types.ToolParam`` values).
    """
    out: list[ToolUnionParam] = []
    for spec in tools_by_name(tools).values():
        entry: AnthropicToolParam
        if spec.description:
            description = _plain_text(spec.description)
            entry = {"name": spec.name, "description": description, "input_schema": spec.parameters}
        else:
            entry = {"name": spec.name, "input_schema": spec.parameters}
        out.append(entry)
    return out


def _anthropic_input(call: ToolCall) -> dict[str, Any]:
    """A call's ``input`` for its ``tool_use`` block: its parsed arguments when they are a
    JSON object; otherwise, when it has argument text (invalid or cut-off JSON, as
    fine-grained tool streaming can send), that raw text wrapped as
    ``{"INVALID_JSON": <text>}``, as Anthropic's documentation advises; else ``{}``."""
    if isinstance(call.args, dict) or not call.args_text.strip():
        return _input(call)
    return {"INVALID_JSON": _plain_text(call.args_text)}


def anthropic_messages(
    calls: Iterable[ToolCall],
    *,
    include_calls: bool = True,
    render_result: TextRenderer = result_text,
    render_error: TextRenderer = error_text,
    notes: Mapping[str, str] | None = None,
) -> list[MessageParam]:
    """Anthropic messages: the assistant's ``tool_use`` blocks, then a user message of
    ``tool_result`` blocks (``is_error: true`` for failed calls).

    A call whose argument text never parsed to an object (invalid JSON, or text cut off by
    ``max_tokens``, which fine-grained tool streaming can produce) is sent back with its
    raw text wrapped, ``input: {"INVALID_JSON": "<text>"}``, as Anthropic's documentation
    for fine-grained tool streaming advises; a call with no text at all gets ``input: {}``.

    Returns:
        ``anthropic.types.MessageParam`` dicts (an empty list for no calls), typed as what
        ``client.messages.create(messages=...)`` takes.

    Raises:
        ValueError: a call is not finished yet.
    """
    finished = _finished(calls)
    if not finished:
        return []
    messages: list[MessageParam] = []
    if include_calls:
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": _plain_text(call.id),
                        "name": _plain_text(call.name),
                        "input": _anthropic_input(call),
                    }
                    for call in finished
                ],
            }
        )
    blocks: list[ToolResultBlockParam] = []
    for call in finished:
        failed = call.status is Status.ERROR
        blocks.append(
            {
                "type": "tool_result",
                "tool_use_id": _plain_text(call.id),
                "content": _reply(call, render_result, render_error, notes),
                "is_error": failed,
            }
        )
    messages.append({"role": "user", "content": blocks})
    return messages
