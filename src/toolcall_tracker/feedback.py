"""Feeding results back: finished calls as the next request's messages, per provider.

Each helper takes the finished calls of a turn (``tracker.list()``, or what
:meth:`~toolcall_tracker.runner.ToolRunner.run` returns: every call must be ``done`` or
``error``) and returns plain dicts that the provider's SDK accepts as-is:

- :func:`openai_chat_messages`: an ``assistant`` message with ``tool_calls``, then one
  ``role: "tool"`` message per call (Chat Completions);
- :func:`openai_responses_items`: ``function_call`` items, then ``function_call_output``
  items (Responses API);
- :func:`anthropic_messages`: an ``assistant`` message with ``tool_use`` blocks, then a
  ``user`` message with one ``tool_result`` block per call, ``is_error`` set for failures;
- :func:`gemini_contents`: a ``model`` content with ``function_call`` parts, then a
  ``user`` content with one ``function_response`` part per call;
- :func:`ollama_messages`: an ``assistant`` message with ``tool_calls`` (arguments as
  objects, no ids), then one ``role: "tool"`` message per call naming it by ``tool_name``
  (Ollama's native ``/api/chat``);
- :func:`bedrock_messages`: an ``assistant`` message with ``toolUse`` blocks, then a ``user``
  message with one ``toolResult`` block per call, ``status: "error"`` for failures
  (Bedrock Converse; a JSON-object result goes as a ``json`` block);
- :func:`cohere_messages`: an ``assistant`` message with ``tool_calls``, then one
  ``role: "tool"`` message per call with its ``tool_call_id`` (Cohere v2; a JSON-object
  result goes as a ``document`` block).

With ``include_calls=False`` only the second half (the results) is returned: use that when
you append the model's own assistant message/content to the history, which you should do
whenever it carries more than the calls (text, Anthropic thinking blocks, Gemini thought
signatures, the Responses API's reasoning items) or when chaining with
``previous_response_id``.

Every call must be finished: a builder given a call that is not (one the runner left
``running`` because it awaits a human's approval, say) raises ``ValueError`` naming every
such call, so no request ever sends a call without its result. ``notes`` (per call id,
e.g. ``RunControl.notes()`` for arguments a human edited) are appended to the replies.

Results are sent as JSON text where the provider wants a string (a ``str`` result is sent
as it is) and as JSON values for Gemini; a failed call is sent as
``{"error": {...}}``, the structured error value (``kind``, ``message``...) as JSON.

No builder raises on a value JSON cannot hold; every one applies the same rules
(``toolcall_tracker._jsonout``, and the docs' Reliability page):

- JSON text (results, errors, the OpenAI ``arguments``) is strict JSON: a lone surrogate is
  written as a ``\\uXXXX`` escape, NaN and infinities as ``null``, integers exactly;
- plain strings handed to the SDK (ids, names, a ``str`` result, whatever a custom renderer
  returns) and the strings inside JSON values handed to it (Anthropic's ``input``, Gemini's
  ``args`` and ``response``) have each lone surrogate replaced with U+FFFD, since the SDKs
  write requests as raw UTF-8;
- ``bytes`` are their UTF-8 text (invalid bytes replaced with U+FFFD); pydantic models,
  dataclasses, dates... as pydantic dumps them; any other object as its ``str`` (or
  ``"<TypeName>"`` when that raises); a container inside itself as ``"<cycle>"``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ._feedback_common import (
    TextRenderer,
    _finished,
    _input,
    _reply,
    error_text,
    result_text,
)
from ._feedback_converse import bedrock_messages, cohere_messages
from ._jsonout import _escape_surrogates, _jsonable, _plain_text
from .calls import Status, ToolCall

if TYPE_CHECKING:
    # The SDKs' own request types, for type checkers only (see ``tools``): nothing of an SDK
    # is imported at run time, and without the SDK they are ``Any``.
    from anthropic.types import MessageParam, ToolResultBlockParam
    from openai.types.chat import ChatCompletionMessageParam
    from openai.types.responses import ResponseInputParam

__all__ = [
    "TextRenderer",
    "anthropic_messages",
    "bedrock_messages",
    "cohere_messages",
    "error_text",
    "gemini_contents",
    "jsonable",
    "ollama_messages",
    "openai_chat_messages",
    "openai_responses_items",
    "provider_messages",
    "result_text",
]


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data that any JSON writer (and so any SDK) accepts; never raises.

    Pydantic models and dataclasses are dumped, dates become ISO strings, sets and tuples
    lists, ``bytes`` their UTF-8 text (invalid bytes replaced with U+FFFD), NaN and
    infinities ``None``, lone surrogates U+FFFD, a container inside itself ``"<cycle>"``;
    any other object becomes its ``str`` (``"<TypeName>"`` when ``str`` raises). An integer
    too long for Python's ``str`` (``sys.get_int_max_str_digits()``) becomes its digits as a
    string.
    """
    return _jsonable(value)


def _anthropic_input(call: ToolCall) -> dict[str, Any]:
    """A call's ``input`` for its ``tool_use`` block: its parsed arguments when they are a
    JSON object; otherwise, when it has argument text (invalid or cut-off JSON, as
    fine-grained tool streaming can send), that raw text wrapped as
    ``{"INVALID_JSON": <text>}``, as Anthropic's documentation advises; else ``{}``."""
    if isinstance(call.args, dict) or not call.args_text.strip():
        return _input(call)
    return {"INVALID_JSON": _plain_text(call.args_text)}


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
        if call.status is Status.ERROR:
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


def _with_id(call: ToolCall, include_id: bool, **fields: Any) -> dict[str, Any]:
    return {"id": _plain_text(call.id), **fields} if include_id else fields


def provider_messages(fmt: str, calls: Iterable[ToolCall], **options: Any) -> list[Any]:
    """The result messages of format ``fmt``, by its name (the provider registry's).

    ``provider_messages("anthropic", calls)`` is ``anthropic_messages(calls)``;
    ``options`` (``include_calls``, ``notes``...) are passed on. Useful when the
    provider is chosen at run time, e.g. from configuration.

    Raises:
        ValueError: no format has that name, or it has no result messages (``ai-sdk``).
    """
    from ._registry import get

    provider = get(fmt)
    if provider.messages is None:
        raise ValueError(f"the {fmt} format has no result messages")
    build: Any = provider.load("messages")
    return list(build(calls, **options))
