"""AnthropicAdapter: differential tests against the official client, quirks, re-chunking."""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anthropic
import anyio
import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import DEADLINE
from toolcall_tracker import (
    Delta,
    End,
    IncompleteArguments,
    InvalidArguments,
    Ready,
    Start,
    ToolCall,
    ToolCallTracker,
    tool_call_streaming_state_machine,
)
from toolcall_tracker.adapters import _common, adapt, apply_stream
from toolcall_tracker.adapters.anthropic import (
    AnthropicAdapter,
    AnthropicMalformedEvent,
    AnthropicServerToolError,
)

FIXTURES = Path(__file__).parent.parent / "fixtures" / "anthropic"
ALL = sorted(p.name for p in FIXTURES.glob("*.sse"))
# Transcripts the official client completes without raising (cut_mid_block ends in an
# SSE error event, which the client raises as an APIStatusError).
COMPLETE = [name for name in ALL if name != "cut_mid_block.sse"]


def sse_events(name: str) -> list[dict[str, Any]]:
    """The JSON of every ``data:`` line of a transcript, in order."""
    body = (FIXTURES / name).read_text()
    return [
        json.loads(line[len("data:") :]) for line in body.splitlines() if line.startswith("data:")
    ]


def run(items: Iterable[Any], adapter: AnthropicAdapter | None = None) -> Any:
    adapter = adapter or AnthropicAdapter()
    machine = tool_call_streaming_state_machine()
    for item in items:
        for event in adapter.feed(item):
            machine.apply(event)
    for event in adapter.end():
        machine.apply(event)
    return machine


def client_for(name: str) -> anthropic.AsyncAnthropic:
    body = (FIXTURES / name).read_bytes()

    def handler(request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/v1/messages"
        assert json.loads(request.content)["stream"] is True
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    # anthropic 2.x takes an httpx2 client (it rejects an httpx.AsyncClient).
    transport = httpx2.MockTransport(handler)
    return anthropic.AsyncAnthropic(
        api_key="test-key", max_retries=0, http_client=httpx2.AsyncClient(transport=transport)
    )


REQUEST: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "messages": [{"role": "user", "content": "hi"}],
}


# -- differential: the official client's own stream and final message ------------------


@pytest.mark.anyio
@pytest.mark.parametrize("name", COMPLETE)
async def test_matches_official_final_message(anyio_backend: str, name: str) -> None:
    with anyio.fail_after(DEADLINE):
        client = client_for(name)
        async with ToolCallTracker() as tracker:
            async with client.messages.stream(**REQUEST) as stream:
                await tracker.consume(adapt(stream, AnthropicAdapter()))
                final = await stream.get_final_message()
            await client.close()
            official = [block for block in final.content if block.type == "tool_use"]
            calls = tracker.list()
            assert [c.id for c in calls] == [b.id for b in official]
            assert [c.name for c in calls] == [b.name for b in official]
            end = tracker.end
            assert end is not None
            assert end.reason == final.stop_reason
            assert end.ok is (final.stop_reason in ("tool_use", "end_turn"))
            for call, block in zip(calls, official, strict=True):
                if final.stop_reason == "max_tokens":
                    # The client keeps a partial parse of the truncated JSON; the tracker
                    # refuses to run it.
                    assert call.status == "error"
                    assert isinstance(call.error, InvalidArguments)
                    completed = json.loads(call.args_text + '"}')
                    assert block.input.items() <= completed.items()
                    continue
                assert call.status == "running"
                assert call.args == block.input
                assert json.loads(call.args_text) == block.input


@pytest.mark.anyio
@pytest.mark.parametrize("name", COMPLETE)
async def test_raw_client_events_match_dicts(anyio_backend: str, name: str) -> None:
    """``messages.create(stream=True)`` typed events and the SSE dicts give the same calls."""
    with anyio.fail_after(DEADLINE):
        client = client_for(name)
        stream = await client.messages.create(**REQUEST, stream=True)
        typed = [event async for event in stream]
        await client.close()
        assert snapshot(run(typed)) == snapshot(run(sse_events(name)))


@pytest.mark.anyio
async def test_client_raises_on_error_event_and_tracker_fails_the_open_call(
    anyio_backend: str,
) -> None:
    with anyio.fail_after(DEADLINE):
        client = client_for("cut_mid_block.sse")
        async with ToolCallTracker() as tracker:
            async with client.messages.stream(**REQUEST) as stream:
                with pytest.raises(anthropic.APIStatusError):
                    await tracker.consume(adapt(stream, AnthropicAdapter()))
            await client.close()
            (call,) = tracker.list()
            assert call.status == "error"
            assert isinstance(call.error, IncompleteArguments)
            assert tracker.end is not None
            assert tracker.end.ok is False


def snapshot(machine: Any) -> tuple[list[ToolCall], End | None]:
    return machine.list(), machine.end


# -- the transcripts, through the dict path ----------------------------------------------


def test_error_event_as_dicts_ends_not_ok() -> None:
    machine = run(sse_events("cut_mid_block.sse"))
    assert machine.end == End(ok=False, reason="error: overloaded_error: Overloaded")
    (call,) = machine.list()
    assert call.status == "error"
    assert call.args_text == '{"location": "Lis'


def test_argless_tools_get_empty_object() -> None:
    calls = run(sse_events("argless_tool.sse")).list()
    assert [(c.name, c.args_text, c.args) for c in calls] == [
        ("get_current_time", "{}", {}),
        ("list_tools", "{}", {}),
    ]


def test_block_with_input_and_no_deltas() -> None:
    calls = run(sse_events("block_with_input.sse")).list()
    assert calls[0].args == {"location": "Berlin", "days": [1, 2]}
    assert calls[0].args_text == '{"location":"Berlin","days":[1,2]}'
    assert calls[1].args == {"ticker": "ACME"}  # only an empty delta: the input stands


def test_text_and_thinking_blocks_are_ignored() -> None:
    adapter = AnthropicAdapter()
    events = [e for item in sse_events("mixed_text_thinking.sse") for e in adapter.feed(item)]
    assert {type(e) for e in events} == {Start, Delta, Ready, End}
    assert [e.id for e in events if isinstance(e, Start)] == [
        "toolu_01Dq3hT7wF5eR9yU2iO4pA6s",
        "toolu_01Eu8jK3lZ1xC5vB7nM9qW2e",
    ]
    assert adapter.end() == []


def test_empty_first_fragment_emits_nothing() -> None:
    adapter = AnthropicAdapter()
    adapter.feed(tool_start(0, "t1", "f"))
    assert adapter.feed(json_delta(0, "")) == []
    assert adapter.feed(json_delta(0, '{"a":1}')) == [Delta(id="t1", argsTextDelta='{"a":1}')]


def test_ready_on_block_stop_before_the_turn_ends() -> None:
    adapter = AnthropicAdapter()
    adapter.feed(tool_start(0, "t1", "f"))
    adapter.feed(json_delta(0, '{"a":1}'))
    assert adapter.feed({"type": "content_block_stop", "index": 0}) == [Ready(id="t1")]


@pytest.mark.parametrize(
    ("reason", "ok"),
    [
        ("tool_use", True),
        ("end_turn", True),
        ("max_tokens", False),
        ("stop_sequence", False),
        ("pause_turn", False),
        ("refusal", False),
        ("model_context_window_exceeded", False),
        ("something_new", False),
    ],
)
def test_stop_reasons(reason: str, ok: bool) -> None:
    adapter = AnthropicAdapter()
    assert adapter.feed(message_delta(reason)) == []
    assert adapter.feed({"type": "message_stop"}) == [End(ok=ok, reason=reason)]
    assert adapter.end() == []


def test_ok_stop_reasons_is_configurable() -> None:
    adapter = AnthropicAdapter(ok_stop_reasons={"end_turn", "tool_use", "stop_sequence"})
    adapter.feed(message_delta("stop_sequence"))
    assert adapter.end() == [End(ok=True, reason="stop_sequence")]


def test_stream_without_stop_reason_ends_not_ok() -> None:
    adapter = AnthropicAdapter()
    adapter.feed(tool_start(0, "t1", "f"))
    assert adapter.end() == [End(ok=False, reason="stream ended before message_stop")]


def test_malformed_delta_fails_its_call_only() -> None:
    adapter = AnthropicAdapter()
    machine = tool_call_streaming_state_machine()
    items = [
        tool_start(0, "t1", "f"),
        tool_start(1, "t2", "g"),
        json_delta(0, '{"a":'),
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta"}},
        json_delta(1, '{"never": "seen"}'),  # dropped: the call already failed
        json_delta(0, "1}"),
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_stop", "index": 1},
        message_delta("tool_use"),
        {"type": "message_stop"},
    ]
    for item in items:
        for event in adapter.feed(item):
            machine.apply(event)
    first, second = machine.list()
    assert first.status == "running"
    assert first.args == {"a": 1}
    assert second.status == "error"
    assert second.args_text == ""
    assert isinstance(second.error, AnthropicMalformedEvent)
    assert second.error.event_type == "content_block_delta"
    assert second.error.index == 1
    assert machine.end == End(ok=True, reason="tool_use")


@pytest.mark.parametrize(
    "item",
    [
        None,
        42,
        "content_block_delta",
        {},
        {"type": "content_block_delta"},
        {"type": "content_block_delta", "index": [0], "delta": None},
        {"type": "content_block_start", "index": "0", "content_block": {"type": "tool_use"}},
        {"type": "content_block_start", "index": 0},
        {"type": "content_block_stop", "index": None},
        {"type": "message_delta", "delta": "oops"},
        {"type": "ping"},
        {"type": "message_start", "message": {}},
        {"type": "input_json", "partial_json": "{}", "snapshot": {}},  # helper events
        {"type": "brand_new_event", "index": 0},
    ],
)
def test_junk_never_raises_and_leaves_calls_alone(item: Any) -> None:
    adapter = AnthropicAdapter()
    adapter.feed(tool_start(0, "t1", "f"))
    assert adapter.feed(item) == []
    assert adapter.feed(json_delta(0, "{}")) == [Delta(id="t1", argsTextDelta="{}")]


def test_a_hostile_object_never_raises() -> None:
    class Hostile:
        @property
        def type(self) -> str:
            raise RuntimeError("boom")

    assert AnthropicAdapter().feed(Hostile()) == []


def test_tool_block_without_name_fails_its_call() -> None:
    adapter = AnthropicAdapter()
    block = {"type": "tool_use", "id": "t1"}
    events = adapter.feed({"type": "content_block_start", "index": 0, "content_block": block})
    assert events[0] == Start(id="t1", name="")
    assert isinstance(events[1].error, AnthropicMalformedEvent)  # type: ignore[union-attr]
    assert adapter.feed(json_delta(0, "{}")) == []
    assert adapter.feed({"type": "content_block_stop", "index": 0}) == []


def test_tool_block_without_id_gets_a_stable_synthetic_id() -> None:
    def block(index: int) -> dict[str, Any]:
        content = {"type": "tool_use", "name": "f", "input": {}}
        return {"type": "content_block_start", "index": index, "content_block": content}

    adapter = AnthropicAdapter()
    first = adapter.feed(tool_start(1, "anthropic-block-0", "taken"))
    assert first == [Start(id="anthropic-block-0", name="taken")]
    assert adapter.feed(block(0)) == [Start(id="anthropic-block-0-2", name="f")]
    assert adapter.feed(block(2)) == [Start(id="anthropic-block-2", name="f")]


def test_reused_id_is_ignored_and_its_deltas_dropped() -> None:
    adapter = AnthropicAdapter()
    adapter.feed(tool_start(0, "t1", "f"))
    adapter.feed({"type": "content_block_stop", "index": 0})
    assert adapter.feed(tool_start(1, "t1", "f")) == []
    assert adapter.feed(json_delta(1, "{}")) == []


def test_new_block_at_an_open_index_supersedes_it() -> None:
    adapter = AnthropicAdapter()
    adapter.feed(tool_start(0, "t1", "f"))
    assert adapter.feed(tool_start(0, "t1", "f")) == []  # the same block again
    events = adapter.feed(tool_start(0, "t2", "g"))
    assert isinstance(events[0].error, AnthropicMalformedEvent)  # type: ignore[union-attr]
    assert events[0].id == "t1"  # type: ignore[union-attr]
    assert events[1] == Start(id="t2", name="g")


def test_unserialisable_input_fails_the_call() -> None:
    adapter = AnthropicAdapter()
    adapter.feed(tool_start(0, "t1", "f", {"x": float("nan")}))
    (event,) = adapter.feed({"type": "content_block_stop", "index": 0})
    assert isinstance(event.error, AnthropicMalformedEvent)  # type: ignore[union-attr]


def test_events_after_message_stop_are_ignored() -> None:
    adapter = AnthropicAdapter()
    adapter.feed(message_delta("tool_use"))
    adapter.feed({"type": "message_stop"})
    assert adapter.feed(tool_start(0, "t1", "f")) == []
    assert adapter.feed(json_delta(0, "{}")) == []


# -- server tools --------------------------------------------------------------------------


def test_server_tools_are_ignored_by_default() -> None:
    calls = run(sse_events("server_tool.sse")).list()
    assert [c.name for c in calls] == ["save_note"]


def test_server_tools_tracked_through_their_results() -> None:
    calls = run(sse_events("server_tool.sse"), AnthropicAdapter(server_tools=True)).list()
    found, failed, client_call = calls
    assert (found.name, found.status, found.args) == (
        "web_search",
        "done",
        {"query": "anyio trio release notes"},
    )
    assert found.result[0]["url"] == "https://example.org/notes"
    assert failed.status == "error"
    assert isinstance(failed.error, AnthropicServerToolError)
    assert failed.error.error_code == "max_uses_exceeded"
    assert client_call.status == "running"


def test_mcp_tool_result_with_is_error() -> None:
    adapter = AnthropicAdapter(server_tools=True)
    machine = tool_call_streaming_state_machine()
    items = [
        tool_start(0, "mcptoolu_1", "lookup", btype="mcp_tool_use"),
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {
                "type": "mcp_tool_result",
                "tool_use_id": "mcptoolu_1",
                "is_error": True,
                "content": "server down",
            },
        },
    ]
    for item in items:
        for event in adapter.feed(item):
            machine.apply(event)
    (call,) = machine.list()
    assert call.status == "error"
    assert isinstance(call.error, AnthropicServerToolError)


# -- hot path --------------------------------------------------------------------------------


def test_fed_delta_is_the_model_construct_instance() -> None:
    adapter = AnthropicAdapter()
    adapter.feed(tool_start(0, "t1", "f"))
    adapter.feed(json_delta(0, "{"))
    (fast,) = adapter.feed(json_delta(0, "abc"))  # the hot path: a block already streaming
    assert type(fast) is Delta
    slow = Delta.model_construct(id="t1", args_text_delta="abc")
    assert fast == slow == Delta(id="t1", argsTextDelta="abc")
    assert fast.__dict__ == slow.__dict__
    assert fast.model_fields_set == slow.model_fields_set
    assert hash(fast) == hash(slow)
    assert fast.model_dump(by_alias=True) == {"type": "delta", "id": "t1", "argsTextDelta": "abc"}


# -- property: any re-chunking of partial_json gives the same calls -----------------------


def rechunk(events: list[dict[str, Any]], cuts: list[int]) -> list[dict[str, Any]]:
    """Re-split each tool block's concatenated partial_json at the given offsets."""
    out: list[dict[str, Any]] = []
    pending: dict[int, str] = {}
    for event in events:
        delta = event.get("delta", {})
        if event["type"] == "content_block_delta" and delta.get("type") == "input_json_delta":
            pending[event["index"]] = pending.get(event["index"], "") + delta["partial_json"]
            continue
        if event["type"] == "content_block_stop" and event["index"] in pending:
            text = pending.pop(event["index"])
            offsets = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
            out.append(json_delta(event["index"], ""))
            pieces = (text[a:b] for a, b in itertools.pairwise(offsets))
            out.extend(json_delta(event["index"], piece) for piece in pieces)
        out.append(event)
    return out


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(COMPLETE),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=30),
)
def test_rechunking_partial_json_gives_the_same_calls(name: str, cuts: list[int]) -> None:
    original = sse_events(name)
    assert snapshot(run(rechunk(original, cuts))) == snapshot(run(original))


# -- helpers -------------------------------------------------------------------------------


def tool_start(
    index: int, call_id: str, name: str, input: Any = None, btype: str = "tool_use"
) -> dict[str, Any]:
    block = {"type": btype, "id": call_id, "name": name, "input": {} if input is None else input}
    return {"type": "content_block_start", "index": index, "content_block": block}


def json_delta(index: int, text: str) -> dict[str, Any]:
    delta = {"type": "input_json_delta", "partial_json": text}
    return {"type": "content_block_delta", "index": index, "delta": delta}


def message_delta(reason: str) -> dict[str, Any]:
    delta = {"stop_reason": reason, "stop_sequence": None}
    return {"type": "message_delta", "delta": delta, "usage": {"output_tokens": 5}}


def test_synthetic_ids_are_minted_in_linear_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # 8,000 id-less blocks, all at index 0: each takes the next suffix of one base. Linear
    # is counted, not timed: the ids looked up in the minter's memory of used ids stay a
    # small multiple of the calls (trying every suffix from 2 again would be ~32 million).
    probes = 0

    class Counting(dict[str, None]):
        def __contains__(self, key: object) -> bool:
            nonlocal probes
            probes += 1
            return super().__contains__(key)

    init = _common.IdMinter.__init__

    def counting_init(self: _common.IdMinter, sep: str = "-") -> None:
        init(self, sep)
        self._used = Counting()

    monkeypatch.setattr(_common.IdMinter, "__init__", counting_init)
    items: list[Any] = []
    for _ in range(8_000):
        block = {"type": "tool_use", "name": "f", "input": {}}
        items.append({"type": "content_block_start", "index": 0, "content_block": block})
        items.append({"type": "content_block_stop", "index": 0})
    items.append(message_delta("tool_use"))
    machine = tool_call_streaming_state_machine()
    apply_stream(machine, items, AnthropicAdapter())
    ids = [call.id for call in machine.list()]
    assert ids[:3] == ["anthropic-block-0", "anthropic-block-0-2", "anthropic-block-0-3"]
    assert ids[-1] == "anthropic-block-0-8000"
    assert len(set(ids)) == 8_000
    assert 8_000 <= probes <= 4 * 8_000, probes


def test_a_fragment_before_its_block_fails_that_call(caplog: pytest.LogCaptureFixture) -> None:
    items = [
        json_delta(0, '{"a":1}'),  # before the block at index 0 started
        tool_start(0, "t1", "f"),
        json_delta(0, ""),
        {"type": "content_block_stop", "index": 0},
        tool_start(1, "t2", "g"),
        json_delta(1, '{"b":2}'),
        {"type": "content_block_stop", "index": 1},
        message_delta("tool_use"),
        {"type": "message_stop"},
    ]
    with caplog.at_level(logging.DEBUG, logger="toolcall_tracker.adapters"):
        machine = run(items)
    first, second = machine.list()
    assert first.status == "error"
    assert isinstance(first.error, AnthropicMalformedEvent)
    assert first.error.index == 0
    assert "before the block started" in first.error.message
    assert "before its block" in caplog.text
    assert (second.status, second.args) == ("running", {"b": 2})


def test_a_whole_call_inside_message_start() -> None:
    # Programmatic tool calling: the tool_use and the stop_reason are in message_start;
    # no content-block events, no message_delta.
    block = {
        "type": "tool_use",
        "id": "toolu_015d",
        "name": "rollDie",
        "input": {"player": "player2"},
        "caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_01"},
    }
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": [block],
               "stop_reason": "tool_use", "stop_sequence": None}  # fmt: skip
    machine = run([{"type": "message_start", "message": message}, {"type": "message_stop"}])
    (call,) = machine.list()
    assert (call.id, call.name, call.status, call.args) == (
        "toolu_015d",
        "rollDie",
        "running",
        {"player": "player2"},
    )
    assert machine.end == End(ok=True, reason="tool_use")
