"""Per-format stream builders for the head-start tests (not a test module).

Each builder writes a few sequential calls in one provider's wire format, as plain dicts
(what the provider's JSON decodes to), and says which items carry which call's argument
text. A new adapter joins ``tests/test_headstart.py`` by adding its builder to
``FORMATS``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toolcall_tracker.adapters import (
    AISDKAdapter,
    AnthropicAdapter,
    BedrockConverseAdapter,
    CohereAdapter,
    GeminiAdapter,
    MistralAdapter,
    OllamaAdapter,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
)

Args = dict[str, Any]

CALLS: list[tuple[str, str, Args]] = [
    ("call_a", "lookup", {"key": "first", "note": "the one that should start early"}),
    ("call_b", "lookup", {"key": "second", "note": "streams while the first one runs"}),
    ("call_c", "lookup", {"key": "third", "note": "the last call of the turn"}),
]


def pieces(text: str, parts: int = 3) -> list[str]:
    """``text`` cut into ``parts`` non-empty pieces (fewer if it is shorter)."""
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


@dataclass
class Built:
    """A built stream: its items, and for each the positions of the calls whose
    argument text (or whole arguments) it carries."""

    items: list[Any]
    carries: list[set[int]]

    def add(self, item: Any, *calls: int) -> None:
        self.items.append(item)
        self.carries.append(set(calls))


def chat_chunk(tool_calls: list[Args] | None = None, finish: str | None = None) -> Args:
    delta: Args = {} if tool_calls is None else {"tool_calls": tool_calls}
    return {
        "id": "chatcmpl-head",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def build_chat(calls: list[tuple[str, str, Args]]) -> Built:
    out = Built([], [])
    for n, (call_id, name, args) in enumerate(calls):
        head = {"index": n, "id": call_id, "type": "function"}
        out.add(chat_chunk([head | {"function": {"name": name, "arguments": ""}}]))
        for piece in pieces(json.dumps(args)):
            out.add(chat_chunk([{"index": n, "function": {"arguments": piece}}]), n)
    out.add(chat_chunk(finish="tool_calls"))
    return out


def build_responses(calls: list[tuple[str, str, Args]]) -> Built:
    out = Built([], [])
    out.add({"type": "response.created", "response": {"id": "resp_1", "output": []}})
    done: list[Args] = []
    for n, (call_id, name, args) in enumerate(calls):
        item = {"type": "function_call", "id": f"fc_{n}", "call_id": call_id, "name": name}
        out.add({"type": "response.output_item.added", "output_index": n, "item": item})
        text = json.dumps(args)
        for piece in pieces(text):
            delta = {"item_id": f"fc_{n}", "output_index": n, "delta": piece}
            out.add({"type": "response.function_call_arguments.delta", **delta}, n)
        end = {"item_id": f"fc_{n}", "output_index": n, "arguments": text}
        out.add({"type": "response.function_call_arguments.done", **end}, n)
        whole = item | {"arguments": text, "status": "completed"}
        done.append(whole)
        out.add({"type": "response.output_item.done", "output_index": n, "item": whole}, n)
    out.add({"type": "response.completed", "response": {"id": "resp_1", "output": done}})
    return out


def build_anthropic(calls: list[tuple[str, str, Args]]) -> Built:
    out = Built([], [])
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    out.add({"type": "message_start", "message": message | {"model": "m", "stop_reason": None}})
    for n, (call_id, name, args) in enumerate(calls):
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        out.add({"type": "content_block_start", "index": n, "content_block": block})
        for piece in pieces(json.dumps(args)):
            delta = {"type": "input_json_delta", "partial_json": piece}
            out.add({"type": "content_block_delta", "index": n, "delta": delta}, n)
        out.add({"type": "content_block_stop", "index": n})
    out.add({"type": "message_delta", "delta": {"stop_reason": "tool_use"}})
    out.add({"type": "message_stop"})
    return out


def gemini_chunk(parts: list[Args], finish: str | None = None) -> Args:
    candidate: Args = {"index": 0, "content": {"role": "model", "parts": parts}}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate]}


def build_gemini(calls: list[tuple[str, str, Args]]) -> Built:
    """Whole calls, one per chunk (the Gemini API)."""
    out = Built([], [])
    for n, (call_id, name, args) in enumerate(calls):
        out.add(gemini_chunk([{"functionCall": {"id": call_id, "name": name, "args": args}}]), n)
    out.add(gemini_chunk([], finish="STOP"))
    return out


def build_gemini_streamed(calls: list[tuple[str, str, Args]]) -> Built:
    """Streamed arguments (Vertex AI): string values in pieces, ``willContinue: false`` ends."""
    out = Built([], [])
    for n, (call_id, name, args) in enumerate(calls):
        head = {"id": call_id, "name": name, "willContinue": True}
        out.add(gemini_chunk([{"functionCall": head}]))
        for key, value in args.items():
            cut = pieces(value)
            for i, piece in enumerate(cut):
                partial = {"jsonPath": f"$.{key}", "stringValue": piece}
                if i < len(cut) - 1:
                    partial["willContinue"] = True
                part = {"functionCall": {"partialArgs": [partial], "willContinue": True}}
                out.add(gemini_chunk([part]), n)
        out.add(gemini_chunk([{"functionCall": {}}]))
    out.add(gemini_chunk([], finish="STOP"))
    return out


def build_ai_sdk(calls: list[tuple[str, str, Args]]) -> Built:
    out = Built([], [])
    out.add({"type": "start", "messageId": "msg_1"})
    for call_id, name, args in calls:
        out.add({"type": "tool-input-start", "toolCallId": call_id, "toolName": name})
        n = len({c for cs in out.carries for c in cs})
        for piece in pieces(json.dumps(args)):
            out.add({"type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": piece}, n)
        available = {"toolCallId": call_id, "toolName": name, "input": args}
        out.add({"type": "tool-input-available", **available})
    out.add({"type": "finish"})
    return out


def build_bedrock(calls: list[tuple[str, str, Args]]) -> Built:
    """boto3's ``converse_stream`` event dicts: one content block per call."""
    out = Built([], [])
    out.add({"messageStart": {"role": "assistant"}})
    for n, (call_id, name, args) in enumerate(calls):
        start = {"toolUse": {"toolUseId": call_id, "name": name}}
        out.add({"contentBlockStart": {"start": start, "contentBlockIndex": n}})
        for piece in pieces(json.dumps(args)):
            delta = {"toolUse": {"input": piece}}
            out.add({"contentBlockDelta": {"delta": delta, "contentBlockIndex": n}}, n)
        out.add({"contentBlockStop": {"contentBlockIndex": n}})
    out.add({"messageStop": {"stopReason": "tool_use"}})
    out.add({"metadata": {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}}})
    return out


def build_cohere(calls: list[tuple[str, str, Args]]) -> Built:
    """Cohere v2 chat stream events: a call is routed by ``index`` from start to end."""
    out = Built([], [])
    out.add({"id": "msg_1", "type": "message-start", "delta": {"message": {"role": "assistant"}}})
    out.add({"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "I will look up."}}})
    for n, (call_id, name, args) in enumerate(calls):
        head = {"id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        out.add({"type": "tool-call-start", "index": n, "delta": {"message": {"tool_calls": head}}})
        for piece in pieces(json.dumps(args, indent=4)):  # Cohere pretty-prints arguments
            delta = {"message": {"tool_calls": {"function": {"arguments": piece}}}}
            out.add({"type": "tool-call-delta", "index": n, "delta": delta}, n)
        out.add({"type": "tool-call-end", "index": n})
    out.add({"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}})
    return out


def build_ollama(calls: list[tuple[str, str, Args]]) -> Built:
    """Native ``/api/chat`` lines: whole calls with object arguments and no id, one a line."""
    out = Built([], [])
    for n, (_, name, args) in enumerate(calls):
        message = {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": name, "arguments": args}}],
        }
        out.add(
            {"model": "m", "created_at": "2025-01-01T00:00:00Z", "message": message, "done": False},
            n,
        )
    last = {"role": "assistant", "content": ""}
    out.add(
        {
            "model": "m",
            "created_at": "2025-01-01T00:00:01Z",
            "message": last,
            "done": True,
            "done_reason": "stop",
        }
    )
    return out


def build_mistral(calls: list[tuple[str, str, Args]]) -> Built:
    """Mistral's chunks: each call whole in one chunk, with an id but no ``index``."""
    out = Built([], [])
    out.add(chat_chunk() | {"model": "mistral-small-latest"})
    for n, (call_id, name, args) in enumerate(calls):
        call = {"id": call_id, "function": {"name": name, "arguments": json.dumps(args)}}
        out.add(chat_chunk([call]), n)
    out.add(chat_chunk(finish="tool_calls"))
    return out


@dataclass(frozen=True)
class Format:
    adapter: Callable[[], Any]
    build: Callable[[list[tuple[str, str, Args]]], Built]


FORMATS: dict[str, Format] = {
    "openai-chat": Format(OpenAIChatAdapter, build_chat),
    "openai-responses": Format(OpenAIResponsesAdapter, build_responses),
    "anthropic": Format(AnthropicAdapter, build_anthropic),
    "gemini": Format(GeminiAdapter, build_gemini),
    "gemini-streamed": Format(GeminiAdapter, build_gemini_streamed),
    # ready="input": calls ready as the stream moves past their input, not at the step's end
    "ai-sdk": Format(lambda: AISDKAdapter(ready="input"), build_ai_sdk),
    "bedrock": Format(BedrockConverseAdapter, build_bedrock),
    "cohere": Format(CohereAdapter, build_cohere),
    "ollama": Format(OllamaAdapter, build_ollama),
    "mistral": Format(MistralAdapter, build_mistral),
}
