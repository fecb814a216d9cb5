"""What a request to OpenAI carries back: tool definitions and tool results (private).

:func:`openai_chat_tools`, :func:`openai_responses_tools`, :func:`openai_chat_messages` and
:func:`openai_responses_items`, re-exported by :mod:`toolcall_tracker.tools` and
:mod:`toolcall_tracker.feedback`. Each renderer returns the element type the provider SDK's
own ``create`` takes, so a ``mypy --strict`` program can pass the list straight to the
client; those types are the SDK's ``TypedDict`` params, named for type checkers only. The
builders follow the rules stated in :mod:`toolcall_tracker.feedback`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from ..._feedback_common import (
    TextRenderer,
    _finished,
    _reply,
    error_text,
    result_text,
)
from ..._jsonout import _escape_surrogates, _plain_text
from ...calls import ToolCall
from ...tools import ToolsInput, tools_by_name

if TYPE_CHECKING:
    # The SDKs' own request types, for type checkers only: nothing of an SDK is imported at
    # run time, and a program without the SDK sees them as ``Any``.
    from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolUnionParam
    from openai.types.responses import FunctionToolParam, ResponseInputParam, ToolParam
    from openai.types.shared_params import FunctionDefinition

__all__ = [
    "openai_chat_messages",
    "openai_chat_tools",
    "openai_responses_items",
    "openai_responses_tools",
]


def openai_chat_tools(tools: ToolsInput) -> list[ChatCompletionToolUnionParam]:
    """OpenAI Chat Completions ``tools``: ``{"type": "function", "function": {...}}`` each.

    Typed as what ``client.chat.completions.create(tools=...)`` takes (valid
    ``openai.types.chat.ChatCompletionFunctionToolParam`` values).
    """
    out: list[ChatCompletionToolUnionParam] = []
    for spec in tools_by_name(tools).values():
        function: FunctionDefinition = {"name": spec.name}
        if spec.description:
            function["description"] = _plain_text(spec.description)
        function["parameters"] = spec.parameters
        out.append({"type": "function", "function": function})
    return out


def openai_responses_tools(tools: ToolsInput) -> list[ToolParam]:
    """OpenAI Responses ``tools``: ``{"type": "function", "name": ..., "parameters": ...}``.

    ``strict`` is ``False`` (strict mode needs every property required). Typed as what
    ``client.responses.create(tools=...)`` takes (valid
    ``openai.types.responses.FunctionToolParam`` values).
    """
    out: list[ToolParam] = []
    for spec in tools_by_name(tools).values():
        entry: FunctionToolParam
        if spec.description:
            description = _plain_text(spec.description)
            entry = {
                "type": "function",
                "name": spec.name,
                "description": description,
                "parameters": spec.parameters,
                "strict": False,
            }
        else:
            name, parameters = spec.name, spec.parameters
            entry = {"type": "function", "name": name, "parameters": parameters, "strict": False}
        out.append(entry)
    return out


def openai_chat_messages(
    calls: Iterable[ToolCall],
    *,
    include_calls: bool = True,
    render_result: TextRenderer = result_text,
    render_error: TextRenderer = error_text,
    notes: Mapping[str, str] | None = None,
) -> list[ChatCompletionMessageParam]:
    """Chat Completions messages: the assistant's ``tool_calls``, then ``role: tool`` replies.

    Args:
        calls: the finished calls, in the order the model made them.
        include_calls: also return the assistant message (first) that made the calls.
        render_result: turns a result into the message content.
        render_error: turns an error value into the message content.
        notes: a note per call id, appended to that call's reply (for example
            ``RunControl.notes()``: the arguments a human edited before the tool ran).

    Returns:
        ``openai.types.chat.ChatCompletionMessageParam`` dicts (an empty list for no calls),
        typed as what ``client.chat.completions.create(messages=...)`` takes.

    Raises:
        ValueError: a call is not finished yet.
    """
    finished = _finished(calls)
    if not finished:
        return []
    messages: list[ChatCompletionMessageParam] = []
    if include_calls:
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": _plain_text(call.id),
                        "type": "function",
                        "function": {
                            "name": _plain_text(call.name),
                            "arguments": _escape_surrogates(call.args_text),
                        },
                    }
                    for call in finished
                ],
            }
        )
    for call in finished:
        content = _reply(call, render_result, render_error, notes)
        messages.append({"role": "tool", "tool_call_id": _plain_text(call.id), "content": content})
    return messages


def openai_responses_items(
    calls: Iterable[ToolCall],
    *,
    include_calls: bool = True,
    render_result: TextRenderer = result_text,
    render_error: TextRenderer = error_text,
    notes: Mapping[str, str] | None = None,
) -> ResponseInputParam:
    """Responses API input items: ``function_call`` items, then ``function_call_output``.

    The calls' ids must be the model's ``call_id`` values. With ``previous_response_id``
    pass ``include_calls=False``: the server already has the calls.

    A custom tool's call (free-text input; its argument text is one JSON string, see
    :class:`~toolcall_tracker.adapters.OpenAIResponsesAdapter`) is answered in its own
    shape: a ``custom_tool_call`` item with its ``input`` text, then a
    ``custom_tool_call_output``.

    Returns:
        ``openai.types.responses.ResponseInputItemParam`` dicts, typed as what
        ``client.responses.create(input=...)`` takes (``ResponseInputParam``).

    Raises:
        ValueError: a call is not finished yet.
    """
    finished = _finished(calls)
    items: ResponseInputParam = []
    if include_calls:
        for call in finished:
            if _is_custom(call):
                items.append(
                    {
                        "type": "custom_tool_call",
                        "call_id": _plain_text(call.id),
                        "name": _plain_text(call.name),
                        "input": _custom_input(call),
                    }
                )
            else:
                items.append(
                    {
                        "type": "function_call",
                        "call_id": _plain_text(call.id),
                        "name": _plain_text(call.name),
                        "arguments": _escape_surrogates(call.args_text),
                    }
                )
    for call in finished:
        output = _reply(call, render_result, render_error, notes)
        if _is_custom(call):
            items.append(
                {
                    "type": "custom_tool_call_output",
                    "call_id": _plain_text(call.id),
                    "output": output,
                }
            )
        else:
            items.append(
                {"type": "function_call_output", "call_id": _plain_text(call.id), "output": output}
            )
    return items


def _is_custom(call: ToolCall) -> bool:
    """Whether ``call`` is a custom tool's call: its argument text is one JSON string."""
    return call.args_text.lstrip(" \t\n\r").startswith('"')


def _custom_input(call: ToolCall) -> str:
    """The free text a custom tool's call was made with (its raw text if it never parsed)."""
    args = call.args
    return _plain_text(args) if isinstance(args, str) else _escape_surrogates(call.args_text)
