"""Sans-IO adapters from real provider streams to tracker events.

Each adapter has ``feed(item) -> list[Event]`` and ``end() -> list[Event]``; :func:`adapt`
drives one over an async stream: ``await tracker.consume(adapt(stream, OpenAIChatAdapter()))``.
Items are the official SDK's typed objects or the plain dicts decoded from the provider's
JSON; no adapter imports a provider SDK.

- :class:`OpenAIChatAdapter`: Chat Completions chunks (OpenAI and compatible servers).
- :class:`OpenAIResponsesAdapter`: Responses API events.
- :class:`AnthropicAdapter`: Anthropic Messages stream events.
- :class:`GeminiAdapter`: google-genai ``GenerateContentResponse`` chunks.
- :class:`BedrockConverseAdapter`: AWS Bedrock ``converse_stream`` event dicts.
- :class:`CohereAdapter`: Cohere v2 chat stream events.
- :class:`MistralAdapter`: ``mistralai`` stream objects (Chat Completions with quirks).
- :class:`OllamaAdapter`: Ollama ``/api/chat`` lines (and its OpenAI-compatible chunks).
- :class:`AISDKAdapter`: Vercel AI SDK UI message stream parts; :class:`AISDKEncoder` goes
  the other way, from tracker events to those parts (:class:`AISDKListener`: the same
  parts from a tracker's change feed).
- :class:`AISDKDataStreamAdapter`: the AI SDK v4 data stream protocol's lines (``9:{...}``).

Each provider has one home, a package here (``adapters/anthropic/``: its adapter, its
failure values, its tool definitions and result messages; see ``docs/providers.md``), and
this package imports none of them until a name is used: importing it costs the
registry's declarations only. An adapter declared only in the provider registry is
importable from here by its class name too.

Every adapter honours the :class:`~toolcall_tracker.Limits` of the machine or tracker it
writes into (``feed`` / ``end``: its own ``limits=``): ids and names past the limits fail
or re-id only their own call, and no adapter keeps argument text beyond them.
"""

from typing import TYPE_CHECKING, Any

from .._registry import lazy_names as _lazy_names
from .._registry import providers as _providers

if TYPE_CHECKING:
    from ._drive import AdaptedStream, adapt, apply_stream
    from ._protocol import Adapter, AdapterEvent
    from .ai_sdk import (
        SSE_DONE,
        UI_MESSAGE_STREAM_HEADERS,
        AISDKAdapter,
        AISDKApprovalPending,
        AISDKDataStreamAdapter,
        AISDKEncoder,
        AISDKListener,
        AISDKStepReset,
        AISDKStreamIds,
        encode_ai_sdk,
        to_sse,
    )
    from .anthropic import AnthropicAdapter
    from .bedrock import BedrockConverseAdapter, BedrockMalformedEvent, BedrockServerToolError
    from .cohere import CohereAdapter, CohereMalformedEvent
    from .gemini import GeminiAdapter
    from .mistral import MistralAdapter
    from .ollama import OllamaAdapter, OllamaMalformedToolCall
    from .openai import OpenAIChatAdapter, OpenAIResponsesAdapter

__all__ = [
    "SSE_DONE",
    "UI_MESSAGE_STREAM_HEADERS",
    "AISDKAdapter",
    "AISDKApprovalPending",
    "AISDKDataStreamAdapter",
    "AISDKEncoder",
    "AISDKListener",
    "AISDKStepReset",
    "AISDKStreamIds",
    "AdaptedStream",
    "Adapter",
    "AdapterEvent",
    "AnthropicAdapter",
    "BedrockConverseAdapter",
    "BedrockMalformedEvent",
    "BedrockServerToolError",
    "CohereAdapter",
    "CohereMalformedEvent",
    "GeminiAdapter",
    "MistralAdapter",
    "OllamaAdapter",
    "OllamaMalformedToolCall",
    "OpenAIChatAdapter",
    "OpenAIResponsesAdapter",
    "adapt",
    "apply_stream",
    "encode_ai_sdk",
    "to_sse",
]

_HOMES = {
    **dict.fromkeys(("AdaptedStream", "adapt", "apply_stream"), "._drive"),
    **dict.fromkeys(("Adapter", "AdapterEvent"), "._protocol"),
    **dict.fromkeys(
        (
            "SSE_DONE",
            "UI_MESSAGE_STREAM_HEADERS",
            "AISDKAdapter",
            "AISDKApprovalPending",
            "AISDKDataStreamAdapter",
            "AISDKEncoder",
            "AISDKListener",
            "AISDKStepReset",
            "AISDKStreamIds",
            "encode_ai_sdk",
            "to_sse",
        ),
        ".ai_sdk",
    ),
    "AnthropicAdapter": ".anthropic",
    **dict.fromkeys(
        ("BedrockConverseAdapter", "BedrockMalformedEvent", "BedrockServerToolError"), ".bedrock"
    ),
    **dict.fromkeys(("CohereAdapter", "CohereMalformedEvent"), ".cohere"),
    "GeminiAdapter": ".gemini",
    "MistralAdapter": ".mistral",
    **dict.fromkeys(("OllamaAdapter", "OllamaMalformedToolCall"), ".ollama"),
    **dict.fromkeys(("OpenAIChatAdapter", "OpenAIResponsesAdapter"), ".openai"),
}
"""Where each name of this package lives (imported on first use)."""

_named, __dir__ = _lazy_names(globals(), _HOMES)


def __getattr__(name: str) -> Any:
    """A name of this package, or an adapter class declared in the provider registry."""
    if name in _HOMES:
        return _named(name)
    for provider in _providers():
        if provider.adapter is not None and provider.adapter_name == name:
            return provider.load("adapter")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
