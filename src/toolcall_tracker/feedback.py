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
``{"error": {...}}``, the structured error value (``kind``, ``message``...) as JSON,
except a ``retry`` failure (the tool raised :class:`~toolcall_tracker.tools.ToolRetry`),
sent as its message alone (Gemini: ``{"error": "<message>"}``), the tool's own words on how
to fix the call.

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

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ._feedback_common import (
    TextRenderer,
    error_text,
    result_text,
    retry_message,
)
from ._jsonout import _jsonable
from .calls import ToolCall

if TYPE_CHECKING:
    from .adapters.anthropic._request import anthropic_messages
    from .adapters.bedrock._request import bedrock_messages
    from .adapters.cohere._request import cohere_messages
    from .adapters.gemini._request import gemini_contents
    from .adapters.ollama._request import ollama_messages
    from .adapters.openai._request import openai_chat_messages, openai_responses_items

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
    "retry_message",
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


def __getattr__(name: str) -> Any:
    """A provider's result-message builder (``anthropic_messages``...), from its home.

    Each lives in its provider's package (``adapters/anthropic/``); the provider registry
    finds it by name, so this module imports no provider until one is used.
    """
    from ._registry import named

    value = named("messages", name)
    globals()[name] = value
    return value
