"""GeminiAdapter: typed google-genai objects vs dicts, whole and streamed calls, quirks."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import anyio
import pytest
from google.genai import types
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import DEADLINE
from toolcall_tracker import (
    Delta,
    End,
    IncompleteArguments,
    Ready,
    Start,
    ToolCall,
    ToolCallTracker,
    tool_call_streaming_state_machine,
)
from toolcall_tracker.adapters import adapt
from toolcall_tracker.adapters.gemini import GeminiAdapter, GeminiMalformedCall

FIXTURES = Path(__file__).parent.parent / "fixtures" / "gemini"
ALL = sorted(p.name for p in FIXTURES.glob("*.json"))


def chunks(name: str) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((FIXTURES / name).read_text())
    return data


def typed(name: str) -> list[types.GenerateContentResponse]:
    return [types.GenerateContentResponse.model_validate(chunk) for chunk in chunks(name)]


def run(items: Iterable[Any]) -> tuple[list[ToolCall], End | None]:
    adapter = GeminiAdapter()
    machine = tool_call_streaming_state_machine()
    for item in items:
        for event in adapter.feed(item):
            machine.apply(event)
    for event in adapter.end():
        machine.apply(event)
    return machine.list(), machine.end


@pytest.mark.parametrize("name", ALL)
def test_typed_objects_and_dicts_agree(name: str) -> None:
    from_dicts = run(chunks(name))
    assert run(typed(name)) == from_dicts
    assert run(chunk.model_dump() for chunk in typed(name)) == from_dicts  # snake_case dicts


@pytest.mark.parametrize("name", ALL)
def test_whole_calls_carry_the_args_object(name: str) -> None:
    """Every whole call's parsed args equal the ``args`` object google-genai parsed."""
    whole = [
        part.function_call
        for chunk in typed(name)
        for candidate in chunk.candidates or []
        for part in (candidate.content.parts if candidate.content else None) or []
        if part.function_call and part.function_call.name and not part.function_call.will_continue
    ]
    if "streamed" in name:
        pytest.skip("streamed calls have no args object")
    calls = run(chunks(name))[0]
    assert [(c.name, c.status, c.args) for c in calls] == [
        (f.name, "running", f.args or {}) for f in whole
    ]


@pytest.mark.anyio
async def test_consume_over_an_async_stream(anyio_backend: str) -> None:
    async def stream() -> AsyncIterator[types.GenerateContentResponse]:
        for chunk in typed("several_calls_per_chunk.json"):
            yield chunk

    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            await tracker.consume(adapt(stream(), GeminiAdapter()))
            names = [call.name async for call in tracker.ready_calls()]
            assert names == ["set_light", "set_light", "play_music"]
            assert tracker.end == End(ok=True, reason="STOP")


def test_one_call_without_id_gets_synthetic_id() -> None:
    calls, end = run(chunks("one_call.json"))
    (call,) = calls
    assert call.id == "gemini-call-0-0"
    assert call.args_text == '{"location":"Paris, France","unit":"celsius"}'
    assert end == End(ok=True, reason="STOP")


def test_whole_call_events() -> None:
    events = GeminiAdapter().feed(chunks("parallel_calls.json")[0])
    assert events == [
        Start(id="fc_9a1b", name="get_weather"),
        Delta(id="fc_9a1b", argsTextDelta='{"location":"Boston, MA"}'),
        Ready(id="fc_9a1b"),
        Start(id="fc_9a1c", name="get_weather"),
        Delta(id="fc_9a1c", argsTextDelta='{"location":"San Francisco, CA"}'),
        Ready(id="fc_9a1c"),
    ]


def test_several_calls_per_chunk_keep_order_and_values() -> None:
    calls, _ = run(chunks("several_calls_per_chunk.json"))
    assert [c.id for c in calls] == ["gemini-call-0-0", "gemini-call-0-1", "gemini-call-0-2"]
    assert calls[1].args == {"room": "hall", "brightness": 0.5, "on": False, "color": None}
    assert calls[2].args["tags"] == ["jazz", "café"]


def test_argless_calls_get_empty_object() -> None:
    calls, _ = run(chunks("argless_tool.json"))
    assert [(c.args_text, c.args) for c in calls] == [("{}", {}), ("{}", {})]


def test_candidates_are_separate() -> None:
    calls, end = run(chunks("multi_candidate.json"))
    assert [(c.id, c.args) for c in calls] == [
        ("gemini-call-0-0", {"location": "Rome"}),
        ("gemini-call-1-0", {"location": "Milan"}),
        ("gemini-call-1-1", {}),
    ]
    assert end == End(ok=True, reason="STOP")


@pytest.mark.parametrize(
    ("name", "reason"), [("max_tokens.json", "MAX_TOKENS"), ("safety.json", "SAFETY")]
)
def test_other_finish_reasons_end_not_ok(name: str, reason: str) -> None:
    calls, end = run(chunks(name))
    assert end == End(ok=False, reason=reason)
    assert all(c.status == "running" for c in calls)  # whole calls were complete


def test_streamed_args_are_written_as_they_arrive() -> None:
    adapter = GeminiAdapter()
    texts = []
    for chunk in chunks("streamed_args.json")[:6]:
        texts += [e.args_text_delta for e in adapter.feed(chunk) if isinstance(e, Delta)]
    assert texts[:2] == ['{"location":"Bos', 'ton, \\"MA\\""']
    assert "".join(texts) == (
        '{"location":"Boston, \\"MA\\"","options":{"units":"metric","days":3,'
        '"hours":[9,17.5],"alerts":true},"note":null}'
    )


def test_streamed_calls_become_ready_when_they_stop_continuing() -> None:
    adapter = GeminiAdapter()
    items = chunks("streamed_args.json")
    for chunk in items[:5]:
        assert not any(isinstance(e, Ready) for e in adapter.feed(chunk))
    assert adapter.feed(items[5])[-1] == Ready(id="gemini-call-0-0")
    calls, end = run(items)
    assert calls[0].args == {
        "location": 'Boston, "MA"',
        "options": {"units": "metric", "days": 3, "hours": [9, 17.5], "alerts": True},
        "note": None,
    }
    assert calls[1].args == {"room name": "living room", "brightness": 50}
    assert end == End(ok=True, reason="STOP")


def test_streamed_call_cut_by_finish_reason_fails() -> None:
    (call,), end = run(chunks("streamed_cut.json"))
    assert call.status == "error"
    assert isinstance(call.error, IncompleteArguments)
    assert call.error.reason == "MAX_TOKENS"
    assert end == End(ok=False, reason="MAX_TOKENS")


def test_new_named_call_while_one_is_open_fails_the_open_one() -> None:
    items = [
        chunk([fc(name="a", willContinue=True)]),
        chunk([fc(name="b", args={"x": 1})], finish="STOP"),
    ]
    calls, _ = run(items)
    assert calls[0].status == "error"
    assert isinstance(calls[0].error, IncompleteArguments)
    assert (calls[1].name, calls[1].args) == ("b", {"x": 1})


@pytest.mark.parametrize(
    "partial",
    [
        [{"jsonPath": "$.a", "stringValue": "x"}, {"jsonPath": "$.a", "stringValue": "y"}],
        [
            {"jsonPath": "$.a.b", "numberValue": 1},
            {"jsonPath": "$.c", "numberValue": 2},
            {"jsonPath": "$.a.d", "numberValue": 3},
        ],
        [{"jsonPath": "$.list[1]", "numberValue": 1}],
        [{"jsonPath": "$[0]", "numberValue": 1}],
        [{"jsonPath": "$", "numberValue": 1}],
        [{"jsonPath": "a.b", "numberValue": 1}],
        [{"jsonPath": "$..b", "numberValue": 1}],
        [{"jsonPath": "$.n", "numberValue": "NaN"}],
        [{"jsonPath": "$.n", "boolValue": "yes"}],
        [
            {"jsonPath": "$.s", "stringValue": "x", "willContinue": True},
            {"jsonPath": "$.s", "numberValue": 2},
        ],
    ],
)
def test_malformed_partial_args_fail_the_call(partial: list[dict[str, Any]]) -> None:
    items = [
        chunk([fc(name="f", willContinue=True)]),
        chunk([fc(partialArgs=partial, willContinue=True)]),
        chunk([fc()], finish="STOP"),
    ]
    (call,), end = run(items)
    assert call.status == "error"
    assert isinstance(call.error, GeminiMalformedCall)
    assert end == End(ok=True, reason="STOP")


def test_string_left_open_is_closed_when_the_next_path_starts() -> None:
    items = [
        chunk([fc(name="f", willContinue=True)]),
        chunk(
            [
                fc(
                    partialArgs=[
                        {"jsonPath": "$.s", "stringValue": "ab", "willContinue": True},
                        {"jsonPath": "$.t", "numberValue": 1e300},
                        {"jsonPath": "$.u", "willContinue": True},
                    ],
                    willContinue=True,
                )
            ]
        ),
        chunk([fc()], finish="STOP"),
    ]
    (call,), _ = run(items)
    assert call.args == {"s": "ab", "t": 1e300}


def test_repeated_id_is_a_retransmission() -> None:
    items = [
        chunk([fc(name="f", id="c1", args={"a": 1}), fc(name="f", id="c1", args={"a": 1})]),
        chunk(None, finish="STOP"),
    ]
    calls, _ = run(items)
    assert [c.id for c in calls] == ["c1"]


def test_synthetic_ids_never_collide_with_given_ones() -> None:
    items = [chunk([fc(name="f", id="gemini-call-0-1"), fc(name="g"), fc(name="h")], "STOP")]
    calls, _ = run(items)
    assert [c.id for c in calls] == ["gemini-call-0-1", "gemini-call-0-1-2", "gemini-call-0-2"]


def test_unserialisable_args_fail_the_call() -> None:
    (call,), _ = run([chunk([fc(name="f", args={"x": float("inf")})], "STOP")])
    assert isinstance(call.error, GeminiMalformedCall)


def test_prompt_blocked() -> None:
    item = {"promptFeedback": {"blockReason": "SAFETY"}}
    assert run([item]) == ([], End(ok=False, reason="prompt blocked: SAFETY"))
    assert run([types.GenerateContentResponse.model_validate(item)])[1] == End(
        ok=False, reason="prompt blocked: SAFETY"
    )


def test_no_finish_reason_ends_not_ok() -> None:
    assert run([chunk([{"text": "hi"}])])[1] == End(
        ok=False, reason="stream ended without a finish_reason"
    )
    assert run([])[1] == End(ok=False, reason="stream ended without a finish_reason")


@pytest.mark.parametrize(
    "item",
    [None, 3, "x", {}, {"candidates": None}, {"candidates": [None]},
     {"candidates": [{"content": 5}]},
     {"candidates": [{"content": {"parts": [None, 7, {"functionCall": 1}]}}]},
     {"candidates": [{"content": {"parts": [{"functionCall": {"args": {"a": 1}}}]}}]}],
)  # fmt: skip
def test_junk_never_raises(item: Any) -> None:
    adapter = GeminiAdapter()
    assert adapter.feed(item) == []
    assert adapter.feed(chunk([fc(name="f")], "STOP"))[0] == Start(id="gemini-call-0-0", name="f")


# -- property: re-chunking streamed string values ----------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=40), st.lists(st.integers(0, 40), max_size=8))
def test_rechunked_string_gives_the_same_call(text: str, cuts: list[int]) -> None:
    offsets = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    pieces = [text[a:b] for a, b in itertools.pairwise(offsets)] or [""]
    partials = [
        {"jsonPath": "$.s", "stringValue": p, "willContinue": i < len(pieces) - 1}
        for i, p in enumerate(pieces)
    ]
    items = [chunk([fc(name="f", willContinue=True)])]
    items += [chunk([fc(partialArgs=[p], willContinue=True)]) for p in partials]
    items += [chunk([fc()], "STOP")]
    (call,), _ = run(items)
    assert call.args == {"s": text}


# -- helpers -------------------------------------------------------------------------------


def fc(**fields: Any) -> dict[str, Any]:
    return {"functionCall": fields}


def chunk(parts: list[dict[str, Any]] | None, finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {}
    if parts is not None:
        candidate["content"] = {"role": "model", "parts": parts}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate]}


def test_a_path_with_a_bad_escape_fails_the_call_instead_of_dropping_the_rest() -> None:
    partial = [
        {"jsonPath": "$.to", "stringValue": "bob"},
        {"jsonPath": "$['am\\qount']", "numberValue": 5},  # \q: not a JSON escape
        {"jsonPath": "$.confirm", "boolValue": True},
    ]
    items = [
        chunk([fc(name="pay", willContinue=True)]),
        chunk([fc(partialArgs=partial, willContinue=True)]),
        chunk([fc()], finish="STOP"),
    ]
    (call,), end = run(items)
    assert call.status == "error"
    assert isinstance(call.error, GeminiMalformedCall)
    assert call.error.json_path == "$['am\\qount']"
    assert end == End(ok=True, reason="STOP")
