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

Every adapter honours the :class:`~toolcall_tracker.Limits` of the machine or tracker it
writes into (``feed`` / ``end``: its own ``limits=``): ids and names past the limits fail
or re-id only their own call, and no adapter keeps argument text beyond them.
"""

from ._base import AdaptedStream, Adapter, AdapterEvent, adapt, apply_stream
from .ai_sdk import AISDKAdapter, AISDKEncoder, AISDKListener, encode_ai_sdk
from .anthropic import AnthropicAdapter
from .bedrock import BedrockConverseAdapter, BedrockMalformedEvent, BedrockServerToolError
from .cohere import CohereAdapter, CohereMalformedEvent
from .gemini import GeminiAdapter
from .mistral import MistralAdapter
from .ollama import OllamaAdapter, OllamaMalformedToolCall
from .openai_chat import OpenAIChatAdapter
from .openai_responses import OpenAIResponsesAdapter

__all__ = [
    "AISDKAdapter",
    "AISDKEncoder",
    "AISDKListener",
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
]
