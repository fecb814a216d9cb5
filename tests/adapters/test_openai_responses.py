"""OpenAIResponsesAdapter: differential tests against the official client, quirks, properties.

Each recorded transcript (``tests/fixtures/openai_responses/*.sse``) is served to the
official ``openai.AsyncOpenAI`` client over a real HTTP exchange (an ``httpx``
``MockTransport`` streaming the SSE body in small byte pieces; the client parses the SSE
itself). The client's own stream objects go through the adapter into a ``ToolCallTracker``
and every call is compared with what the client's accumulator says:
``client.responses.stream(...)`` / ``get_final_response()``, and the raw
``client.responses.create(stream=True)`` events with the ``response.completed`` they end
with. The client runs on asyncio and on trio, so these run on both backends.

Unit tests feed the adapter events directly, as plain dicts and as the SDK's typed events.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai import AsyncOpenAI
from openai.types import responses as r

from toolcall_tracker import (
    Delta,
    End,
    Error,
    IncompleteArguments,
    Ready,
    Start,
    Status,
    ToolCallStateMachine,
    ToolCallTracker,
    tool_call_streaming_state_machine,
)
from toolcall_tracker.adapters import adapt
from toolcall_tracker.adapters.openai import (
    OpenAIArgumentsMismatch,
    OpenAICallFailure,
    OpenAIMalformedToolCall,
    OpenAIResponsesAdapter,
    OpenAITurnCutOff,
)

DEADLINE = 10.0
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "openai_responses"

# -- helpers ---------------------------------------------------------------------------


def sse_body(name: str) -> bytes:
    return (FIXTURES / f"{name}.sse").read_bytes()


def sse_items(name: str) -> list[dict[str, Any]]:
    """The JSON objects of a transcript's ``data:`` lines."""
    return [
        json.loads(line[len("data: ") :])
        for line in sse_body(name).decode().splitlines()
        if line.startswith("data: ")
    ]


_TYPED = {
    "response.created": r.ResponseCreatedEvent,
    "response.in_progress": r.ResponseInProgressEvent,
    "response.output_item.added": r.ResponseOutputItemAddedEvent,
    "response.output_item.done": r.ResponseOutputItemDoneEvent,
    "response.content_part.added": r.ResponseContentPartAddedEvent,
    "response.content_part.done": r.ResponseContentPartDoneEvent,
    "response.output_text.delta": r.ResponseTextDeltaEvent,
    "response.output_text.done": r.ResponseTextDoneEvent,
    "response.function_call_arguments.delta": r.ResponseFunctionCallArgumentsDeltaEvent,
    "response.function_call_arguments.done": r.ResponseFunctionCallArgumentsDoneEvent,
    "response.completed": r.ResponseCompletedEvent,
    "response.incomplete": r.ResponseIncompleteEvent,
    "response.failed": r.ResponseFailedEvent,
    "error": r.ResponseErrorEvent,
}


def typed(item: dict[str, Any]) -> Any:
    """The SDK event for this JSON, built with the SDK's own lenient constructor."""
    return _TYPED[item["type"]].construct(**item)


def shaped(items: Iterable[dict[str, Any]], shape: str) -> list[Any]:
    return [typed(item) if shape == "typed" else item for item in items]


SHAPES = pytest.mark.parametrize("shape", ["dict", "typed"])


def run(items: Iterable[Any]) -> tuple[ToolCallStateMachine, list[Any]]:
    adapter = OpenAIResponsesAdapter()
    machine = tool_call_streaming_state_machine()
    events: list[Any] = []
    for item in items:
        events.extend(adapter.feed(item))
    events.extend(adapter.end())
    for event in events:
        machine.apply(event)
    return machine, events


def summary(machine: ToolCallStateMachine) -> list[tuple[str, str, str, str]]:
    return [(c.id, c.name, c.args_text, c.status.value) for c in machine.list()]


def fc(item_id: str | None, call_id: str | None, name: str | None, arguments: Any = "") -> dict:
    item: dict[str, Any] = {"type": "function_call", "arguments": arguments, "status": "x"}
    for key, value in (("id", item_id), ("call_id", call_id), ("name", name)):
        if value is not None:
            item[key] = value
    return item


def added(item: dict[str, Any], index: int = 0) -> dict[str, Any]:
    return {"type": "response.output_item.added", "output_index": index, "item": item}


def item_done(item: dict[str, Any], index: int = 0) -> dict[str, Any]:
    return {"type": "response.output_item.done", "output_index": index, "item": item}


def delta(item_id: str | None, text: str, index: int | None = 0) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "response.function_call_arguments.delta", "delta": text}
    if item_id is not None:
        event["item_id"] = item_id
    if index is not None:
        event["output_index"] = index
    return event


def args_done(item_id: str, arguments: Any, index: int = 0) -> dict[str, Any]:
    return {
        "type": "response.function_call_arguments.done",
        "item_id": item_id,
        "output_index": index,
        "arguments": arguments,
    }


def completed(*output: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "response.completed",
        "response": {"id": "resp_1", "status": "completed", "output": list(output)},
    }


# -- the official client over HTTP -----------------------------------------------------


def client_for(body: bytes, piece: int = 53) -> AsyncOpenAI:
    async def pieces() -> AsyncIterator[bytes]:
        for start in range(0, len(body), piece):
            yield body[start : start + piece]

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.method == "POST"
        assert request.url.path == "/v1/responses"
        assert json.loads(request.content)["stream"] is True
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=pieces())

    return AsyncOpenAI(
        api_key="sk-test",
        base_url="http://127.0.0.1:9/v1",
        max_retries=0,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
    )


REQUEST: dict[str, Any] = {"model": "gpt-4.1", "input": "What's the weather?"}

COMPLETED = [
    "one_call",
    "parallel_calls",
    "text_and_call",
    "no_arguments",
    "args_only_in_done",
    "args_only_in_item_done",
    "args_only_in_completed",
    "final_extends",
]


def assert_matches_final_output(tracker: ToolCallTracker, output: Iterable[Any]) -> None:
    calls = [item for item in output if item.type == "function_call"]
    assert calls, "the transcript has function calls"
    assert [c.id for c in tracker.list()] == [item.call_id for item in calls]
    for item in calls:
        call = tracker.get(item.call_id)
        assert call is not None
        assert call.name == item.name
        # An argument-less call: the client keeps "", the adapter documents "{}".
        assert call.args_text == (item.arguments or "{}")
        assert call.args == json.loads(item.arguments or "{}")
        assert call.status is Status.RUNNING
    assert tracker.end == End(ok=True, reason="completed")


@pytest.mark.anyio
@pytest.mark.parametrize("name", COMPLETED)
async def test_matches_the_official_stream_helper(anyio_backend: str, name: str) -> None:
    """``client.responses.stream(...)`` events in, ``get_final_response()`` out."""
    with anyio.fail_after(DEADLINE):
        client = client_for(sse_body(name))
        async with (
            client.responses.stream(**REQUEST) as stream,
            ToolCallTracker() as tracker,
        ):
            await tracker.consume(adapt(stream, OpenAIResponsesAdapter()))
            final = await stream.get_final_response()
            assert_matches_final_output(tracker, final.output)
        await client.close()


@pytest.mark.anyio
@pytest.mark.parametrize("name", COMPLETED)
async def test_matches_the_raw_client_stream(anyio_backend: str, name: str) -> None:
    """``create(stream=True)`` events in; the ``response.completed`` they end with out."""
    with anyio.fail_after(DEADLINE):
        client = client_for(sse_body(name), piece=19)
        stream = await client.responses.create(**REQUEST, stream=True)
        seen: list[Any] = []

        async def tee() -> AsyncIterator[Any]:
            async for event in stream:
                seen.append(event)
                yield event

        async with ToolCallTracker() as tracker:
            await tracker.consume(adapt(tee(), OpenAIResponsesAdapter()))
            assert isinstance(seen[-1], r.ResponseCompletedEvent)
            assert_matches_final_output(tracker, seen[-1].response.output)
        await client.close()


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("name", "reason", "item_id"),
    [
        ("incomplete", "incomplete: max_output_tokens", "fc_08b"),
        ("failed", "failed: server_error", "fc_09a"),
    ],
)
async def test_a_turn_that_stops_short_matches_the_client_snapshots(
    anyio_backend: str, name: str, reason: str, item_id: str
) -> None:
    """No ``response.completed``: the call being streamed fails with the text the client's
    own accumulator shows (the ``snapshot`` of the helper's last delta event)."""
    with anyio.fail_after(DEADLINE):
        client = client_for(sse_body(name))
        snapshots: dict[str, str] = {}
        adapter = OpenAIResponsesAdapter()
        machine = tool_call_streaming_state_machine()
        async with client.responses.stream(**REQUEST) as stream:
            async for event in stream:
                if event.type == "response.function_call_arguments.delta":
                    snapshots[event.item_id] = event.snapshot
                for ev in adapter.feed(event):
                    machine.apply(ev)
            with pytest.raises(RuntimeError, match=r"response\.completed"):
                await stream.get_final_response()
        await client.close()
        for ev in adapter.end():
            machine.apply(ev)
        assert machine.end == End(ok=False, reason=reason)
        *complete, cut = machine.list()
        assert all(c.status is Status.RUNNING for c in complete)
        assert cut.status is Status.ERROR
        assert cut.args_text == snapshots[item_id]
        assert isinstance(cut.error, OpenAITurnCutOff)
        assert cut.error.reason == reason
        assert cut.error.api == "responses"


@pytest.mark.anyio
async def test_final_arguments_that_disagree_fail_the_call(anyio_backend: str) -> None:
    """The client reports the final text; the adapter refuses to run a call whose final
    arguments nobody saw streaming, and says both texts."""
    with anyio.fail_after(DEADLINE):
        client = client_for(sse_body("final_disagrees"))
        async with (
            client.responses.stream(**REQUEST) as stream,
            ToolCallTracker() as tracker,
        ):
            await tracker.consume(adapt(stream, OpenAIResponsesAdapter()))
            final = await stream.get_final_response()
        await client.close()
        (item,) = final.output
        assert item.type == "function_call"
        call = tracker.get(item.call_id)
        assert call is not None
        assert call.status is Status.ERROR
        assert call.error == OpenAIArgumentsMismatch(
            api="responses",
            streamed_chars=len('{"location":"Bern","unit":"celsius"}'),
            final=item.arguments,
            source="response.function_call_arguments.done",
            message=call.error.message,
        )
        assert call.args_text == '{"location":"Bern","unit":"celsius"}'
        assert "disagree" in call.error.message
        assert tracker.end == End(ok=True, reason="completed")


# -- unit tests ------------------------------------------------------------------------


@SHAPES
def test_one_call_events_in_order(shape: str) -> None:
    _, events = run(shaped(sse_items("one_call"), shape))
    assert events[0] == Start(id="call_R1oneCall0000001", name="get_weather")
    assert "".join(e.args_text_delta for e in events if isinstance(e, Delta)) == (
        '{"location":"Paris, France","unit":"celsius"}'
    )
    assert events[-2:] == [Ready(id="call_R1oneCall0000001"), End(ok=True, reason="completed")]


@SHAPES
@pytest.mark.parametrize(
    ("name", "source"),
    [
        ("args_only_in_done", "response.function_call_arguments.done"),
        ("args_only_in_item_done", "response.output_item.done"),
        ("args_only_in_completed", "response.completed"),
    ],
)
def test_arguments_only_at_the_end(shape: str, name: str, source: str) -> None:
    adapter = OpenAIResponsesAdapter()
    machine = tool_call_streaming_state_machine()
    ready_on = []
    for item in shaped(sse_items(name), shape):
        for event in adapter.feed(item):
            machine.apply(event)
            if isinstance(event, Ready):
                ready_on.append(item.get("type") if isinstance(item, dict) else item.type)
    assert set(ready_on) == {source}
    assert machine.list()[0].args == {"location": "Paris, France", "unit": "celsius"}
    assert all(c.status is Status.RUNNING for c in machine.list())


@SHAPES
def test_call_id_is_the_tracker_id_with_fallbacks(shape: str) -> None:
    items = [
        added(fc("fc_a", "call_a", "f"), 0),
        added(fc("fc_b", None, "g"), 1),
        added(fc(None, None, "h"), 2),
        added(fc(None, "fc_b", "k"), 3),  # a call_id equal to an id already in use
        completed(),
    ]
    machine, _ = run(shaped(items, shape))
    assert [(c.id, c.name) for c in machine.list()] == [
        ("call_a", "f"),
        ("fc_b", "g"),
        ("call_2", "h"),
        ("fc_b_2", "k"),
    ]


@SHAPES
def test_deltas_route_by_item_id_only(shape: str, caplog: pytest.LogCaptureFixture) -> None:
    items = [
        added(fc("fc_a", "call_a", "f"), 0),
        added(fc("fc_b", "call_b", "g"), 1),
        delta("fc_b", '{"b":', 7),  # item_id wins over a wrong output_index
        delta("fc_a", '{"a":1}', 0),
        delta(None, "junk", 1),  # no item_id: ignored, never routed by output_index
        delta("fc_zzz", "junk", 1),  # never announced: ignored, never routed by output_index
        delta("fc_b", "2}", 1),
        completed(),
    ]
    with caplog.at_level(logging.DEBUG, logger="toolcall_tracker.adapters.openai"):
        machine, _ = run(shaped(items, shape))
    assert summary(machine) == [
        ("call_a", "f", '{"a":1}', "running"),
        ("call_b", "g", '{"b":2}', "running"),
    ]
    assert "unannounced item 'fc_zzz'" in caplog.text


@SHAPES
def test_deltas_before_their_item_are_ignored_its_final_arguments_count(shape: str) -> None:
    items = [
        delta("fc_a", '{"x"', 0),
        delta("fc_a", ":1}", 0),
        item_done(fc("fc_a", "call_a", "f", '{"x":1}')),
        completed(),
    ]
    machine, events = run(shaped(items, shape))
    assert events[:3] == [
        Start(id="call_a", name="f"),
        Delta(id="call_a", argsTextDelta='{"x":1}'),
        Ready(id="call_a"),
    ]
    assert machine.get("call_a").args == {"x": 1}  # type: ignore[union-attr]


@SHAPES
def test_a_final_text_that_extends_the_stream_appends_the_suffix(shape: str) -> None:
    machine, events = run(shaped(sse_items("final_extends"), shape))
    assert Delta(id="call_R10extends000001", argsTextDelta='"unit":"celsius"}') in events
    (call,) = machine.list()
    assert call.args == {"location": "Accra", "unit": "celsius"}


@SHAPES
def test_a_final_text_that_disagrees_fails_the_call(shape: str) -> None:
    items = [
        added(fc("fc_a", "call_a", "f")),
        delta("fc_a", '{"city":"Bern"}'),
        args_done("fc_a", '{"city":"Basel"}'),
        completed(fc("fc_a", "call_a", "f", '{"city":"Basel"}')),
    ]
    machine, events = run(shaped(items, shape))
    (call,) = machine.list()
    assert call.status is Status.ERROR
    assert call.error.kind == "arguments_mismatch"
    assert (call.error.streamed_chars, call.error.final) == (15, '{"city":"Basel"}')
    assert call.args_text == '{"city":"Bern"}'
    assert isinstance(call.error, OpenAICallFailure)
    assert not any(isinstance(e, Ready) for e in events)
    assert events[-1] == End(ok=True, reason="completed")


@SHAPES
def test_a_later_final_text_that_contradicts_a_ready_call_fails_it(shape: str) -> None:
    items = [
        added(fc("fc_a", "call_a", "f")),
        args_done("fc_a", '{"n":1}'),
        item_done(fc("fc_a", "call_a", "f", '{"n":1}')),  # agrees: nothing happens
        completed(fc("fc_a", "call_a", "f", '{"n":12}')),
    ]
    machine, events = run(shaped(items, shape))
    assert [type(e).__name__ for e in events] == ["Start", "Delta", "Ready", "Error", "End"]
    (call,) = machine.list()
    assert call.status is Status.ERROR
    assert isinstance(call.error, OpenAIArgumentsMismatch)
    assert call.error.source == "response.completed"
    assert "made ready with" in call.error.message


@SHAPES
def test_argument_less_calls(shape: str) -> None:
    machine, _ = run(shaped(sse_items("no_arguments"), shape))
    assert [(c.name, c.args_text, c.args) for c in machine.list()] == [
        ("get_time_utc", "{}", {}),
        ("list_files", "{}", {}),
    ]


@SHAPES
def test_empty_final_arguments_wait_for_completed(shape: str) -> None:
    adapter = OpenAIResponsesAdapter()
    items = shaped(
        [
            added(fc("fc_a", "call_a", "f")),
            args_done("fc_a", ""),
            item_done(fc("fc_a", "call_a", "f", "")),
            completed(fc("fc_a", "call_a", "f", '{"late":true}')),
        ],
        shape,
    )
    assert adapter.feed(items[0]) == [Start(id="call_a", name="f")]
    assert adapter.feed(items[1]) == []
    assert adapter.feed(items[2]) == []
    assert adapter.feed(items[3]) == [
        Delta(id="call_a", argsTextDelta='{"late":true}'),
        Ready(id="call_a"),
        End(ok=True, reason="completed"),
    ]


@SHAPES
def test_completed_readies_calls_it_does_not_list(shape: str) -> None:
    items = [added(fc("fc_a", "call_a", "f")), delta("fc_a", '{"q":1}'), completed()]
    machine, _ = run(shaped(items, shape))
    assert machine.get("call_a").args == {"q": 1}  # type: ignore[union-attr]


@SHAPES
def test_incomplete_and_failed_end_the_turn_not_ok(shape: str) -> None:
    base = [
        added(fc("fc_a", "call_a", "f")),
        delta("fc_a", "{}"),
        args_done("fc_a", "{}"),
        added(fc("fc_b", "call_b", "g"), 1),
        delta("fc_b", '{"cut', 1),
    ]
    incomplete = {
        "type": "response.incomplete",
        "response": {"id": "r", "incomplete_details": {"reason": "content_filter"}},
    }
    machine, events = run(shaped([*base, incomplete], shape))
    assert [c.status for c in machine.list()] == [Status.RUNNING, Status.ERROR]
    assert machine.get("call_b").error.reason == "incomplete: content_filter"  # type: ignore[union-attr]
    assert events[-1] == End(ok=False, reason="incomplete: content_filter")

    failed = {"type": "response.failed", "response": {"id": "r", "error": {"message": "boom"}}}
    machine, events = run(shaped([*base, failed], shape))
    assert events[-1] == End(ok=False, reason="failed: boom")


def test_an_error_event_ends_the_turn_not_ok() -> None:
    items = [
        added(fc("fc_a", "call_a", "f")),
        delta("fc_a", "{"),
        {"type": "error", "code": "rate_limit_exceeded", "message": "slow down", "param": None},
    ]
    _machine, events = run(items)
    assert isinstance(events[-2], Error)
    assert events[-1] == End(ok=False, reason="error: rate_limit_exceeded")
    assert typed(items[2]).code == "rate_limit_exceeded"
    assert run(shaped(items, "typed"))[1] == events


def test_a_stream_that_just_stops_ends_not_ok() -> None:
    machine, events = run([added(fc("fc_a", "call_a", "f")), delta("fc_a", "{")])
    assert events[-1] == End(ok=False, reason="stream ended before response.completed")
    assert isinstance(machine.get("call_a").error, IncompleteArguments)  # type: ignore[union-attr]


def test_end_after_a_terminal_event_adds_nothing_and_later_items_are_ignored() -> None:
    adapter = OpenAIResponsesAdapter()
    assert adapter.feed(completed()) == [End(ok=True, reason="completed")]
    assert adapter.end() == []
    assert adapter.feed(added(fc("fc_a", "call_a", "f"))) == []


@SHAPES
def test_other_items_and_events_are_ignored(shape: str) -> None:
    items = sse_items("text_and_call")[:9]  # created, in_progress, the whole message item
    assert {i["type"] for i in items} >= {"response.output_text.delta", "response.created"}
    adapter = OpenAIResponsesAdapter()
    assert [e for item in shaped(items, shape) for e in adapter.feed(item)] == []
    assert adapter.feed({"type": "response.something_new", "x": 1}) == []
    assert adapter.feed(added({"type": "reasoning", "id": "rs_1"})) == []


def test_a_repeated_output_item_added_is_ignored() -> None:
    adapter = OpenAIResponsesAdapter()
    assert adapter.feed(added(fc("fc_a", "call_a", "f"))) == [Start(id="call_a", name="f")]
    assert adapter.feed(added(fc("fc_a", "call_a", "f"))) == []


@pytest.mark.parametrize("junk", [None, "event: x", b"{}", 7, [], ()])
def test_feed_raises_type_error_for_what_is_not_an_item(junk: Any) -> None:
    with pytest.raises(TypeError, match="expected an OpenAI stream item"):
        OpenAIResponsesAdapter().feed(junk)


@pytest.mark.parametrize(
    "item",
    [
        {},
        {"type": 5},
        {"type": "response.output_item.added"},
        {"type": "response.output_item.added", "item": "x"},
        {"type": "response.output_item.added", "item": {"type": "function_call", "name": 3}},
        {"type": "response.function_call_arguments.delta", "delta": 5, "item_id": "x"},
        {"type": "response.function_call_arguments.delta", "delta": "x", "item_id": 5},
        {"type": "response.function_call_arguments.done", "item_id": None},
        {"type": "response.output_item.done", "item": {"type": "function_call", "id": []}},
        {"type": "response.completed", "response": {"output": "x"}},
        {"type": "response.completed", "response": {"output": [None, 1, {"type": 2}]}},
        {"type": "response.incomplete"},
        {"type": "response.failed", "response": 3},
    ],
)
def test_malformed_items_never_raise(item: Any) -> None:
    adapter = OpenAIResponsesAdapter()
    for event in [*adapter.feed(item), *adapter.end()]:
        assert isinstance(event, (Start, Delta, Ready, Error, End))


@SHAPES
def test_non_string_final_arguments_fail_only_that_call(shape: str) -> None:
    items = [
        added(fc("fc_a", "call_a", "f")),
        added(fc("fc_b", "call_b", "g"), 1),
        args_done("fc_a", {"x": 1}),
        args_done("fc_b", '{"y":2}', 1),
        completed(),
    ]
    machine, _ = run(shaped(items, shape))
    a, b = machine.list()
    assert a.error == OpenAIMalformedToolCall(
        api="responses", field="arguments", message=a.error.message
    )
    assert b.args == {"y": 2}


@SHAPES
def test_a_call_without_a_name_fails(shape: str) -> None:
    machine, _ = run(shaped([added(fc("fc_a", "call_a", None, '{"x":1}')), completed()], shape))
    (call,) = machine.list()
    assert call.status is Status.ERROR
    assert isinstance(call.error, OpenAIMalformedToolCall)
    assert call.error.field == "name"


@pytest.mark.anyio
async def test_adapt_runs_tools_as_calls_become_ready(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):

        async def source() -> AsyncIterator[dict[str, Any]]:
            for item in sse_items("parallel_calls"):
                yield item

        seen = []
        async with ToolCallTracker() as tracker, anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, adapt(source(), OpenAIResponsesAdapter()))
            async for call in tracker.ready_calls():
                seen.append(call.name)
                tracker.apply({"type": "result", "id": call.id, "result": "ok"})
        assert seen == ["get_weather", "get_time"]
        assert [c.status for c in tracker.list()] == [Status.DONE, Status.DONE]


# -- property: re-chunking changes nothing ---------------------------------------------


def rechunk(items: list[dict[str, Any]], draw: st.DrawFn) -> list[dict[str, Any]]:
    """Every run of argument deltas of one item replaced by the same text cut anew."""
    out: list[dict[str, Any]] = []
    for _, group in itertools.groupby(
        items, key=lambda i: (i["type"], i.get("item_id"), i.get("output_index"))
    ):
        run_ = list(group)
        if run_[0]["type"] != "response.function_call_arguments.delta":
            out.extend(run_)
            continue
        text = "".join(i["delta"] for i in run_)
        cuts = draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=len(text)))
        points = sorted(set(cuts) | {0, len(text)})
        for a, b in itertools.pairwise(points):
            out.append(dict(run_[0], delta=text[a:b]))
    return out


PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("name", ["one_call", "parallel_calls", "text_and_call", "final_extends"])
@PROPERTY
@given(data=st.data())
def test_rechunking_a_transcript_gives_the_same_calls(name: str, data: st.DataObject) -> None:
    items = sse_items(name)
    reference, _ = run(items)
    shape = data.draw(st.sampled_from(["dict", "typed"]))
    machine, _ = run(shaped(rechunk(items, data.draw), shape))
    assert summary(machine) == summary(reference)
    assert all(c.status is Status.RUNNING for c in machine.list())
