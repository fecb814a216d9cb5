"""Bedrock Converse and Cohere v2 renderings of the benchmark workload, and their floors.

Both are measured as plain dicts only: boto3's ``converse_stream`` yields dicts itself, and
the dicts are what the Cohere SSE ``data:`` lines hold. :mod:`streams` re-exports the
renderers, :mod:`subjects` the floors (the same bare loop as the other dict floors: a dict
look-up and a list append per fragment, one join and one JSON parse per call).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic_core import from_json

if TYPE_CHECKING:
    from streams import Family, Op, Workload


def render_bedrock(w: Workload, ops: list[Op]) -> Family:
    """The workload as boto3's ``converse_stream`` event dicts (one block per call)."""
    from streams import Family

    items: list[Any] = [{"messageStart": {"role": "assistant"}}]
    sizes = [0]
    for op in ops:
        kind = op[0]
        if kind == "delta":
            delta = {"toolUse": {"input": op[2]}}
            items.append({"contentBlockDelta": {"delta": delta, "contentBlockIndex": op[1]}})
            sizes.append(len(op[2]))
            continue
        if kind == "start":
            k = op[1]
            start = {"toolUse": {"toolUseId": f"tooluse_{w.ids[k]}", "name": w.names[k]}}
            items.append({"contentBlockStart": {"start": start, "contentBlockIndex": k}})
        elif kind == "ready":
            items.append({"contentBlockStop": {"contentBlockIndex": op[1]}})
        else:
            items.append({"messageStop": {"stopReason": "tool_use"}})
            sizes.append(0)
            usage = {"inputTokens": 100, "outputTokens": len(ops), "totalTokens": 100 + len(ops)}
            items.append({"metadata": {"usage": usage, "metrics": {"latencyMs": 1000}}})
        sizes.append(0)
    return Family("bedrock-dicts", items, sizes)


def render_cohere(w: Workload, ops: list[Op]) -> Family:
    """The workload as Cohere v2 chat stream events (the SSE ``data:`` JSON)."""
    from streams import Family

    message = {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": []}
    items: list[Any] = [{"id": "bench0001", "type": "message-start", "delta": {"message": message}}]
    sizes = [0]
    for op in ops:
        kind = op[0]
        if kind == "delta":
            call: dict[str, Any] = {"function": {"arguments": op[2]}}
            delta = {"message": {"tool_calls": call}}
            items.append({"type": "tool-call-delta", "index": op[1], "delta": delta})
            sizes.append(len(op[2]))
            continue
        if kind == "start":
            k = op[1]
            function = {"name": w.names[k], "arguments": ""}
            call = {"id": f"{w.names[k]}_{w.ids[k]}", "type": "function", "function": function}
            delta = {"message": {"tool_calls": call}}
            items.append({"type": "tool-call-start", "index": k, "delta": delta})
        elif kind == "ready":
            items.append({"type": "tool-call-end", "index": op[1]})
        else:
            usage = {"tokens": {"input_tokens": 100, "output_tokens": len(ops)}}
            end = {"finish_reason": "TOOL_CALL", "usage": usage}
            items.append({"type": "message-end", "delta": end})
        sizes.append(0)
    return Family("cohere-dicts", items, sizes)


def floor_bedrock_dicts(items: list[Any], complete: bool) -> Any:
    bufs: dict[int, list[str]] = {}
    out = []
    for ev in items:
        if "contentBlockDelta" in ev:
            body = ev["contentBlockDelta"]
            bufs[body["contentBlockIndex"]].append(body["delta"]["toolUse"]["input"])
        elif "contentBlockStart" in ev:
            bufs[ev["contentBlockStart"]["contentBlockIndex"]] = []
        elif "contentBlockStop" in ev:
            out.append(from_json("".join(bufs.pop(ev["contentBlockStop"]["contentBlockIndex"]))))
    return out


def floor_cohere_dicts(items: list[Any], complete: bool) -> Any:
    bufs: dict[int, list[str]] = {}
    out = []
    for ev in items:
        kind = ev["type"]
        if kind == "tool-call-delta":
            bufs[ev["index"]].append(ev["delta"]["message"]["tool_calls"]["function"]["arguments"])
        elif kind == "tool-call-start":
            bufs[ev["index"]] = []
        elif kind == "tool-call-end":
            out.append(from_json("".join(bufs.pop(ev["index"]))))
    return out


# -- Gemini, Ollama (whole calls), Mistral (Chat chunks), AI SDK UI parts ------------------


def _call_order(ops: list[Op]) -> list[int]:
    """The calls in the order they complete: whole-call formats send each one then."""
    return [op[1] for op in ops if op[0] == "ready"]


def render_gemini(w: Workload, ops: list[Op]) -> Family:
    """The workload as ``streamGenerateContent`` chunks: each call whole, in its own chunk
    (``args`` as an object), then a chunk with the finish reason."""
    from streams import Family

    items: list[Any] = []
    sizes: list[int] = []
    for k in _call_order(ops):
        part = {"functionCall": {"name": w.names[k], "args": w.expected[k]}}
        content = {"role": "model", "parts": [part]}
        items.append({"candidates": [{"content": content, "index": 0}]})
        sizes.append(len(w.texts[k]))
    finish = {"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}
    items.append({"candidates": [{**finish, "index": 0}], "modelVersion": "gemini-2.5-flash"})
    sizes.append(0)
    return Family("gemini-dicts", items, sizes)


def render_ollama(w: Workload, ops: list[Op]) -> Family:
    """The workload as Ollama ``/api/chat`` NDJSON lines: each call whole in a line."""
    from streams import Family

    items: list[Any] = []
    sizes: list[int] = []
    for k in _call_order(ops):
        call = {"function": {"name": w.names[k], "arguments": w.expected[k]}}
        message = {"role": "assistant", "content": "", "tool_calls": [call]}
        items.append({"model": "llama3.2", "message": message, "done": False})
        sizes.append(len(w.texts[k]))
    message = {"role": "assistant", "content": ""}
    items.append({"model": "llama3.2", "message": message, "done": True, "done_reason": "stop"})
    sizes.append(0)
    return Family("ollama-dicts", items, sizes)


def render_mistral(w: Workload, ops: list[Op]) -> Family:
    """The workload as Mistral's chat stream: Chat Completions chunks."""
    from streams import Family, render_chat

    chat = render_chat(w, ops)
    return Family("mistral-dicts", chat.items, chat.item_bytes)


def render_ai_sdk(w: Workload, ops: list[Op]) -> Family:
    """The workload as AI SDK UI message stream parts (one step)."""
    from streams import Family

    items: list[Any] = [{"type": "start"}, {"type": "start-step"}]
    sizes = [0, 0]
    for op in ops:
        kind = op[0]
        if kind == "delta":
            items.append(
                {"type": "tool-input-delta", "toolCallId": w.ids[op[1]], "inputTextDelta": op[2]}
            )
            sizes.append(len(op[2]))
            continue
        if kind == "start":
            k = op[1]
            items.append(
                {"type": "tool-input-start", "toolCallId": w.ids[k], "toolName": w.names[k]}
            )
        elif kind == "ready":
            k = op[1]
            items.append(
                {
                    "type": "tool-input-available",
                    "toolCallId": w.ids[k],
                    "toolName": w.names[k],
                    "input": w.expected[k],
                }
            )
        else:
            items.append({"type": "finish-step"})
            sizes.append(0)
            items.append({"type": "finish"})
        sizes.append(0)
    return Family("ai_sdk-dicts", items, sizes)


def floor_gemini_dicts(items: list[Any], complete: bool) -> Any:
    out = []
    for chunk in items:
        for candidate in chunk["candidates"]:
            for part in candidate["content"]["parts"]:
                call = part.get("functionCall")
                if call is not None:
                    out.append(call["args"])
    return out


def floor_ollama_dicts(items: list[Any], complete: bool) -> Any:
    out = []
    for line in items:
        for call in line["message"].get("tool_calls") or ():
            out.append(call["function"]["arguments"])
    return out


def floor_ai_sdk_dicts(items: list[Any], complete: bool) -> Any:
    bufs: dict[str, list[str]] = {}
    out = []
    for part in items:
        kind = part["type"]
        if kind == "tool-input-delta":
            bufs[part["toolCallId"]].append(part["inputTextDelta"])
        elif kind == "tool-input-start":
            bufs[part["toolCallId"]] = []
        elif kind == "tool-input-available":
            out.append(from_json("".join(bufs.pop(part["toolCallId"]))))
    return out
