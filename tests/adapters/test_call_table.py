"""The adapters' call table: each option of ``RULES`` on every provider that uses it, what
the sink raises, and the limits every record obeys.

Each provider is driven through its public adapter with plain dicts; ``WIRE`` maps the
table's operations (start, fragment, close, end) to that provider's items, so one test
row says what a rule means for every provider at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from toolcall_tracker import Limits, Status, tool_call_streaming_state_machine
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
    apply_stream,
)
from toolcall_tracker.adapters._calls import RULES
from toolcall_tracker.adapters._common import IdMinter
from toolcall_tracker.changes import ChangeListener


def _anthropic_start(index: int, call_id: Any, name: Any) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_use", "name": name, "input": {}}
    if call_id is not None:
        block["id"] = call_id
    return {"type": "content_block_start", "index": index, "content_block": block}


def _anthropic_delta(index: int, text: Any) -> dict[str, Any]:
    delta: dict[str, Any] = {"type": "input_json_delta"}
    if text is not None:
        delta["partial_json"] = text
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _bedrock_start(index: int, call_id: Any, name: Any) -> dict[str, Any]:
    tool_use: dict[str, Any] = {"name": name}
    if call_id is not None:
        tool_use["toolUseId"] = call_id
    return {"contentBlockStart": {"contentBlockIndex": index, "start": {"toolUse": tool_use}}}


def _bedrock_delta(index: int, text: Any) -> dict[str, Any]:
    tool_use = {} if text is None else {"input": text}
    return {"contentBlockDelta": {"contentBlockIndex": index, "delta": {"toolUse": tool_use}}}


def _cohere_start(index: int, call_id: Any, name: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": ""}}
    if call_id is not None:
        call["id"] = call_id
    return {"type": "tool-call-start", "index": index, "delta": {"message": {"tool_calls": call}}}


def _cohere_delta(index: int, text: Any) -> dict[str, Any]:
    function = {} if text is None else {"arguments": text}
    return {
        "type": "tool-call-delta",
        "index": index,
        "delta": {"message": {"tool_calls": {"function": function}}},
    }


_AI_SDK_IDS: dict[int, Any] = {}  # index -> toolCallId: AI SDK parts name a call by id only


def _ai_sdk_part(kind: str, index: int, **fields: Any) -> dict[str, Any]:
    part = {"type": kind, **fields}
    call_id = _AI_SDK_IDS.get(index)
    if call_id is not None:
        part["toolCallId"] = call_id
    return part


def _ai_sdk_start(index: int, call_id: Any, name: Any) -> dict[str, Any]:
    _AI_SDK_IDS[index] = call_id
    return _ai_sdk_part("tool-input-start", index, toolName=name)


def _ai_sdk_delta(index: int, text: Any) -> dict[str, Any]:
    fields = {} if text is None else {"inputTextDelta": text}
    return _ai_sdk_part("tool-input-delta", index, **fields)


def _chat_start(index: int, call_id: Any, name: Any) -> dict[str, Any]:
    fragment: dict[str, Any] = {"index": index, "function": {"name": name, "arguments": ""}}
    if call_id is not None:
        fragment["id"] = call_id
    return {"choices": [{"index": 0, "delta": {"tool_calls": [fragment]}}]}


def _chat_delta(index: int, text: Any) -> dict[str, Any]:
    function = {} if text is None else {"arguments": text}
    fragment = {"index": index, "function": function}
    return {"choices": [{"index": 0, "delta": {"tool_calls": [fragment]}}]}


def _responses_start(index: int, call_id: Any, name: Any) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "function_call", "name": name, "arguments": ""}
    if call_id is not None:  # no ids at all: the call's id is minted
        item |= {"id": f"fc_{index}", "call_id": call_id}
    return {"type": "response.output_item.added", "output_index": index, "item": item}


def _responses_delta(index: int, text: Any) -> dict[str, Any]:
    delta = {"type": "response.function_call_arguments.delta", "item_id": f"fc_{index}"}
    return delta if text is None else {**delta, "delta": text}


Wire = dict[str, Callable[..., Any]]
WIRE: dict[str, Wire] = {
    "anthropic": {
        "adapter": AnthropicAdapter,
        "start": _anthropic_start,
        "delta": _anthropic_delta,
        "close": lambda index: {"type": "content_block_stop", "index": index},
        "end": lambda: [
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
            {"type": "message_stop"},
        ],
    },
    "bedrock": {
        "adapter": BedrockConverseAdapter,
        "start": _bedrock_start,
        "delta": _bedrock_delta,
        "close": lambda index: {"contentBlockStop": {"contentBlockIndex": index}},
        "end": lambda: [{"messageStop": {"stopReason": "tool_use"}}],
    },
    "cohere": {
        "adapter": CohereAdapter,
        "start": _cohere_start,
        "delta": _cohere_delta,
        "close": lambda index: {"type": "tool-call-end", "index": index},
        "end": lambda: [{"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}}],
    },
    "ai_sdk": {
        "adapter": AISDKAdapter,
        "start": _ai_sdk_start,
        "delta": _ai_sdk_delta,
        "close": lambda index: _ai_sdk_part("tool-input-available", index),
        "end": lambda: [{"type": "finish-step"}, {"type": "finish"}],
    },
    # The OpenAI adapters route their calls themselves and use the table's ids, starts,
    # text, readiness and end (see ``_openai``): Chat calls close at the finish_reason.
    "openai_chat": {
        "adapter": OpenAIChatAdapter,
        "start": _chat_start,
        "delta": _chat_delta,
        "close": lambda index: {"choices": []},
        "end": lambda: [{"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}],
    },
    "openai_responses": {
        "adapter": OpenAIResponsesAdapter,
        "start": _responses_start,
        "delta": _responses_delta,
        "close": lambda index: {
            "type": "response.function_call_arguments.done",
            "output_index": index,
            "item_id": f"fc_{index}",
        },
        "end": lambda: [{"type": "response.completed", "response": {"output": []}}],
    },
}
KEYED_BY_INDEX = ["anthropic", "bedrock", "cohere"]  # AI SDK parts: by id only; OpenAI: own
OPENAI = ["openai_chat", "openai_responses"]


def run(provider: str, script: list[tuple[Any, ...]], limits: Limits | None = None) -> Any:
    """Drive ``provider`` through ``script`` (``("start", index, id, name)``, ``("delta",
    index, text)``, ``("close", index)``) and the turn's end; the machine afterwards."""
    wire = WIRE[provider]
    _AI_SDK_IDS.clear()
    items: list[Any] = []
    for op, *args in script:
        items.append(wire[op](*args))
    items += wire["end"]()
    machine = tool_call_streaming_state_machine(limits=limits)
    apply_stream(machine, items, wire["adapter"]())
    return machine


def test_every_provider_of_the_table_is_driven_here() -> None:
    # Ollama's and Gemini's calls arrive whole: their rows are tested below.
    assert set(RULES) == set(WIRE) | {"ollama", "gemini"}


def providers_where(option: str, value: Any) -> list[str]:
    return [name for name in WIRE if getattr(RULES[name], option) == value]


# -- each option, on every provider that uses it (and those that do not) --------------


@pytest.mark.parametrize("provider", sorted(WIRE))
def test_whitespace_is_text(provider: str) -> None:
    machine = run(provider, [("start", 0, "c1", "f"), ("delta", 0, "  "), ("close", 0)])
    (call,) = machine.list()
    if RULES[provider].whitespace_is_text:
        # Whitespace is the call's text: it does not parse, so the call fails.
        assert call.args_text == "  "
        assert call.status == Status.ERROR
    else:
        assert call.args_text == "  {}"
        assert call.status == Status.RUNNING
        assert call.args == {}


@pytest.mark.parametrize("provider", sorted(WIRE))
def test_empty_name_fails(provider: str) -> None:
    machine = run(provider, [("start", 0, "c1", ""), ("delta", 0, "{}"), ("close", 0)])
    (call,) = machine.list()
    assert call.name == ""
    expected = Status.ERROR if RULES[provider].empty_name_fails else Status.RUNNING
    assert call.status == expected


@pytest.mark.parametrize("provider", sorted(WIRE))
def test_a_non_string_name_always_fails(provider: str) -> None:
    machine = run(provider, [("start", 0, "c1", 42), ("delta", 0, "{}"), ("close", 0)])
    (call,) = machine.list()
    assert call.status == Status.ERROR
    assert "no name" in call.error.message or "never received a function name" in (
        call.error.message
    )


@pytest.mark.parametrize("provider", sorted(WIRE))
def test_absent_text_fails(provider: str) -> None:
    machine = run(provider, [("start", 0, "c1", "f"), ("delta", 0, None), ("close", 0)])
    (call,) = machine.list()
    expected = Status.ERROR if RULES[provider].absent_text_fails else Status.RUNNING
    assert call.status == expected
    if expected == Status.ERROR:
        event_type = getattr(call.error, "event_type", None) or call.error.part_type
        assert event_type == RULES[provider].delta_event


@pytest.mark.parametrize("provider", sorted(set(WIRE) - set(OPENAI)))
def test_minted_ids_follow_the_providers_base(provider: str) -> None:
    script = [("start", 3, None, "f"), ("close", 3), ("start", 3, None, "g"), ("close", 3)]
    calls = run(provider, script).list()
    if RULES[provider].mint is None:
        assert calls == []  # ids are never minted: a call without one is not tracked
        return
    first, second = calls
    base = RULES[provider].mint.format(key=3)
    assert [first.id, second.id] == [base, f"{base}-2"]
    assert first.status == second.status == Status.RUNNING


@pytest.mark.parametrize("provider", sorted(WIRE))
def test_reused_id(provider: str) -> None:
    script = [("start", 0, "c1", "f"), ("close", 0), ("start", 1, "c1", "g"), ("close", 1)]
    calls = run(provider, script).list()
    # Where ids route (OpenAI), the same id again is the same call: not a new one either.
    assert RULES[provider].reused_id in ("ignore", "suffix")
    assert [call.name for call in calls] == ["f"]


def test_a_reused_id_is_suffixed_where_it_is_a_new_call() -> None:
    # Chat: another choice's call with the same id is a new call; Responses: another item
    # (by item id) claiming a taken call id.
    assert RULES["openai_chat"].reused_id == RULES["openai_responses"].reused_id == "suffix"

    def chat(choice: int, name: str) -> dict[str, Any]:
        fragment = {"index": 0, "id": "c1", "function": {"name": name, "arguments": "{}"}}
        return {"choices": [{"index": choice, "delta": {"tool_calls": [fragment]}}]}

    finish = {"index": 0, "delta": {}, "finish_reason": "tool_calls"}
    items = [chat(0, "f"), chat(1, "g"), {"choices": [finish, {**finish, "index": 1}]}]
    machine = tool_call_streaming_state_machine()
    apply_stream(machine, items, OpenAIChatAdapter())
    assert [(call.id, call.name) for call in machine.list()] == [("c1", "f"), ("c1_2", "g")]

    def added(index: int, name: str) -> dict[str, Any]:
        item = {"type": "function_call", "id": f"fc_{index}", "name": name, "arguments": "{}"}
        return {"type": "response.output_item.added", "output_index": index, "item": item}

    # The first item's ids are its item id; the second's call id is that same text.
    items = [added(0, "f"), added(1, "g"), {"type": "response.completed", "response": {}}]
    items[1]["item"]["call_id"] = "fc_0"
    machine = tool_call_streaming_state_machine()
    apply_stream(machine, items, OpenAIResponsesAdapter())
    assert [(call.id, call.name) for call in machine.list()] == [("fc_0", "f"), ("fc_0_2", "g")]


@pytest.mark.parametrize("provider", OPENAI)
def test_openai_minted_ids_follow_the_providers_base(provider: str) -> None:
    # Two calls at index 3 with no id: Chat keys a call by (choice, its position among the
    # choice's calls), Responses by its output index (the second is suffixed).
    script = [("start", 3, None, "f"), ("close", 3), ("start", 3, None, "g"), ("close", 3)]
    calls = run(provider, script).list()
    rules = RULES[provider]
    if provider == "openai_chat":
        expected = [rules.mint.format(key=(0, 0)), rules.mint.format(key=(0, 1))]
    else:
        base = rules.mint.format(key=3)
        expected = [base, f"{base}{rules.id_sep}2"]
    assert (
        [call.id for call in calls]
        == expected
        == [*(["call_0_0", "call_0_1"] if provider == "openai_chat" else ["call_3", "call_3_2"])]
    )
    assert [call.status for call in calls] == [Status.RUNNING, Status.RUNNING]


@pytest.mark.parametrize("provider", sorted(WIRE))
def test_reads_text_and_text_after_ready(provider: str) -> None:
    # Through ``feed`` (a sink without ``args_text``) a reads_text table keeps a copy of
    # the call's text; the copy outlives ``ready`` only with text_after_ready.
    wire = WIRE[provider]
    _AI_SDK_IDS.clear()
    adapter = wire["adapter"]()
    adapter.feed(wire["start"](0, "c1", "f"))
    adapter.feed(wire["delta"](0, '{"a": 1}'))
    rules = RULES[provider]
    (record,) = [r for r in _records(adapter) if r.call_id == "c1"]
    # (The AI SDK reader holds fragments until tool-input-available: its copy starts then.)
    assert (record.copy is not None) is rules.reads_text
    if provider != "ai_sdk":
        assert (record.copy == ['{"a": 1}']) is rules.reads_text
    assert rules.reads_text or not rules.text_after_ready
    for item in [wire["close"](0), *wire["end"]()]:
        adapter.feed(item)
    assert (record.copy is not None) is rules.text_after_ready


def _records(adapter: Any) -> list[Any]:
    """The adapter's call records: the table's, or (OpenAI, routing its calls itself) its
    own."""
    records = list(adapter._table.records.values())
    order = getattr(adapter, "_order", None)  # Responses
    choices = getattr(adapter, "_choices", None)  # Chat
    if order is not None:
        records += order
    if choices is not None:
        records += [call for choice in choices.values() for call in choice.calls]
    return records


@pytest.mark.parametrize("provider", sorted(KEYED_BY_INDEX))
def test_superseded_and_early_calls_fail(provider: str) -> None:
    script = [
        ("start", 0, "c1", "f"),
        ("start", 0, "c2", "g"),  # c1 is still open at index 0: superseded
        ("delta", 1, "{}"),  # text for index 1 before its call started
        ("start", 1, "c3", "h"),
        ("close", 0),
        ("close", 1),
    ]
    by_id = {call.id: call for call in run(provider, script).list()}
    assert by_id["c1"].status == Status.ERROR
    assert "before it closed" in by_id["c1"].error.message
    assert by_id["c2"].status == Status.RUNNING
    assert by_id["c3"].status == Status.ERROR
    assert by_id["c3"].error.event_type == RULES[provider].delta_event


# -- what the sink raises propagates ---------------------------------------------------


class Boom(Exception):
    pass


class RaiseOn(ChangeListener):
    def __init__(self, status: Status | None) -> None:
        self.status = status

    def call_changed(self, call_id: str, before: Status | None, after: Status) -> None:
        if self.status is None or after == self.status:
            raise Boom(call_id)


@pytest.mark.parametrize("provider", sorted(WIRE))
def test_a_listener_error_on_start_propagates(provider: str) -> None:
    wire = WIRE[provider]
    machine = tool_call_streaming_state_machine()
    machine.subscribe(RaiseOn(Status.PENDING))
    adapter = wire["adapter"]()
    with pytest.raises(Boom):
        adapter.write(wire["start"](0, "c1", "f"), machine)
    # Not taken for a malformed item: the call was not made ready with other arguments.
    adapter.write(wire["close"](0), machine)
    (call,) = machine.list()
    assert call.args_text in ("", "{}")
    assert call.status in (Status.PENDING, Status.RUNNING)


def test_a_whole_anthropic_block_never_runs_with_defaults_after_a_listener_error() -> None:
    machine = tool_call_streaming_state_machine()
    machine.subscribe(RaiseOn(Status.PENDING))
    block = {"type": "tool_use", "id": "c1", "name": "f", "input": {"city": "Paris"}}
    items = [
        {"type": "message_start", "message": {"content": [block], "stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]
    with pytest.raises(Boom):
        apply_stream(machine, items, AnthropicAdapter())
    (call,) = machine.list()
    assert call.args_text == ""
    assert machine.end is None


# The AI SDK reader holds fragments until tool-input-available (issue 24): its listener
# errors propagate there, tested in test_ai_sdk_real.py.
@pytest.mark.parametrize("provider", sorted(set(WIRE) - {"ai_sdk"}))
def test_a_listener_error_on_a_fragment_propagates(provider: str) -> None:
    class OnFragment(ChangeListener):
        def args_appended(self, call_id: str, text: str) -> None:
            raise Boom(text)

    wire = WIRE[provider]
    machine = tool_call_streaming_state_machine()
    machine.subscribe(OnFragment(), fragments=True)
    adapter = wire["adapter"]()
    adapter.write(wire["start"](0, "c1", "f"), machine)
    with pytest.raises(Boom):
        adapter.write(wire["delta"](0, '{"a"'), machine)
    with pytest.raises(Boom):  # the fast path too
        adapter.write(wire["delta"](0, ": 1}"), machine)


@pytest.mark.parametrize("provider", sorted(WIRE))
def test_a_listener_error_on_end_propagates(provider: str) -> None:
    class OnEnd(ChangeListener):
        def turn_ended(self, end: Any) -> None:
            raise Boom("end")

    machine = tool_call_streaming_state_machine()
    machine.subscribe(OnEnd())
    with pytest.raises(Boom):
        apply_stream(machine, WIRE[provider]["end"](), WIRE[provider]["adapter"]())


# -- limits ----------------------------------------------------------------------------


@pytest.mark.parametrize("provider", sorted(WIRE))
def test_minted_ids_respect_max_id_chars(provider: str) -> None:
    script = [("start", i, None, "f") for i in range(3)] + [("close", i) for i in range(3)]
    machine = run(provider, script, Limits(max_id_chars=1))
    calls = machine.list()
    assert bool(calls) is (RULES[provider].mint is not None)
    assert all(len(call.id) <= 1 for call in calls)
    assert machine.end is not None
    assert machine.end.ok


@pytest.mark.parametrize("provider", sorted(set(WIRE) - set(OPENAI)))  # OpenAI: own bounds
def test_records_are_bounded_by_max_calls(provider: str) -> None:
    wire = WIRE[provider]
    machine = tool_call_streaming_state_machine(limits=Limits(max_calls=5))
    adapter = wire["adapter"]()
    for index in range(200):
        adapter.write(wire["start"](index, f"c{index}", "f"), machine)
        adapter.write(wire["close"](index), machine)
        if provider == "ai_sdk":  # its calls are made ready once their step stands
            adapter.write({"type": "finish-step"}, machine)
            adapter.write({"type": "start-step"}, machine)
        if index % 2:
            for call in machine.list():
                machine.write_result(call.id, "ok")
                machine.forget(call.id)
    assert len(adapter._table.records) <= 5  # the table's records, bounded
    assert machine.list() == []  # index 199 is odd: every call was forgotten


@pytest.mark.parametrize("provider", sorted(set(WIRE) - set(OPENAI)))
def test_open_records_past_max_calls_are_not_kept(provider: str) -> None:
    wire = WIRE[provider]
    machine = tool_call_streaming_state_machine(limits=Limits(max_calls=5))
    adapter = wire["adapter"]()
    for index in range(200):
        adapter.write(wire["start"](index, f"c{index}", "f"), machine)
    assert len(adapter._table.records) == 5
    assert [call.id for call in machine.list()] == [f"c{i}" for i in range(5)]


def test_the_minter_never_exceeds_the_limit() -> None:
    minter = IdMinter()
    ids = [minter.mint("base", Limits(max_id_chars=2)) for _ in range(12)]
    given = [i for i in ids if i is not None]
    assert all(len(i) <= 2 for i in given)
    assert len(set(given)) == len(given)
    assert ids[-1] is None  # every two-character id of the base's family is taken


def test_the_minter_remembers_as_many_ids_as_the_machine() -> None:
    limits = Limits(max_calls=3, remember_forgotten=2)
    minter = IdMinter()
    for n in range(100):
        assert minter.claim(f"id{n}", limits)
    assert not minter.claim("id99", limits)  # a recent id: still known
    assert minter.claim("id0", limits)  # older than the machine's memory: forgotten


# -- the whole-call adapters ------------------------------------------------------------


def _ollama_line(*calls: dict[str, Any], done: bool = False) -> dict[str, Any]:
    line: dict[str, Any] = {"message": {"role": "assistant", "tool_calls": list(calls)}}
    if done:
        line.update(done=True, done_reason="stop")
    return line


def test_ollama_mints_a_fresh_id_for_a_reused_one() -> None:
    assert RULES["ollama"].reused_id == "mint"
    call = {"id": "x", "function": {"name": "f", "arguments": {"a": 1}}}
    machine = tool_call_streaming_state_machine()
    apply_stream(machine, [_ollama_line(call, call, done=True)], OllamaAdapter())
    assert [c.id for c in machine.list()] == ["x", "ollama-call-1"]
    assert [c.args for c in machine.list()] == [{"a": 1}, {"a": 1}]


def test_ollama_empty_name_fails_and_absent_arguments_are_empty() -> None:
    calls = [{"function": {"name": ""}}, {"function": {"name": "g"}}]
    machine = tool_call_streaming_state_machine()
    apply_stream(machine, [_ollama_line(*calls, done=True)], OllamaAdapter())
    first, second = machine.list()
    assert first.status == Status.ERROR
    assert first.error.field == "function.name"
    assert second.args == {}


def _gemini_chunk(*calls: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {
        "content": {"parts": [{"functionCall": call} for call in calls]},
        "index": 0,
    }
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate]}


def test_gemini_mints_per_candidate_and_ignores_a_repeated_id() -> None:
    assert RULES["gemini"].reused_id == "ignore"
    with_id = {"id": "g1", "name": "f", "args": {"a": 1}}
    chunks = [
        _gemini_chunk({"name": "f"}, with_id),
        _gemini_chunk(with_id, {"name": "g", "args": {}}, finish="STOP"),  # g1 again: ignored
    ]
    machine = tool_call_streaming_state_machine()
    apply_stream(machine, chunks, GeminiAdapter())
    assert [(c.id, c.args) for c in machine.list()] == [
        ("gemini-call-0-0", {}),
        ("g1", {"a": 1}),
        ("gemini-call-0-2", {}),
    ]
    assert machine.end is not None
    assert machine.end.ok


WHOLE_CALL_STREAMS: dict[str, tuple[Callable[[], Any], list[Any]]] = {
    "ollama": (
        OllamaAdapter,
        [_ollama_line({"function": {"name": "f", "arguments": {"a": 1}}}, done=True)],
    ),
    "ollama_openai_compatible": (
        OllamaAdapter,
        [
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "c1",
                                    "function": {"name": "f", "arguments": "{}"},
                                }
                            ]
                        },
                    }
                ]
            }
        ],
    ),
    "mistral": (
        MistralAdapter,
        [
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {"id": "c1", "function": {"name": "f", "arguments": "{}"}}
                            ]
                        },
                    }
                ]
            }
        ],
    ),
    "gemini": (
        GeminiAdapter,
        [
            {
                "candidates": [
                    {"content": {"parts": [{"functionCall": {"name": "f", "args": {"a": 1}}}]}}
                ]
            }
        ],
    ),
    "ai_sdk": (
        AISDKAdapter,
        [
            {
                "type": "tool-input-available",
                "toolCallId": "c1",
                "toolName": "f",
                "input": {"a": 1},
            }
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(WHOLE_CALL_STREAMS))
def test_a_listener_error_propagates_from_every_adapter(name: str) -> None:
    make, items = WHOLE_CALL_STREAMS[name]
    machine = tool_call_streaming_state_machine()
    machine.subscribe(RaiseOn(Status.PENDING))
    with pytest.raises(Boom):
        apply_stream(machine, items, make())
    (call,) = machine.list()
    assert call.status == Status.PENDING  # never made ready with other arguments
    assert machine.end is None


@pytest.mark.parametrize(
    ("make", "items"),
    [
        (
            OpenAIChatAdapter,
            [
                {
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"tool_calls": [{"index": i, "function": {"name": "f"}}]},
                        }
                    ]
                }
                for i in range(3)
            ]
            + [{"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}],
        ),
        (
            OpenAIResponsesAdapter,
            [
                {
                    "type": "response.output_item.added",
                    "output_index": i,
                    "item": {"type": "function_call", "name": "f", "arguments": ""},
                }
                for i in range(3)
            ]
            + [{"type": "response.completed", "response": {"output": []}}],
        ),
        (
            GeminiAdapter,
            [
                {
                    "candidates": [
                        {
                            "content": {"parts": [{"functionCall": {"name": "f"}}] * 3},
                            "finishReason": "STOP",
                        }
                    ]
                }
            ],
        ),
    ],
)
def test_minted_ids_respect_max_id_chars_in_every_adapter(make: Any, items: list[Any]) -> None:
    machine = tool_call_streaming_state_machine(limits=Limits(max_id_chars=1))
    apply_stream(machine, items, make())
    calls = machine.list()
    assert calls
    assert all(len(call.id) <= 1 for call in calls)
    assert machine.end is not None
    assert machine.end.ok


@pytest.mark.parametrize("given", [[], 0, False, ""])
def test_falsy_input_is_empty_is_off_for_the_ai_sdk(given: Any) -> None:
    """The AI SDK's announced input is the input, whatever it is: ``[]`` stays ``[]``."""
    assert not RULES["ai_sdk"].falsy_input_is_empty
    assert RULES["anthropic"].falsy_input_is_empty
    machine = tool_call_streaming_state_machine()
    part = {"type": "tool-input-available", "toolCallId": "c1", "toolName": "f", "input": given}
    apply_stream(machine, [part, {"type": "finish"}], AISDKAdapter())
    (call,) = machine.list()
    assert call.status == Status.RUNNING
    assert call.args == given
    assert type(call.args) is type(given)
