"""Deterministic synthetic streams: one logical stream, rendered in every input shape.

A workload is a number of tool calls, each with argument JSON of an exact byte size,
split into fixed-size fragments, either one call after the other or round-robin
interleaved. :func:`build_workload` renders that one logical stream as

- the seed wire-shape dicts (``{"type": "delta", "id": ..., "argsTextDelta": ...}``) and
  the library's event models (``seed-dicts``, ``seed-models``);
- OpenAI Chat Completions chunks, OpenAI Responses events and Anthropic Messages events,
  each as plain dicts (the JSON of the SSE ``data:`` lines) and as the official SDK's own
  typed objects (``chat-dicts``, ``chat-objects``, ``responses-...``, ``anthropic-...``);
- Bedrock Converse event dicts, Cohere v2 chat events, Gemini chunks and Ollama lines
  (each call whole), Mistral's chat chunks and AI SDK UI parts, as dicts only
  (``bedrock-dicts``... ``ai_sdk-dicts``; the renderers live in ``_dict_streams``).

The typed objects are built with each SDK model's ``model_validate``. :func:`cross_check`
serves a prefix of the same stream as an SSE transcript to the official clients (over an
in-memory transport) and checks that the objects they produce are equal, class for class.
All argument text is ASCII, so characters and bytes are the same count.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from _dict_streams import (
    render_ai_sdk,
    render_bedrock,
    render_cohere,
    render_gemini,
    render_mistral,
    render_ollama,
)
from pydantic_core import from_json

__all__ = [  # and the rest; these live elsewhere
    "render_ai_sdk",
    "render_bedrock",
    "render_cohere",
    "render_gemini",
    "render_mistral",
    "render_ollama",
]

SEED = 20240601
NAMES = ("search", "read_file", "write_file", "run_sql", "http_get", "summarize", "plot", "calc")
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "theta",
    "kappa",
    "lambda",
    "sigma",
    "omega",
    "tool",
    "call",
    "stream",
    "token",
    "json",
    "args",
    "query",
    "limit",
    "offset",
    "filter",
    "region",
    "user",
    "order",
    "total",
    "price",
    "quote",
]


@dataclass(frozen=True)
class WorkloadSpec:
    """One workload: ``calls`` calls of ``arg_bytes`` bytes in ``fragment``-byte deltas."""

    name: str
    title: str
    calls: int
    arg_bytes: int
    fragment: int = 8
    interleaved: bool = False


@dataclass
class Family:
    """One input shape of a workload: the items and the argument bytes each carries."""

    name: str
    items: list[Any]
    item_bytes: list[int]

    def bytes_upto(self, n: int) -> int:
        return sum(self.item_bytes[:n])


@dataclass
class Workload:
    spec: WorkloadSpec
    ids: list[str]
    names: list[str]
    texts: list[str]
    expected: list[Any]
    families: dict[str, Family] = field(default_factory=dict)

    @property
    def arg_bytes(self) -> int:
        return sum(len(t) for t in self.texts)


# -- argument JSON ----------------------------------------------------------------------


def make_args(rng: random.Random, size: int) -> str:
    """Valid JSON object text of exactly ``size`` ASCII bytes (``size`` >= 64)."""
    obj: dict[str, Any] = {
        "query": " ".join(rng.choice(WORDS) for _ in range(4)),
        "limit": rng.randint(1, 500),
        "items": [],
        "pad": "",
    }
    base = len(json.dumps(obj))
    items: list[dict[str, Any]] = obj["items"]
    used = base
    while True:
        item = {
            "id": rng.randint(0, 10**9),
            "name": f"{rng.choice(WORDS)}_{rng.choice(WORDS)}",
            "score": round(rng.random() * 1000, 3),
            "ok": rng.random() < 0.5,
            "note": f'say "{rng.choice(WORDS)}"\n',
        }
        cost = len(json.dumps(item)) + (2 if items else 0)
        if used + cost > size - 8:
            break
        items.append(item)
        used += cost
    text = json.dumps(obj)
    pad = size - len(text)
    if pad < 0:
        raise ValueError(f"argument size {size} is too small")
    obj["pad"] = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(pad))
    text = json.dumps(obj)
    assert len(text) == size, (len(text), size)
    return text


# -- the logical stream -----------------------------------------------------------------

# An op is ("start", k), ("delta", k, fragment), ("ready", k) or ("end",).
Op = tuple[Any, ...]


def schedule(spec: WorkloadSpec, texts: list[str]) -> list[Op]:
    step = spec.fragment
    frags = [[t[i : i + step] for i in range(0, len(t), step)] for t in texts]
    ops: list[Op] = []
    if spec.interleaved:
        rounds = max(len(f) for f in frags)
        for r in range(rounds):
            for k, parts in enumerate(frags):
                if r == 0:
                    ops.append(("start", k))
                if r < len(parts):
                    ops.append(("delta", k, parts[r]))
                if r == len(parts) - 1:
                    ops.append(("ready", k))
    else:
        for k, parts in enumerate(frags):
            ops.append(("start", k))
            ops.extend(("delta", k, p) for p in parts)
            ops.append(("ready", k))
    ops.append(("end",))
    return ops


# -- renderers: one function per shape, each returns (items, argument bytes per item) ---------


def render_seed(w: Workload, ops: list[Op]) -> Family:
    items: list[Any] = []
    sizes: list[int] = []
    for op in ops:
        kind = op[0]
        if kind == "delta":
            items.append({"type": "delta", "id": w.ids[op[1]], "argsTextDelta": op[2]})
            sizes.append(len(op[2]))
            continue
        if kind == "start":
            items.append({"type": "start", "id": w.ids[op[1]], "name": w.names[op[1]]})
        elif kind == "ready":
            items.append({"type": "ready", "id": w.ids[op[1]]})
        else:
            items.append({"type": "end", "reason": "tool_calls"})
        sizes.append(0)
    return Family("seed-dicts", items, sizes)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-bench0001",
        "object": "chat.completion.chunk",
        "created": 1717200000,
        "model": "gpt-4o-2024-08-06",
        "system_fingerprint": "fp_bench",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def render_chat(w: Workload, ops: list[Op]) -> Family:
    items: list[Any] = [_chunk({"role": "assistant", "content": None})]
    sizes = [0]
    for op in ops:
        kind = op[0]
        if kind == "delta":
            call = {"index": op[1], "function": {"arguments": op[2]}}
            items.append(_chunk({"tool_calls": [call]}))
            sizes.append(len(op[2]))
        elif kind == "start":
            k = op[1]
            call = {
                "index": k,
                "id": w.ids[k],
                "type": "function",
                "function": {"name": w.names[k], "arguments": ""},
            }
            items.append(_chunk({"tool_calls": [call]}))
            sizes.append(0)
        elif kind == "end":
            items.append(_chunk({}, "tool_calls"))
            sizes.append(0)
        # Chat Completions has no per-call end marker: "ready" renders as nothing.
    return Family("chat-dicts", items, sizes)


def _response(status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "resp_bench0001",
        "object": "response",
        "created_at": 1717200000,
        "model": "gpt-4o-2024-08-06",
        "status": status,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "temperature": 1.0,
        "top_p": 1.0,
    }


def _fc_item(w: Workload, k: int, arguments: str, status: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{w.ids[k]}",
        "call_id": w.ids[k],
        "name": w.names[k],
        "arguments": arguments,
        "status": status,
    }


def render_responses(w: Workload, ops: list[Op]) -> Family:
    items: list[Any] = []
    sizes: list[int] = []

    def add(event: dict[str, Any], size: int = 0) -> None:
        event["sequence_number"] = len(items)
        items.append(event)
        sizes.append(size)

    add({"type": "response.created", "response": _response("in_progress", [])})
    add({"type": "response.in_progress", "response": _response("in_progress", [])})
    for op in ops:
        kind = op[0]
        if kind == "delta":
            k = op[1]
            add(
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": f"fc_{w.ids[k]}",
                    "output_index": k,
                    "delta": op[2],
                },
                len(op[2]),
            )
        elif kind == "start":
            k = op[1]
            item = _fc_item(w, k, "", "in_progress")
            add({"type": "response.output_item.added", "output_index": k, "item": item})
        elif kind == "ready":
            k = op[1]
            add(
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": f"fc_{w.ids[k]}",
                    "output_index": k,
                    "arguments": w.texts[k],
                }
            )
            item = _fc_item(w, k, w.texts[k], "completed")
            add({"type": "response.output_item.done", "output_index": k, "item": item})
        else:
            output = [_fc_item(w, k, w.texts[k], "completed") for k in range(len(w.ids))]
            add({"type": "response.completed", "response": _response("completed", output)})
    return Family("responses-dicts", items, sizes)


def render_anthropic(w: Workload, ops: list[Op]) -> Family:
    items: list[Any] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_bench0001",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 100, "output_tokens": 1},
            },
        }
    ]
    sizes = [0]
    for op in ops:
        kind = op[0]
        if kind == "delta":
            delta = {"type": "input_json_delta", "partial_json": op[2]}
            items.append({"type": "content_block_delta", "index": op[1], "delta": delta})
            sizes.append(len(op[2]))
            continue
        if kind == "start":
            k = op[1]
            block = {"type": "tool_use", "id": f"toolu_{w.ids[k]}", "name": w.names[k], "input": {}}
            items.append({"type": "content_block_start", "index": k, "content_block": block})
        elif kind == "ready":
            items.append({"type": "content_block_stop", "index": op[1]})
        else:
            items.append(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                    "usage": {"output_tokens": len(ops)},
                }
            )
            sizes.append(0)
            items.append({"type": "message_stop"})
        sizes.append(0)
    return Family("anthropic-dicts", items, sizes)


# -- typed objects ------------------------------------------------------------------------


def _chat_validator() -> Callable[[dict[str, Any]], Any]:
    from openai.types.chat import ChatCompletionChunk

    return ChatCompletionChunk.model_validate


def _responses_validator() -> Callable[[dict[str, Any]], Any]:
    from openai.types import responses as r

    classes = {
        "response.created": r.ResponseCreatedEvent,
        "response.in_progress": r.ResponseInProgressEvent,
        "response.output_item.added": r.ResponseOutputItemAddedEvent,
        "response.function_call_arguments.delta": r.ResponseFunctionCallArgumentsDeltaEvent,
        "response.function_call_arguments.done": r.ResponseFunctionCallArgumentsDoneEvent,
        "response.output_item.done": r.ResponseOutputItemDoneEvent,
        "response.completed": r.ResponseCompletedEvent,
    }
    return lambda d: classes[d["type"]].model_validate(d)


def _anthropic_validator() -> Callable[[dict[str, Any]], Any]:
    from anthropic import types as t

    classes = {
        "message_start": t.RawMessageStartEvent,
        "content_block_start": t.RawContentBlockStartEvent,
        "content_block_delta": t.RawContentBlockDeltaEvent,
        "content_block_stop": t.RawContentBlockStopEvent,
        "message_delta": t.RawMessageDeltaEvent,
        "message_stop": t.RawMessageStopEvent,
    }
    return lambda d: classes[d["type"]].model_validate(d)


VALIDATORS: dict[str, Callable[[], Callable[[dict[str, Any]], Any]]] = {
    "chat": _chat_validator,
    "responses": _responses_validator,
    "anthropic": _anthropic_validator,
}


def _seed_models(items: list[Any]) -> list[Any]:
    from toolcall_tracker import parse_event

    return [parse_event(d) for d in items]


def build_workload(
    spec: WorkloadSpec,
    families: set[str],
    notes: list[str],
) -> Workload:
    """Build the ``families`` (shape names) of one workload, deterministically."""
    rng = random.Random(f"{SEED}:{spec.name}")
    ids = [f"call_{k:05d}" for k in range(spec.calls)]
    names = [NAMES[k % len(NAMES)] for k in range(spec.calls)]
    texts = [make_args(rng, spec.arg_bytes) for _ in range(spec.calls)]
    w = Workload(spec, ids, names, texts, [from_json(t) for t in texts])
    ops = schedule(spec, texts)
    renderers = {
        "seed": render_seed,
        "chat": render_chat,
        "responses": render_responses,
        "anthropic": render_anthropic,
        "bedrock": render_bedrock,
        "cohere": render_cohere,
        "gemini": render_gemini,
        "ollama": render_ollama,
        "mistral": render_mistral,
        "ai_sdk": render_ai_sdk,
    }
    for provider, render in renderers.items():
        if not any(f.startswith(provider + "-") for f in families):
            continue
        dicts = render(w, ops)
        w.families[dicts.name] = dicts
        typed = f"{provider}-models" if provider == "seed" else f"{provider}-objects"
        if typed not in families:
            continue
        try:
            if provider == "seed":
                objects = _seed_models(dicts.items)
            else:
                validate = VALIDATORS[provider]()
                objects = [validate(d) for d in dicts.items]
        except ImportError as exc:
            notes.append(f"{typed}: not built ({exc})")
            continue
        w.families[typed] = Family(typed, objects, dicts.item_bytes)
    return w


# -- cross-check against the official clients' own parsing --------------------------------


def _sse(items: list[dict[str, Any]], named: bool) -> bytes:
    out = []
    for item in items:
        if named:
            out.append(f"event: {item['type']}\n")
        out.append("data: " + json.dumps(item, separators=(",", ":")) + "\n\n")
    if not named:
        out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def client_parse(provider: str, items: list[dict[str, Any]]) -> list[Any]:
    """Serve ``items`` as an SSE transcript to the official client; return what it yields."""
    import httpx2  # the transport both installed SDKs are built on

    body = _sse(items, named=provider != "chat")

    def handler(request: Any) -> Any:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    http = httpx2.Client(transport=httpx2.MockTransport(handler))
    common: dict[str, Any] = {
        "api_key": "bench",
        "base_url": "http://bench.invalid",
        "http_client": http,
        "max_retries": 0,
    }
    messages = [{"role": "user", "content": "bench"}]
    if provider == "anthropic":
        import anthropic

        a = anthropic.Anthropic(**common)
        stream: Any = a.messages.create(
            model="claude-sonnet-4-5", max_tokens=1024, messages=messages, stream=True
        )
    else:
        import openai

        o = openai.OpenAI(**common)
        if provider == "chat":
            stream = o.chat.completions.create(model="gpt-4o", messages=messages, stream=True)
        else:
            stream = o.responses.create(model="gpt-4o", input="bench", stream=True)
    try:
        return list(stream)
    finally:
        http.close()


def cross_check(w: Workload, limit: int) -> list[str]:
    """Compare the first ``limit`` typed objects with what each official client parses."""
    notes: list[str] = []
    checked: list[str] = []
    for provider in ("chat", "responses", "anthropic"):
        typed = w.families.get(f"{provider}-objects")
        if typed is None:
            continue
        dicts = w.families[f"{provider}-dicts"].items[:limit]
        try:
            parsed = client_parse(provider, dicts)
        except Exception as exc:
            notes.append(f"{provider}: the official client could not parse ({exc!r})")
            continue
        mine = typed.items[: len(dicts)]
        same = len(parsed) == len(mine) and all(
            type(a) is type(b) and a == b for a, b in zip(parsed, mine, strict=True)
        )
        if same:
            checked.append(f"{provider} ({len(mine):,} items)")
        else:
            notes.append(f"{provider}: model_validate objects differ from the client's")
    if checked:
        notes.append(
            "typed objects equal, class for class, what the official clients parse from the "
            "same stream served as SSE: " + ", ".join(checked)
        )
    return notes
