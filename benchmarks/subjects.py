"""Everything that is measured: floors, the library, its adapters and the competitors.

A subject's *body* does the work once over one input family (a list of prebuilt items) and
returns the parsed arguments of every call in start order, or a zero-argument callable
that extracts them afterwards (so that building snapshots for the check is not timed), or
``None`` when it ran on a prefix. :func:`timed` turns a body into a ``run(items, complete,
loops)`` that times ``loops`` back-to-back bodies with one pair of clock reads; the runner
checks the arguments against the expected ones once per subject and workload. A subject
whose optional import fails is reported as skipped with the reason.

Floors are the least a pure-Python tracker can do on that input: per fragment a dict
look-up and a list append (plus reading the fields the shape needs), per call one join
and one JSON parse (pydantic-core's ``from_json``, the fastest parser in the dependency
tree). Every subject has the floor of its own input family as its reference.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from _dict_streams import (
    floor_ai_sdk_dicts,
    floor_bedrock_dicts,
    floor_cohere_dicts,
    floor_gemini_dicts,
    floor_ollama_dicts,
)
from pydantic_core import from_json

from toolcall_tracker import ToolCallTracker, tool_call_streaming_state_machine
from toolcall_tracker._registry import get as get_provider

RunFn = Callable[[list[Any], bool, int], tuple[int, Any]]
BodyFn = Callable[[list[Any], bool], Any]

CLOCKS: dict[str, Callable[[], int]] = {
    # CPU time of this thread: what the work costs, unaffected by other processes taking
    # the CPU away (this machine may be shared). Wall time is available with --clock wall.
    "cpu": time.thread_time_ns,
    "wall": time.perf_counter_ns,
}
_clock: list[Callable[[], int]] = [CLOCKS["cpu"]]


def use_clock(name: str) -> None:
    _clock[0] = CLOCKS[name]


def timed(body: BodyFn) -> RunFn:
    def run(items: list[Any], complete: bool, loops: int) -> tuple[int, Any]:
        clock = _clock[0]
        out = None
        t0 = clock()
        for _ in range(loops):
            out = body(items, complete)
        return clock() - t0, out

    return run


@dataclass
class Subject:
    name: str
    family: str
    kind: str  # floor | reference | library | adapter | competitor
    run: RunFn | None
    floor: str = ""
    cappable: bool = False
    note: str = ""
    skip: str = ""  # why it cannot run here (import failed, ...)

    @property
    def label(self) -> str:
        return self.name


# -- floors -------------------------------------------------------------------------------


def floor_seed(items: list[Any], complete: bool) -> Any:
    bufs: dict[str, list[str]] = {}
    out = []
    for ev in items:
        kind = ev["type"]
        if kind == "delta":
            bufs[ev["id"]].append(ev["argsTextDelta"])
        elif kind == "start":
            bufs[ev["id"]] = []
        elif kind == "ready":
            out.append(from_json("".join(bufs.pop(ev["id"]))))
    return out


def floor_chat_objects(items: list[Any], complete: bool) -> Any:
    bufs: dict[int, list[str]] = {}
    out = []
    for chunk in items:
        for choice in chunk.choices:
            calls = choice.delta.tool_calls
            if calls:
                for call in calls:
                    if call.id is not None:
                        bufs[call.index] = []
                    bufs[call.index].append(call.function.arguments)
            if choice.finish_reason is not None:
                out = [from_json("".join(parts)) for parts in bufs.values()]
    return out


def floor_chat_dicts(items: list[Any], complete: bool) -> Any:
    bufs: dict[int, list[str]] = {}
    out = []
    for chunk in items:
        for choice in chunk["choices"]:
            calls = choice["delta"].get("tool_calls")
            if calls:
                for call in calls:
                    if call.get("id") is not None:
                        bufs[call["index"]] = []
                    bufs[call["index"]].append(call["function"]["arguments"])
            if choice["finish_reason"] is not None:
                out = [from_json("".join(parts)) for parts in bufs.values()]
    return out


def floor_responses_objects(items: list[Any], complete: bool) -> Any:
    bufs: dict[str, list[str]] = {}
    out = []
    for ev in items:
        kind = ev.type
        if kind == "response.function_call_arguments.delta":
            bufs[ev.item_id].append(ev.delta)
        elif kind == "response.output_item.added":
            bufs[ev.item.id] = []
        elif kind == "response.function_call_arguments.done":
            out.append(from_json("".join(bufs.pop(ev.item_id))))
    return out


def floor_responses_dicts(items: list[Any], complete: bool) -> Any:
    bufs: dict[str, list[str]] = {}
    out = []
    for ev in items:
        kind = ev["type"]
        if kind == "response.function_call_arguments.delta":
            bufs[ev["item_id"]].append(ev["delta"])
        elif kind == "response.output_item.added":
            bufs[ev["item"]["id"]] = []
        elif kind == "response.function_call_arguments.done":
            out.append(from_json("".join(bufs.pop(ev["item_id"]))))
    return out


def floor_anthropic_objects(items: list[Any], complete: bool) -> Any:
    bufs: dict[int, list[str]] = {}
    out = []
    for ev in items:
        kind = ev.type
        if kind == "content_block_delta":
            bufs[ev.index].append(ev.delta.partial_json)
        elif kind == "content_block_start":
            bufs[ev.index] = []
        elif kind == "content_block_stop":
            out.append(from_json("".join(bufs.pop(ev.index))))
    return out


def floor_anthropic_dicts(items: list[Any], complete: bool) -> Any:
    bufs: dict[int, list[str]] = {}
    out = []
    for ev in items:
        kind = ev["type"]
        if kind == "content_block_delta":
            bufs[ev["index"]].append(ev["delta"]["partial_json"])
        elif kind == "content_block_start":
            bufs[ev["index"]] = []
        elif kind == "content_block_stop":
            out.append(from_json("".join(bufs.pop(ev["index"]))))
    return out


FLOORS: dict[str, RunFn] = {
    "seed-dicts": timed(floor_seed),
    "chat-objects": timed(floor_chat_objects),
    "chat-dicts": timed(floor_chat_dicts),
    "responses-objects": timed(floor_responses_objects),
    "responses-dicts": timed(floor_responses_dicts),
    "anthropic-objects": timed(floor_anthropic_objects),
    "anthropic-dicts": timed(floor_anthropic_dicts),
    "bedrock-dicts": timed(floor_bedrock_dicts),
    "cohere-dicts": timed(floor_cohere_dicts),
    "gemini-dicts": timed(floor_gemini_dicts),
    "ollama-dicts": timed(floor_ollama_dicts),
    "mistral-dicts": timed(floor_chat_dicts),
    "ai_sdk-dicts": timed(floor_ai_sdk_dicts),
}


# -- the library --------------------------------------------------------------------------


def _deferred(tracker: Any) -> Callable[[], list[Any]]:
    return lambda: _args_of(tracker.list())


def _args_of(calls: list[Any]) -> list[Any]:
    """The parsed arguments of calls that are running (others are a failure: ``<status>``)."""
    return [c.args if str(c.status) in ("running", "done") else f"<{c.status}>" for c in calls]


def machine_body(items: list[Any], complete: bool) -> Any:
    machine = tool_call_streaming_state_machine()
    apply = machine.apply
    for ev in items:
        apply(ev)
    return _deferred(machine) if complete else None


def _in_loop(backend: str, turn: Callable[[Any], Awaitable[Any]]) -> RunFn:
    """``loops`` times ``await turn(source)`` in one event loop, timed inside it (``turn``
    returns what holds the calls: a tracker or a machine)."""

    def run(items: list[Any], complete: bool, loops: int) -> tuple[int, Any]:
        import anyio

        async def source() -> Any:
            for item in items:
                yield item

        async def main() -> tuple[int, Any]:
            clock = _clock[0]
            holder = None
            t0 = clock()
            for _ in range(loops):
                holder = await turn(source())
            return clock() - t0, _deferred(holder) if complete else None

        result: tuple[int, Any] = anyio.run(main, backend=backend)
        return result

    return run


def _consume(backend: str, wrap: Callable[[Any], Any] | None = None) -> RunFn:
    """``await ToolCallTracker().consume(source)``, timed inside the event loop."""

    async def turn(source: Any) -> ToolCallTracker:
        tracker = ToolCallTracker()
        await tracker.consume(source if wrap is None else wrap(source))
        return tracker

    return _in_loop(backend, turn)


async def _async_machine_turn(source: Any) -> Any:
    """The machine fed by ``async for`` over the same source, in the same event loop: what
    any consumer of an async stream pays before a tracker does anything (no cancel scope,
    no checkpoint, no waiter)."""
    machine = tool_call_streaming_state_machine()
    apply = machine.apply
    async for event in source:
        apply(event)
    machine.write_end(True, "source exhausted")
    return machine


def _adapter_ref(fmt: str) -> tuple[str, str]:
    """``(module under toolcall_tracker.adapters, class name)`` of format ``fmt``'s adapter,
    as the provider registry declares it."""
    ref = get_provider(fmt).adapter
    assert ref is not None, f"{fmt} has no adapter"
    module, _, cls_name = ref.partition(":")
    return module.partition(".adapters.")[2], cls_name  # "anthropic._adapter": its home


def _adapter_run(module: str, cls_name: str) -> tuple[RunFn | None, str]:
    try:
        mod = __import__(f"toolcall_tracker.adapters.{module}", fromlist=[cls_name])
        cls = getattr(mod, cls_name)
    except (ImportError, AttributeError) as exc:
        return None, f"toolcall_tracker.adapters.{module}.{cls_name} not available ({exc})"

    from toolcall_tracker.adapters import apply_stream

    def body(items: list[Any], complete: bool) -> Any:
        # The synchronous driver: feed() every item, apply the events, then end(); plain
        # fragments take the machine's fast lane, as they do under consume(adapt(...)).
        tracker = ToolCallTracker()
        apply_stream(tracker, items, cls())
        return _deferred(tracker) if complete else None

    return timed(body), ""


def _adapted_consume_run(module: str, cls_name: str) -> tuple[RunFn | None, str]:
    """``await tracker.consume(adapt(source, Adapter()))`` on asyncio: the async user path."""
    try:
        mod = __import__(f"toolcall_tracker.adapters.{module}", fromlist=[cls_name])
        cls = getattr(mod, cls_name)
        from toolcall_tracker.adapters import adapt
    except (ImportError, AttributeError) as exc:
        return None, f"toolcall_tracker.adapters.{module}.{cls_name} not available ({exc})"
    return _consume("asyncio", lambda source: adapt(source, cls())), ""


# -- competitors: the official clients' accumulators and two frameworks ---------------------


def _openai_chat_state() -> tuple[RunFn | None, str]:
    try:
        from openai.lib.streaming.chat import ChatCompletionStreamState
    except ImportError as exc:
        return None, f"openai ChatCompletionStreamState not importable ({exc})"

    def body(items: list[Any], complete: bool) -> Any:
        state: Any = ChatCompletionStreamState()
        handle = state.handle_chunk
        for chunk in items:
            for _ in handle(chunk):
                pass
        args = None
        if complete:
            final = state.get_final_completion()
            calls = final.choices[0].message.tool_calls or []
            args = [from_json(c.function.arguments) for c in calls]
        return args

    return timed(body), ""


def _openai_responses_state() -> tuple[RunFn | None, str]:
    try:
        from openai import omit
        from openai.lib.streaming.responses import ResponseStreamState  # type: ignore[attr-defined]
    except ImportError:
        try:
            from openai import omit
            from openai.lib.streaming.responses._responses import ResponseStreamState
        except ImportError as exc:
            return None, f"openai ResponseStreamState not importable ({exc})"

    def body(items: list[Any], complete: bool) -> Any:
        state: Any = ResponseStreamState(input_tools=omit, text_format=omit)
        handle = state.handle_event
        for ev in items:
            handle(ev)
        args = None
        if complete:
            final = state._completed_response
            args = [from_json(o.arguments) for o in final.output if o.type == "function_call"]
        return args

    return timed(body), ""


def _anthropic_accumulator() -> tuple[RunFn | None, str]:
    try:
        from anthropic.lib.streaming._messages import accumulate_event
    except ImportError as exc:
        return None, f"anthropic accumulate_event not importable ({exc})"

    def body(items: list[Any], complete: bool) -> Any:
        snapshot = None
        bufs: dict[int, bytes] = {}
        for ev in items:
            snapshot = accumulate_event(event=ev, current_snapshot=snapshot, json_bufs=bufs)
        args = None
        if complete and snapshot is not None:
            # accumulate_event already parsed each block's input (partially, at every delta)
            args = [block.input for block in snapshot.content if block.type == "tool_use"]
        return args

    return timed(body), ""


def _pydantic_ai_manager() -> tuple[Any, str]:
    try:
        from pydantic_ai._parts_manager import ModelResponsePartsManager
        from pydantic_ai.models import ModelRequestParameters
    except ImportError as exc:
        return None, f"pydantic-ai-slim not installed ({exc})"

    def make() -> Any:
        return ModelResponsePartsManager(model_request_parameters=ModelRequestParameters())

    return make, ""


def _pydantic_ai_final(manager: Any) -> list[Any]:
    return [part.args_as_dict() for part in manager.get_parts()]


def _pydantic_ai_chat() -> tuple[RunFn | None, str]:
    make, why = _pydantic_ai_manager()
    if make is None:
        return None, why

    def body(items: list[Any], complete: bool) -> Any:
        # As pydantic-ai's OpenAI-compatible models drive it, per streamed tool-call delta.
        manager = make()
        handle = manager.handle_tool_call_delta
        for chunk in items:
            for choice in chunk.choices:
                for dtc in choice.delta.tool_calls or ():
                    fn = dtc.function
                    handle(
                        vendor_part_id=dtc.index,
                        tool_name=fn.name if fn is not None else None,
                        args=fn.arguments if fn is not None else None,
                        tool_call_id=dtc.id,
                    )
        args = _pydantic_ai_final(manager) if complete else None
        return args

    return timed(body), ""


def _pydantic_ai_anthropic() -> tuple[RunFn | None, str]:
    make, why = _pydantic_ai_manager()
    if make is None:
        return None, why

    def body(items: list[Any], complete: bool) -> Any:
        # As pydantic-ai's Anthropic model drives it: a part per tool_use block, by index.
        manager = make()
        handle = manager.handle_tool_call_delta
        for ev in items:
            kind = ev.type
            if kind == "content_block_delta":
                if ev.delta.type == "input_json_delta":
                    handle(vendor_part_id=ev.index, args=ev.delta.partial_json)
            elif kind == "content_block_start":
                block = ev.content_block
                if block.type == "tool_use":
                    handle(
                        vendor_part_id=ev.index,
                        tool_name=block.name,
                        args=None,
                        tool_call_id=block.id,
                    )
        args = _pydantic_ai_final(manager) if complete else None
        return args

    return timed(body), ""


def _pydantic_ai_responses() -> tuple[RunFn | None, str]:
    make, why = _pydantic_ai_manager()
    if make is None:
        return None, why

    def body(items: list[Any], complete: bool) -> Any:
        # As pydantic-ai's Responses model drives it: a part per function_call item, by id.
        manager = make()
        handle = manager.handle_tool_call_delta
        for ev in items:
            kind = ev.type
            if kind == "response.function_call_arguments.delta":
                handle(vendor_part_id=ev.item_id, args=ev.delta)
            elif kind == "response.output_item.added":
                item = ev.item
                if item.type == "function_call":
                    handle(
                        vendor_part_id=item.id,
                        tool_name=item.name,
                        args=item.arguments,
                        tool_call_id=item.call_id,
                    )
        args = _pydantic_ai_final(manager) if complete else None
        return args

    return timed(body), ""


def _langchain_chat() -> tuple[RunFn | None, str]:
    try:
        from langchain_core.messages import AIMessageChunk
    except ImportError as exc:
        return None, f"langchain-core not installed ({exc})"

    def body(items: list[Any], complete: bool) -> Any:
        # Each chunk becomes an AIMessageChunk with tool_call_chunks (as langchain-openai
        # converts it), and the chunks are summed with + as LangChain streams aggregate.
        total: Any = None
        for chunk in items:
            for choice in chunk.choices:
                tool_chunks = [
                    {
                        "name": dtc.function.name if dtc.function else None,
                        "args": dtc.function.arguments if dtc.function else None,
                        "id": dtc.id,
                        "index": dtc.index,
                        "type": "tool_call_chunk",
                    }
                    for dtc in choice.delta.tool_calls or ()
                ]
                message = AIMessageChunk(
                    content=choice.delta.content or "", tool_call_chunks=tool_chunks
                )
                total = message if total is None else total + message
        args = None
        if complete and total is not None:
            args = [call["args"] for call in total.tool_calls]
        return args

    return timed(body), ""


# -- the registry -------------------------------------------------------------------------

_SDK_FAMILIES = ("chat", "responses", "anthropic")


def all_subjects() -> list[Subject]:
    """Every subject, in table order. Unavailable ones carry ``skip``."""
    subjects = [
        Subject("floor", "seed-dicts", "floor", FLOORS["seed-dicts"], note="bare loop"),
        Subject("machine", "seed-dicts", "library", timed(machine_body), floor="seed-dicts"),
        Subject("machine", "seed-models", "library", timed(machine_body), floor="seed-dicts"),
        Subject(
            "async for + machine",
            "seed-dicts",
            "reference",
            _in_loop("asyncio", _async_machine_turn),
            "seed-dicts",
            note="asyncio",
        ),
        Subject("consume/asyncio", "seed-dicts", "library", _consume("asyncio"), "seed-dicts"),
        Subject("consume/trio", "seed-dicts", "library", _consume("trio"), "seed-dicts"),
    ]
    try:
        import trio  # noqa: F401
    except ImportError as exc:
        subjects[-1].run, subjects[-1].skip = None, f"trio not installed ({exc})"

    adapters = {  # each workload family's format, its adapter from the provider registry
        "chat": _adapter_ref("openai-chat"),
        "responses": _adapter_ref("openai-responses"),
        "anthropic": _adapter_ref("anthropic"),
    }
    competitors: dict[str, list[tuple[str, Callable[[], tuple[RunFn | None, str]], str]]] = {
        "chat": [
            ("openai ChatCompletionStreamState", _openai_chat_state, ""),
            ("pydantic-ai parts manager", _pydantic_ai_chat, ""),
            ("langchain AIMessageChunk +", _langchain_chat, "incl. chunk conversion"),
        ],
        "responses": [
            ("openai ResponseStreamState", _openai_responses_state, ""),
            ("pydantic-ai parts manager", _pydantic_ai_responses, ""),
        ],
        "anthropic": [
            ("anthropic accumulate_event", _anthropic_accumulator, ""),
            ("pydantic-ai parts manager", _pydantic_ai_anthropic, ""),
        ],
    }
    for provider in _SDK_FAMILIES:
        objects, dicts = f"{provider}-objects", f"{provider}-dicts"
        subjects.append(Subject("floor", objects, "floor", FLOORS[objects], note="bare loop"))
        subjects.append(Subject("floor", dicts, "floor", FLOORS[dicts], note="bare loop"))
        module, cls_name = adapters[provider]
        run, why = _adapter_run(module, cls_name)
        title = f"{cls_name} + tracker"
        subjects.append(Subject(title, objects, "adapter", run, objects, skip=why))
        subjects.append(Subject(title, dicts, "adapter", run, dicts, skip=why))
        run, why = _adapted_consume_run(module, cls_name)
        title = f"consume(adapt({cls_name}))"
        subjects.append(Subject(title, objects, "adapter", run, objects, note="asyncio", skip=why))
        for name, factory, note in competitors[provider]:
            run, why = factory()
            subjects.append(
                Subject(name, objects, "competitor", run, objects, True, note=note, skip=why)
            )
    for provider, fmt in (
        ("bedrock", "bedrock"),
        ("cohere", "cohere"),
        ("gemini", "gemini"),
        ("ollama", "ollama"),
        ("mistral", "mistral"),
        ("ai_sdk", "ai-sdk"),
    ):
        dicts = f"{provider}-dicts"  # dicts only: no Python peer accumulator to compare
        subjects.append(Subject("floor", dicts, "floor", FLOORS[dicts], note="bare loop"))
        module, cls_name = _adapter_ref(fmt)
        run, why = _adapter_run(module, cls_name)
        subjects.append(Subject(f"{cls_name} + tracker", dicts, "adapter", run, dicts, skip=why))
    return subjects
