"""Streams for ``headstart.py``: timed turns in every provider format, and completion signals.

A *replay* is one model turn as a provider sends it: the items (the plain dicts the
provider's JSON decodes to), how many token slots each one takes (``ticks``: the source
sleeps ``ticks / rate`` seconds before yielding it), and, for every client-side tool call,
which item is the provider's own signal that the call's arguments are complete.

Synthetic turns reuse ``streams.py``'s workload (``make_args``, ``schedule``) and its
OpenAI Chat, Responses and Anthropic renderers; Gemini and AI SDK UI-stream renderers are
here. The completion signals are found by reading the items (``signals``), the same way for
synthetic and recorded streams, so they never depend on what the library decides:

- OpenAI Chat: the chunk that starts the next call of the choice, or the chunk carrying the
  choice's ``finish_reason`` (``tool_calls`` / ``stop``);
- OpenAI Responses: ``response.function_call_arguments.done``, else the function call's
  ``response.output_item.done`` (else ``response.completed`` for a call only found there);
- Anthropic: the tool_use block's ``content_block_stop`` (or the ``message_start`` that
  carries a whole tool_use block);
- Gemini: the chunk carrying the whole call, or the part whose ``will_continue`` is not
  true for a call whose arguments were streamed;
- AI SDK UI stream: ``tool-input-available``.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import streams
from streams import Op, Workload, WorkloadSpec

FORMATS = ("openai_chat", "openai_responses", "anthropic", "gemini", "ai_sdk")


@dataclass(frozen=True)
class Completion:
    """One client-side call of a replay and the index of the item that completes it."""

    order: int  # position among the replay's calls, in start order
    call_id: str | None  # the provider's id, when it sent one
    name: str
    item: int | None  # index of the completing item; None: never completed


@dataclass
class Replay:
    fmt: str
    label: str
    items: list[Any]
    ticks: list[int]
    completions: list[Completion] = field(default_factory=list)
    tool_latency: dict[str, float] = field(default_factory=dict)  # per call id (synthetic)

    @property
    def names(self) -> set[str]:
        return {c.name for c in self.completions}


# -- synthetic turns -----------------------------------------------------------------------


def _gemini_chunk(parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"index": 0, "content": {"role": "model", "parts": parts}}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": "gemini-2.5-flash"}


def render_gemini(w: Workload, ops: list[Op]) -> tuple[list[Any], list[int]]:
    """Whole calls, as the Gemini API sends them: one chunk per call, emitted when the
    model has generated the whole call (the fragments it would have streamed are ticks)."""
    items: list[Any] = []
    ticks: list[int] = []
    pending = 0
    for op in ops:
        if op[0] in ("start", "delta"):
            pending += 1
        elif op[0] == "ready":
            k = op[1]
            call = {"id": w.ids[k], "name": w.names[k], "args": w.expected[k]}
            items.append(_gemini_chunk([{"functionCall": call}]))
            ticks.append(pending)
            pending = 0
        else:
            items.append(_gemini_chunk([{"text": ""}], "STOP"))
            ticks.append(1)
    return items, ticks


def render_ai_sdk(w: Workload, ops: list[Op]) -> tuple[list[Any], list[int]]:
    items: list[Any] = [{"type": "start", "messageId": "msg_bench"}, {"type": "start-step"}]
    ticks = [0, 0]
    for op in ops:
        kind = op[0]
        if kind == "start":
            k = op[1]
            items.append(
                {"type": "tool-input-start", "toolCallId": w.ids[k], "toolName": w.names[k]}
            )
            ticks.append(1)
        elif kind == "delta":
            items.append(
                {"type": "tool-input-delta", "toolCallId": w.ids[op[1]], "inputTextDelta": op[2]}
            )
            ticks.append(1)
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
            ticks.append(0)
        else:
            items += [{"type": "finish-step"}, {"type": "finish"}]
            ticks += [1, 0]
    return items, ticks


# Token slots of the items streams.py renders: an item carrying a call's start or a
# fragment of its arguments takes one; the closing items a server sends right after the
# last fragment take none; the end of the turn takes one (the model's stop token).
_ONE_TICK = {
    "openai_responses": {
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.completed",
    },
    "anthropic": {"content_block_start", "content_block_delta", "message_delta"},
}


def _ticks(fmt: str, items: list[Any]) -> list[int]:
    if fmt == "openai_chat":  # the first (role) chunk is the time to first token: not modelled
        return [0] + [1] * (len(items) - 1)
    return [1 if item["type"] in _ONE_TICK[fmt] else 0 for item in items]


_STREAMS_RENDER: dict[str, Callable[[Workload, list[Op]], streams.Family]] = {
    "openai_chat": streams.render_chat,
    "openai_responses": streams.render_responses,
    "anthropic": streams.render_anthropic,
}
_MY_RENDER = {"gemini": render_gemini, "ai_sdk": render_ai_sdk}


def synthetic_turn(
    fmt: str,
    seed: str,
    calls: int,
    arg_range: tuple[int, int],
    fragment: int,
    tools: dict[str, float],
) -> Replay:
    """One turn of ``calls`` calls, each of a log-uniform size within ``arg_range`` bytes,
    each for a tool drawn from ``tools`` (name -> latency), in ``fragment``-byte deltas."""
    rng = random.Random(seed)
    lo, hi = arg_range
    sizes = [round(math.exp(rng.uniform(math.log(lo), math.log(hi)))) for _ in range(calls)]
    names = [rng.choice(sorted(tools)) for _ in range(calls)]
    ids = [f"call_{seed.replace(':', '_')}_{k}" for k in range(calls)]
    texts = [streams.make_args(rng, max(64, size)) for size in sizes]
    w = Workload(WorkloadSpec(seed, seed, calls, 0, fragment), ids, names, texts, [])
    w.expected = [json.loads(t) for t in texts]
    ops = streams.schedule(w.spec, texts)
    if fmt in _STREAMS_RENDER:
        items = _STREAMS_RENDER[fmt](w, ops).items
        ticks = _ticks(fmt, items)
    else:
        items, ticks = _MY_RENDER[fmt](w, ops)
    replay = Replay(fmt, f"{fmt}:{seed}", items, ticks)
    replay.completions = signals(fmt, items)
    latency = dict(zip(ids, (tools[n] for n in names), strict=True))
    # Anthropic ids are prefixed by streams.render_anthropic.
    replay.tool_latency = {c.call_id or "": latency[_bare(c.call_id)] for c in replay.completions}
    return replay


def _bare(call_id: str | None) -> str:
    text = call_id or ""
    return text.removeprefix("toolu_").removeprefix("fc_")


# -- completion signals ----------------------------------------------------------------------


def _chat(items: list[Any]) -> list[Completion]:
    calls: list[list[Any]] = []  # per call, in start order: [provider id, name, item]
    open_: dict[Any, tuple[Any, int]] = {}  # choice -> (routing key, order) of its open call

    for i, chunk in enumerate(items):
        if not isinstance(chunk, dict):
            continue
        for position, choice in enumerate(chunk.get("choices") or []):
            c = choice.get("index", position)
            for tc in (choice.get("delta") or {}).get("tool_calls") or []:
                # Routed as the adapter routes: by index, else by id, else to the open call.
                key = tc.get("index")
                if key is None:
                    key = tc.get("id") or (open_[c][0] if c in open_ else None)
                if c not in open_ or open_[c][0] != key:
                    if c in open_:  # the next call's first chunk completes the open one
                        calls[open_[c][1]][2] = i
                    open_[c] = (key, len(calls))
                    calls.append([None, "", None])
                entry = calls[open_[c][1]]
                entry[0] = entry[0] or tc.get("id") or None
                entry[1] = entry[1] or (tc.get("function") or {}).get("name") or ""
            finish = choice.get("finish_reason")
            if finish and c in open_:
                ok = finish in ("tool_calls", "stop", "function_call")
                calls[open_.pop(c)[1]][2] = i if ok else None
    return [Completion(k, cid, name, at) for k, (cid, name, at) in enumerate(calls)]


def _responses(items: list[Any]) -> list[Completion]:
    calls: dict[str, list[Any]] = {}  # item id -> [order, call id, name, completing item]

    def note(item: dict[str, Any], at: int | None) -> None:
        key = str(item.get("id") or item.get("call_id"))
        entry = calls.setdefault(key, [len(calls), item.get("call_id"), item.get("name"), None])
        entry[1], entry[2] = entry[1] or item.get("call_id"), entry[2] or item.get("name")
        if at is not None and entry[3] is None:
            entry[3] = at

    for i, event in enumerate(items):
        kind = event.get("type")
        item = event.get("item") or {}
        if kind in ("response.output_item.added", "response.output_item.done"):
            if item.get("type") == "function_call":
                note(item, i if kind.endswith("done") else None)
        elif kind == "response.function_call_arguments.done":
            entry = calls.get(event.get("item_id"))
            if entry is not None and entry[3] is None:
                entry[3] = i
        elif kind == "response.completed":
            for out in (event.get("response") or {}).get("output") or []:
                if out.get("type") == "function_call":
                    note(out, i)
    return [Completion(o, cid, name or "", at) for o, cid, name, at in calls.values()]


def _anthropic(items: list[Any]) -> list[Completion]:
    found: list[Completion] = []
    blocks: dict[Any, tuple[str | None, str]] = {}
    for i, event in enumerate(items):
        kind = event.get("type")
        if kind == "message_start":
            blocks.clear()  # a new message abandons the blocks left open
            for block in (event.get("message") or {}).get("content") or []:
                if block.get("type") == "tool_use":
                    found.append(Completion(len(found), block.get("id"), block.get("name"), i))
        elif kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") == "tool_use":
                blocks[event.get("index")] = (block.get("id"), block.get("name") or "")
        elif kind == "content_block_stop" and event.get("index") in blocks:
            cid, name = blocks.pop(event.get("index"))
            found.append(Completion(len(found), cid, name, i))
    return found


def _get(d: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if key in d:
            return d[key]
    return None


def _gemini(items: list[Any]) -> list[Completion]:
    found: list[Completion] = []
    open_: dict[int, tuple[str | None, str]] = {}
    for i, chunk in enumerate(items):
        for position, cand in enumerate(chunk.get("candidates") or []):
            c = cand.get("index", position)
            for part in (cand.get("content") or {}).get("parts") or []:
                fc = _get(part, "functionCall", "function_call")
                if not isinstance(fc, dict):
                    continue
                continues = _get(fc, "willContinue", "will_continue") is True
                if fc.get("name"):
                    open_.pop(c, None)  # a call left open is abandoned
                    if continues:
                        open_[c] = (fc.get("id"), fc["name"])
                    else:
                        found.append(Completion(len(found), fc.get("id"), fc["name"], i))
                elif c in open_ and not continues:
                    cid, name = open_.pop(c)
                    found.append(Completion(len(found), cid, name, i))
            if _get(cand, "finishReason", "finish_reason"):
                open_.pop(c, None)
    return found


def _ai_sdk(items: list[Any]) -> list[Completion]:
    calls: dict[str, list[Any]] = {}
    for i, part in enumerate(items):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("tool-input-start", "tool-input-available"):
            cid = part.get("toolCallId")
            entry = calls.setdefault(cid, [len(calls), part.get("toolName") or "", None])
            if kind == "tool-input-available" and entry[2] is None:
                entry[2] = i
    return [Completion(o, cid, name, at) for cid, (o, name, at) in calls.items()]


SIGNALS: dict[str, Callable[[list[Any]], list[Completion]]] = {
    "openai_chat": _chat,
    "openai_responses": _responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "ai_sdk": _ai_sdk,
}


def signals(fmt: str, items: list[Any]) -> list[Completion]:
    """Every client-side call of the stream, in start order, and its completing item."""
    return sorted(SIGNALS[fmt](items), key=lambda c: c.order)


# -- recorded streams (../shared/real-streams/recorded/, read in place) -----------------------


def _sse_data(text: str) -> list[str]:
    """The data of each dispatched server-sent event (WHATWG rules, as check.py reads it)."""
    out: list[str] = []
    data: list[str] = []
    for line in re.split(r"\r\n|\r|\n", text):
        if line == "":
            if data:
                out.append("\n".join(data))
            data = []
            continue
        name, colon, value = line.partition(":")
        if name == "data" and colon:
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        out.append("\n".join(data))
    return out


def load_items(path: Path) -> list[Any]:
    """A recording's items as the provider's JSON decodes them (see MANIFEST.md)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    items = []
    for data in _sse_data(text):
        if data.strip() == "[DONE]":
            break
        items.append(json.loads(data))
    return items


def recorded_replays(folder: Path, limit: int | None = None) -> list[Replay]:
    """Every recording under ``folder/<format>/``; each item takes one token slot."""
    replays: list[Replay] = []
    for fmt in FORMATS:
        paths = sorted(p for p in (folder / fmt).glob("*") if p.suffix in (".sse", ".jsonl"))
        for path in paths[:limit]:
            items = load_items(path)
            replay = Replay(fmt, f"{fmt}/{path.name}", items, [1] * len(items))
            replay.completions = signals(fmt, items)
            replays.append(replay)
    return replays
