"""OpenAI: the Chat Completions and Responses streams, their failures, tools and results.

The home of everything this library knows of OpenAI's two APIs (and of every server
that speaks Chat Completions: LiteLLM, Groq, vLLM, Mistral's and Ollama's ``/v1``). This
module holds only their declarations; the rest loads on first use:

- ``_chat``: :class:`OpenAIChatAdapter`, Chat Completions chunks;
- ``_responses``: :class:`OpenAIResponsesAdapter`, Responses API events;
- ``_routes``: where a Chat Completions fragment belongs (choice, index, id);
- ``_shared``: what both adapters share: the failure values and the emitter;
- ``_request``: the tool definitions and result messages sent back (re-exported by
  :mod:`toolcall_tracker.tools` and :mod:`toolcall_tracker.feedback`).

Error values (stored in ``ToolCall.error``; frozen pydantic models deriving from
:class:`~toolcall_tracker.failures.CallFailure` through :class:`OpenAICallFailure`, whose
``api`` field says ``"chat.completions"`` or ``"responses"``):

- :class:`OpenAITurnCutOff` (``kind="turn_cut_off"``): the turn stopped before the call's
  arguments were complete.
- :class:`OpenAIMalformedToolCall` (``kind="malformed_tool_call"``): a field the call
  needs is unusable (arguments that are not a string, a name that never came).
- :class:`OpenAIArgumentsMismatch` (``kind="arguments_mismatch"``, Responses): the final
  ``arguments`` disagree with the streamed text (and do not merely extend it).
- :class:`OpenAILateArguments` (``kind="late_arguments"``, Chat with ``eager=True``):
  argument text arrived for a call that had already been made ready.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from ..._registry import Provider, first, item_field, lazy_names, or_type, text_field


def _chat_recognise(item: Any) -> bool:
    """A chunk: a ``choices`` list, or ``object: "chat.completion.chunk"``."""
    return (
        isinstance(item_field(item, "choices"), list)
        or item_field(item, "object") == "chat.completion.chunk"
    )


def chunk_text(item: Any) -> str | None:
    """The model's text in one Chat Completions chunk: its first choice's ``delta.content``
    (``None`` when it carries none); a mapping or an SDK object. Never raises."""
    delta = item_field(first(item_field(item, "choices")), "delta")
    return text_field(item_field(delta, "content"))


CHAT = Provider(
    format="openai-chat",
    title="OpenAI Chat Completions chunks",
    one="an OpenAI Chat Completions chunk",
    recognise=_chat_recognise,
    understands=or_type(_chat_recognise, "chunk"),  # the SDK's .stream() helper: ChunkEvent
    adapter=".adapters.openai._chat:OpenAIChatAdapter",
    tools=".adapters.openai._request:openai_chat_tools",
    messages=".adapters.openai._request:openai_chat_messages",
    extra="openai",
    text_of=chunk_text,
    rank=10,
)


def _responses_recognise(item: Any) -> bool:
    """An event whose ``type`` starts with ``response.``."""
    kind = item_field(item, "type")
    return isinstance(kind, str) and kind.startswith("response.")


def _responses_text(item: Any) -> str | None:
    """The ``delta`` of a ``response.output_text.delta`` event."""
    if item_field(item, "type") != "response.output_text.delta":
        return None
    return text_field(item_field(item, "delta"))


RESPONSES = Provider(
    format="openai-responses",
    title="OpenAI Responses events",
    one="an OpenAI Responses event",
    recognise=_responses_recognise,
    understands=or_type(_responses_recognise, "error"),  # an error event says nothing of the format
    adapter=".adapters.openai._responses:OpenAIResponsesAdapter",
    tools=".adapters.openai._request:openai_responses_tools",
    messages=".adapters.openai._request:openai_responses_items",
    extra="openai",
    text_of=_responses_text,
    rank=20,
)


PROVIDERS: Final = (CHAT, RESPONSES)


if TYPE_CHECKING:
    from ._chat import OpenAIChatAdapter
    from ._responses import OpenAIResponsesAdapter
    from ._shared import (
        OpenAIArgumentsMismatch,
        OpenAICallFailure,
        OpenAILateArguments,
        OpenAIMalformedToolCall,
        OpenAITurnCutOff,
    )

__all__ = [
    "chunk_text",
    "OpenAIArgumentsMismatch",
    "OpenAICallFailure",
    "OpenAIChatAdapter",
    "OpenAILateArguments",
    "OpenAIMalformedToolCall",
    "OpenAIResponsesAdapter",
    "OpenAITurnCutOff",
]

__getattr__, __dir__ = lazy_names(
    globals(),
    {
        "OpenAIArgumentsMismatch": "._shared",
        "OpenAICallFailure": "._shared",
        "OpenAIChatAdapter": "._chat",
        "OpenAILateArguments": "._shared",
        "OpenAIMalformedToolCall": "._shared",
        "OpenAIResponsesAdapter": "._responses",
        "OpenAITurnCutOff": "._shared",
    },
)
