"""OpenAIChatAdapter: differential tests against the official client, quirks, properties.

Differential tests serve each recorded transcript (``tests/fixtures/openai_chat/*.sse``) to
the official ``openai.AsyncOpenAI`` client over a real HTTP exchange (an ``httpx``
``MockTransport`` that streams the SSE body in small byte pieces; the client parses the
SSE itself), feed the client's own stream objects through the adapter into a
``ToolCallTracker``, and compare every call with what the client's own accumulator says.
The client runs on asyncio and on trio, so these run on both backends too.

Unit tests feed the adapter the same kind of items directly, both as plain dicts and as the
SDK's typed ``ChatCompletionChunk`` objects.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai import AsyncOpenAI, LengthFinishReasonError
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

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
    OpenAICallFailure,
    OpenAIChatAdapter,
    OpenAILateArguments,
    OpenAIMalformedToolCall,
    OpenAITurnCutOff,
)

DEADLINE = 10.0
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "openai_chat"
OK_REASONS = {"tool_calls", "stop"}

# -- helpers ---------------------------------------------------------------------------


def sse_body(name: str) -> bytes:
    return (FIXTURES / f"{name}.sse").read_bytes()


def sse_items(name: str) -> list[dict[str, Any]]:
    """The JSON objects of a transcript's ``data:`` lines, as the wire has them."""
    items = []
    for line in sse_body(name).decode().splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            items.append(json.loads(line[len("data: ") :]))
    return items


def typed(item: dict[str, Any]) -> ChatCompletionChunk:
    """The SDK object the client builds for this JSON (its own lenient constructor)."""
    return ChatCompletionChunk.construct(**item)


def shaped(items: Iterable[dict[str, Any]], shape: str) -> list[Any]:
    return [typed(item) if shape == "typed" else item for item in items]


def run(items: Iterable[Any], **options: Any) -> tuple[ToolCallStateMachine, list[Any]]:
    """Feed ``items`` and the end through a fresh adapter into a fresh machine."""
    adapter = OpenAIChatAdapter(**options)
    machine = tool_call_streaming_state_machine()
    events: list[Any] = []
    for item in items:
        events.extend(adapter.feed(item))
    events.extend(adapter.end())
    for event in events:
        machine.apply(event)
    return machine, events


def chunk(*choices: dict[str, Any], cid: str = "chatcmpl-x") -> dict[str, Any]:
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": list(choices),
    }


def choice(tool_calls: list[dict[str, Any]] | None = None, finish: Any = None, index: int = 0):
    delta: dict[str, Any] = {} if tool_calls is None else {"tool_calls": tool_calls}
    return {"index": index, "delta": delta, "finish_reason": finish}


def frag(
    index: int | None = None, id: str | None = None, name: str | None = None, args: Any = None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if index is not None:
        out["index"] = index
    if id is not None:
        out["id"] = id
        out["type"] = "function"
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if args is not None:
        function["arguments"] = args
    out["function"] = function
    return out


def summary(machine: ToolCallStateMachine) -> list[tuple[str, str, str, str]]:
    return [(c.id, c.name, c.args_text, c.status.value) for c in machine.list()]


SHAPES = pytest.mark.parametrize("shape", ["dict", "typed"])


# -- the official client over HTTP -----------------------------------------------------


def client_for(body: bytes, piece: int = 61) -> AsyncOpenAI:
    """An ``AsyncOpenAI`` whose HTTP exchange returns ``body`` as an SSE stream."""

    async def pieces() -> AsyncIterator[bytes]:
        for start in range(0, len(body), piece):
            yield body[start : start + piece]

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.method == "POST"
        assert request.url.path == "/v1/chat/completions"
        assert json.loads(request.content)["stream"] is True
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=pieces())

    return AsyncOpenAI(
        api_key="sk-test",
        base_url="http://127.0.0.1:9/v1",
        max_retries=0,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
    )


REQUEST: dict[str, Any] = {
    "model": "gpt-4o",
    "messages": [{"role": "user", "content": "What's the weather?"}],
}

# Transcripts the official accumulator understands (it needs an index on every fragment
# and merges fragments that share one, so index_zero_distinct_ids is compared apart).
DIFFERENTIAL = [
    "one_call",
    "parallel_calls",
    "text_and_calls",
    "no_arguments",
    "n2_choices",
    "missing_ids",
    "cut_off_length",
    "interleaved",
]


def expected_calls(completion: Any) -> dict[str, tuple[int, str, str]]:
    """``{tracker id: (choice, name, argument text)}`` from the client's final completion.

    A call the server sent without an id is expected under the adapter's documented
    synthesised id ``call_<choice>_<position>``.
    """
    expected = {}
    for ch in completion.choices:
        for position, call in enumerate(ch.message.tool_calls or []):
            call_id = call.id or f"call_{ch.index}_{position}"
            expected[call_id] = (ch.index, call.function.name, call.function.arguments)
    return expected


def final_of(get_final: Any) -> Any:
    """The client's accumulated completion; for ``length`` it raises, carrying it."""
    try:
        return get_final()
    except LengthFinishReasonError as exc:
        return exc.completion


def complete(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def assert_matches_client(tracker: ToolCallTracker, completion: Any) -> None:
    expected = expected_calls(completion)
    assert expected, "the transcript has tool calls"
    assert {c.id for c in tracker.list()} == set(expected)
    finish = {ch.index: ch.finish_reason for ch in completion.choices}
    last = {index: call_id for call_id, (index, _, _) in expected.items()}
    for call_id, (index, name, arguments) in expected.items():
        call = tracker.get(call_id)
        assert call is not None
        assert call.name == name
        if finish[index] in OK_REASONS or (last[index] != call_id and complete(arguments)):
            # (A call the next one followed with a complete value was ready before the
            # choice was cut off.)
            # An argument-less call: the client keeps "", the adapter documents "{}".
            assert call.args_text == (arguments or "{}")
            assert call.status is Status.RUNNING
            assert call.args == json.loads(arguments or "{}")
        else:
            assert call.args_text == arguments
            assert call.status is Status.ERROR
            assert isinstance(call.error, OpenAITurnCutOff)
            assert call.error.reason == finish[index]
            assert call.error.choice == index
    end = tracker.end
    assert end is not None
    assert end.ok is all(reason in OK_REASONS for reason in finish.values())


@pytest.mark.anyio
@pytest.mark.parametrize("name", DIFFERENTIAL)
async def test_matches_the_official_stream_helper(anyio_backend: str, name: str) -> None:
    """``client.chat.completions.stream(...)`` events in, ``get_final_completion()`` out."""
    with anyio.fail_after(DEADLINE):
        client = client_for(sse_body(name))
        async with (
            client.chat.completions.stream(**REQUEST) as stream,
            ToolCallTracker() as tracker,
        ):
            await tracker.consume(adapt(stream, OpenAIChatAdapter()))
            try:
                completion = await stream.get_final_completion()
            except LengthFinishReasonError as exc:  # it raises for "length", carrying it
                completion = exc.completion
            assert_matches_client(tracker, completion)
        await client.close()


@pytest.mark.anyio
@pytest.mark.parametrize("name", DIFFERENTIAL)
async def test_matches_the_official_accumulator_on_raw_chunks(
    anyio_backend: str, name: str
) -> None:
    """``create(stream=True)`` chunks, also fed to the client's ``ChatCompletionStreamState``."""
    with anyio.fail_after(DEADLINE):
        client = client_for(sse_body(name), piece=17)
        state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
        stream = await client.chat.completions.create(**REQUEST, stream=True)

        async def tee() -> AsyncIterator[ChatCompletionChunk]:
            async for item in stream:
                assert isinstance(item, ChatCompletionChunk)
                state.handle_chunk(item)
                yield item

        async with ToolCallTracker() as tracker:
            await tracker.consume(adapt(tee(), OpenAIChatAdapter()))
            assert_matches_client(tracker, final_of(state.get_final_completion))
        await client.close()


@pytest.mark.anyio
async def test_index_zero_for_every_call_splits_what_the_client_merges(
    anyio_backend: str,
) -> None:
    """Distinct ids on ``index: 0``: the client concatenates the calls, the adapter does not."""
    with anyio.fail_after(DEADLINE):
        client = client_for(sse_body("index_zero_distinct_ids"))
        async with (
            client.chat.completions.stream(**REQUEST) as stream,
            ToolCallTracker() as tracker,
        ):
            await tracker.consume(adapt(stream, OpenAIChatAdapter()))
            completion = await stream.get_final_completion()
        await client.close()
        (merged,) = completion.choices[0].message.tool_calls or []
        calls = tracker.list()
        assert [c.id for c in calls] == ["call_I0first00000000001", "call_I0second0000000002"]
        assert [c.name for c in calls] == ["get_weather", "get_time"]
        assert [c.args for c in calls] == [{"location": "Rome"}, {"timezone": "Europe/Rome"}]
        # What the client shows is exactly the concatenation of the calls the adapter keeps.
        assert merged.id == "".join(c.id for c in calls)
        assert merged.function.name == "".join(c.name for c in calls)
        assert merged.function.arguments == "".join(c.args_text for c in calls)


@pytest.mark.anyio
async def test_missing_index_through_the_raw_client_stream(anyio_backend: str) -> None:
    """No ``index`` anywhere: the client's accumulator cannot cope; the adapter routes by id
    and then to the latest call."""
    with anyio.fail_after(DEADLINE):
        client = client_for(sse_body("missing_index"))
        stream = await client.chat.completions.create(**REQUEST, stream=True)
        async with ToolCallTracker() as tracker:
            await tracker.consume(adapt(stream, OpenAIChatAdapter()))
            assert [(c.id, c.name, c.args, c.status) for c in tracker.list()] == [
                ("call_N1noindex00000001", "get_weather", {"location": "Lisbon"}, Status.RUNNING),
                (
                    "call_N2noindex00000002",
                    "get_time",
                    {"timezone": "Europe/Lisbon"},
                    Status.RUNNING,
                ),
            ]
            assert tracker.end == End(ok=True, reason="stop")
        await client.close()


EAGER_COMPARABLE = [n for n in DIFFERENTIAL if n != "interleaved"]


@pytest.mark.anyio
@pytest.mark.parametrize("name", EAGER_COMPARABLE)
async def test_eager_mode_readies_calls_when_the_client_says_they_are_done(
    anyio_backend: str, name: str
) -> None:
    """The default (``eager=True``) makes each call ready on the very chunk where the official
    helper emits ``tool_calls.function.arguments.done`` for it, with the same text; except
    a call with no text, which the helper calls done (``""``) when the next one starts and
    the adapter makes ready only at the ``finish_reason``."""
    with anyio.fail_after(DEADLINE):
        client = client_for(sse_body(name))
        adapter = OpenAIChatAdapter()
        machine = tool_call_streaming_state_machine()
        ours: list[list[tuple[str, str]]] = []
        theirs: list[list[tuple[str, str]]] = []
        async with client.chat.completions.stream(**REQUEST) as stream:
            async for event in stream:
                if event.type == "chunk":
                    ours.append([])
                    theirs.append([])
                for ev in adapter.feed(event):
                    machine.apply(ev)
                    if isinstance(ev, Ready):
                        call = machine.get(ev.id)
                        assert call is not None
                        ours[-1].append((call.name, call.args_text))
                if event.type == "tool_calls.function.arguments.done":
                    theirs[-1].append((event.name, event.arguments or "{}"))
        await client.close()
        for ev in adapter.end():
            machine.apply(ev)
        if name == "cut_off_length":
            # The helper calls the first call done when the second starts, as eager mode
            # does; the truncated second one it also calls done at "length", which the
            # adapter refuses: that call fails instead.
            last = theirs[-1].pop()
            assert last[0] == "write_report"
            assert machine.get("call_L2truncated0000002").status is Status.ERROR  # type: ignore[union-attr]
        if name == "no_arguments":
            # get_time sent no text: the helper calls it done when list_files starts; the
            # adapter waits for the finish_reason (a call is never made ready early with
            # no text), where both become ready.
            assert theirs[1] == [("get_time", "{}")]
            assert ours[1] == []
            theirs[-1][:0] = theirs[1]
            theirs[1] = []
        assert ours == theirs


# -- routing ---------------------------------------------------------------------------


@SHAPES
def test_one_call_events_in_order(shape: str) -> None:
    _, events = run(shaped(sse_items("one_call"), shape))
    assert events[0] == Start(id="call_1aWq9Zp0Kx3Lm7Yb", name="get_weather")
    assert all(isinstance(e, Delta) for e in events[1:-2])
    assert "".join(e.args_text_delta for e in events[1:-2]) == (
        '{"location":"Paris, France","unit":"celsius"}'
    )
    assert events[-2:] == [Ready(id="call_1aWq9Zp0Kx3Lm7Yb"), End(ok=True, reason="tool_calls")]


@SHAPES
def test_routes_by_id_when_every_call_has_index_zero(shape: str) -> None:
    machine, _ = run(shaped(sse_items("index_zero_distinct_ids"), shape))
    assert summary(machine) == [
        ("call_I0first00000000001", "get_weather", '{"location":"Rome"}', "running"),
        ("call_I0second0000000002", "get_time", '{"timezone":"Europe/Rome"}', "running"),
    ]


@SHAPES
def test_routes_by_index_and_synthesises_ids_when_there_are_none(shape: str) -> None:
    machine, _ = run(shaped(sse_items("missing_ids"), shape))
    assert summary(machine) == [
        ("call_0_0", "get_weather", '{"location":"Berlin"}', "running"),
        ("call_0_1", "get_time", '{"timezone":"Europe/Berlin"}', "running"),
    ]


@SHAPES
def test_routes_to_the_latest_call_when_there_is_no_index(shape: str) -> None:
    machine, _ = run(shaped(sse_items("missing_index"), shape))
    assert [c.args for c in machine.list()] == [
        {"location": "Lisbon"},
        {"timezone": "Europe/Lisbon"},
    ]


@SHAPES
def test_no_id_no_index_a_new_name_starts_a_new_call_a_repeated_one_does_not(
    shape: str,
) -> None:
    items = [
        chunk(choice([frag(name="get_weather", args='{"city":')])),
        chunk(choice([frag(name="get_weather", args='"Oslo"}')])),  # a repeated name
        chunk(choice([frag(name="get_time", args='{"tz":"UTC"}')])),
        chunk(choice(finish="tool_calls")),
    ]
    machine, _ = run(shaped(items, shape))
    assert summary(machine) == [
        ("call_0_0", "get_weather", '{"city":"Oslo"}', "running"),
        ("call_0_1", "get_time", '{"tz":"UTC"}', "running"),
    ]


@SHAPES
def test_index_zero_without_ids_splits_on_a_new_name(shape: str) -> None:
    items = [
        chunk(choice([frag(0, name="a", args="{}")])),
        chunk(choice([frag(0, name="b", args='{"x":1}')])),
        chunk(choice(finish="tool_calls")),
    ]
    machine, _ = run(shaped(items, shape))
    assert summary(machine) == [
        ("call_0_0", "a", "{}", "running"),
        ("call_0_1", "b", '{"x":1}', "running"),
    ]


@SHAPES
def test_synthesised_ids_are_stable_and_unique(shape: str) -> None:
    items = [
        # the server's id for the first call equals the id the second would be given
        chunk(choice([frag(0, id="call_0_1", name="a", args="{}")])),
        chunk(choice([frag(1, name="b", args="{}")])),
        chunk(choice([frag(0, name="c", args="{}")], index=1)),
        chunk(choice(finish="tool_calls"), choice(finish="tool_calls", index=1)),
    ]
    first, _ = run(shaped(items, shape))
    again, _ = run(shaped(items, shape))
    assert [c.id for c in first.list()] == ["call_0_1", "call_0_1_2", "call_1_0"]
    assert summary(first) == summary(again)


@SHAPES
def test_a_server_id_reused_in_another_choice_is_made_unique(shape: str) -> None:
    items = [
        chunk(choice([frag(0, id="call_1", name="a", args='{"n":0}')], index=0)),
        chunk(choice([frag(0, id="call_1", name="a", args='{"n":1}')], index=1)),
        chunk(choice(finish="tool_calls", index=0), choice(finish="tool_calls", index=1)),
    ]
    machine, _ = run(shaped(items, shape))
    assert [(c.id, c.args) for c in machine.list()] == [
        ("call_1", {"n": 0}),
        ("call_1_2", {"n": 1}),
    ]


@SHAPES
def test_a_name_after_the_arguments_starts_the_call_late(shape: str) -> None:
    items = [
        chunk(choice([frag(0, id="call_x", args='{"a":')])),
        chunk(choice([frag(0, args="1}")])),
        chunk(choice([frag(0, name="late_name")])),
        chunk(choice(finish="tool_calls")),
    ]
    machine, events = run(shaped(items, shape))
    assert events[:2] == [
        Start(id="call_x", name="late_name"),
        Delta(id="call_x", argsTextDelta='{"a":1}'),
    ]
    assert summary(machine) == [("call_x", "late_name", '{"a":1}', "running")]


@SHAPES
def test_a_fragment_that_routes_nowhere_and_brings_nothing_is_ignored(shape: str) -> None:
    items = [chunk(choice([frag(3), frag(args="")])), chunk(choice(finish="stop"))]
    machine, events = run(shaped(items, shape))
    assert machine.list() == []
    assert events == [End(ok=True, reason="stop")]


# -- readiness and the end of the turn -------------------------------------------------


@SHAPES
@pytest.mark.parametrize("finish", ["tool_calls", "stop"])
def test_ok_finish_reasons_make_every_pending_call_ready(shape: str, finish: str) -> None:
    items = [
        chunk(choice([frag(0, id="a", name="f", args='{"x":1}'), frag(1, id="b", name="g")])),
        chunk(choice(finish=finish)),
    ]
    machine, events = run(shaped(items, shape))
    assert [c.status for c in machine.list()] == [Status.RUNNING, Status.RUNNING]
    assert events[-1] == End(ok=True, reason=finish)


@SHAPES
@pytest.mark.parametrize("finish", ["length", "content_filter", "something_new"])
def test_other_finish_reasons_fail_the_pending_calls(shape: str, finish: str) -> None:
    items = [chunk(choice([frag(0, id="a", name="f", args='{"x":')])), chunk(choice(finish=finish))]
    machine, events = run(shaped(items, shape))
    (call,) = machine.list()
    assert call.status is Status.ERROR
    assert call.args_text == '{"x":'
    assert call.error == OpenAITurnCutOff(
        api="chat.completions", reason=finish, choice=0, message=call.error.message
    )
    assert finish in call.error.message
    assert "'a'" in call.error.message
    assert isinstance(call.error, OpenAICallFailure)
    assert call.error.model_dump()["kind"] == "turn_cut_off"
    assert events[-1] == End(ok=False, reason=finish)


@SHAPES
def test_cut_off_by_length(shape: str) -> None:
    machine, events = run(shaped(sse_items("cut_off_length"), shape))
    first, second = machine.list()
    # The first call was complete when the second started: ready then. The second is cut.
    assert (first.status, first.args) == (Status.RUNNING, {"location": "Cairo"})
    assert second.status is Status.ERROR
    assert second.error.reason == "length"  # type: ignore[union-attr]
    assert events[-1] == End(ok=False, reason="length")
    machine, _ = run(shaped(sse_items("cut_off_length"), shape), eager=False)
    assert [(c.status, c.error.reason) for c in machine.list()] == [  # type: ignore[union-attr]
        (Status.ERROR, "length"),
        (Status.ERROR, "length"),
    ]


@SHAPES
def test_n_choices_finish_independently(shape: str) -> None:
    items = [
        chunk(
            choice([frag(0, id="a", name="f", args="{}")], index=0),
            choice([frag(0, id="b", name="g", args='{"cut')], index=1),
        ),
        chunk(choice(finish="tool_calls", index=0)),
        chunk(choice(finish="length", index=1)),
        chunk(),  # the usage chunk: no choices
    ]
    machine, events = run(shaped(items, shape))
    assert [(c.id, c.status) for c in machine.list()] == [
        ("a", Status.RUNNING),
        ("b", Status.ERROR),
    ]
    assert machine.get("b").error.choice == 1  # type: ignore[union-attr]
    assert events[-1] == End(ok=False, reason="tool_calls,length")


@SHAPES
def test_n2_transcript(shape: str) -> None:
    machine, events = run(shaped(sse_items("n2_choices"), shape))
    assert [(c.id, c.name, c.args) for c in machine.list()] == [
        ("call_C0a000000000000001", "get_weather", {"location": "Oslo"}),
        ("call_C1a000000000000001", "get_time", {"location": "Lima"}),
        ("call_C1b000000000000002", "get_weather", {"location": "Lima", "unit": "fahrenheit"}),
    ]
    assert events[-1] == End(ok=True, reason="tool_calls")


@SHAPES
def test_a_stream_without_finish_reason_ends_not_ok(shape: str) -> None:
    machine, events = run(shaped([chunk(choice([frag(0, id="a", name="f", args="{")]))], shape))
    assert events[-1] == End(ok=False, reason="no finish_reason for choice 0")
    (call,) = machine.list()
    assert isinstance(call.error, IncompleteArguments)


def test_an_empty_stream_ends_not_ok() -> None:
    assert run([])[1] == [End(ok=False, reason="stream ended without any choice")]


@SHAPES
def test_a_repeated_finish_reason_changes_nothing(shape: str) -> None:
    items = [
        chunk(choice([frag(0, id="a", name="f", args="{}")])),
        chunk(choice(finish="tool_calls")),
        chunk(choice(finish="length")),
    ]
    machine, events = run(shaped(items, shape))
    assert machine.get("a").status is Status.RUNNING  # type: ignore[union-attr]
    assert events[-1] == End(ok=True, reason="tool_calls")


@SHAPES
def test_empty_argument_text_is_an_empty_object(shape: str) -> None:
    machine, events = run(shaped(sse_items("no_arguments"), shape))
    assert [(c.name, c.args_text, c.args) for c in machine.list()] == [
        ("get_time", "{}", {}),
        ("list_files", "{}", {}),
    ]
    assert Delta(id="call_Na1EmptyArgs00001", argsTextDelta="{}") in events


# -- eager mode ------------------------------------------------------------------------


@SHAPES
def test_eager_mode_readies_a_call_when_the_next_one_starts(shape: str) -> None:
    adapter = OpenAIChatAdapter()
    assert adapter.eager
    items = shaped(
        [
            chunk(choice([frag(0, id="a", name="f", args='{"x":1}')])),
            chunk(choice([frag(1, id="b", name="g", args="{")])),
            chunk(choice([frag(1, args="}")])),
            chunk(choice(finish="tool_calls")),
        ],
        shape,
    )
    assert adapter.feed(items[0])[-1] == Delta(id="a", argsTextDelta='{"x":1}')
    assert adapter.feed(items[1]) == [
        Ready(id="a"),
        Start(id="b", name="g"),
        Delta(id="b", argsTextDelta="{"),
    ]
    assert adapter.feed(items[2]) == [Delta(id="b", argsTextDelta="}")]
    assert adapter.feed(items[3]) == [Ready(id="b")]
    strict = OpenAIChatAdapter(eager=False)
    assert not strict.eager
    assert Ready(id="a") not in strict.feed(items[1])


@SHAPES
def test_eager_mode_fails_a_call_whose_text_arrives_late(shape: str) -> None:
    items = [
        chunk(choice([frag(0, id="a", name="f", args='{"x":1}')])),
        chunk(choice([frag(1, id="b", name="g", args="{}")])),
        chunk(choice([frag(0, args=" ")])),
        chunk(choice([frag(1, id="c", name="g", args="{}")])),
        chunk(choice(finish="tool_calls")),
    ]
    machine, events = run(shaped(items, shape))
    assert events.index(Ready(id="a")) < events.index(Start(id="b", name="g"))
    first, second, third = machine.list()
    assert first.status is Status.ERROR
    assert first.args == {"x": 1}  # the tool was started with this, then " " arrived
    assert first.error == OpenAILateArguments(
        api="chat.completions", fragment=" ", message=first.error.message
    )
    assert "'a'" in first.error.message
    assert "interleaves" in first.error.message
    # The choice interleaves: b is no longer made ready when c starts, only at the end.
    assert events.index(Ready(id="b")) > events.index(Start(id="c", name="g"))
    assert (second.args, third.args) == ({}, {})


@SHAPES
@pytest.mark.parametrize("eager", [True, False])
def test_interleaving_servers_are_safe(shape: str, eager: bool) -> None:
    # '{"loc' is not a complete value when the second call starts: not made ready then;
    # its text arrives later, and both calls become ready at the finish_reason.
    machine, events = run(shaped(sse_items("interleaved"), shape), eager=eager)
    assert [c.args for c in machine.list()] == [{"location": "Kyiv"}, {"tz": "Europe/Kyiv"}]
    assert not [e for e in events if isinstance(e, Error)]
    assert isinstance(events[-3], Ready)
    assert isinstance(events[-2], Ready)


# -- other items -----------------------------------------------------------------------


@SHAPES
def test_chunks_without_choices_are_ignored(shape: str) -> None:
    usage = chunk() | {"usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}
    assert OpenAIChatAdapter().feed(shaped([usage], shape)[0]) == []


def test_stream_helper_events_are_unwrapped_or_ignored() -> None:
    adapter = OpenAIChatAdapter()
    inner = chunk(choice([frag(0, id="a", name="f", args="{}")]))
    assert adapter.feed({"type": "chunk", "chunk": inner, "snapshot": {}}) == [
        Start(id="a", name="f"),
        Delta(id="a", argsTextDelta="{}"),
    ]
    assert adapter.feed({"type": "content.delta", "delta": "hi", "snapshot": "hi"}) == []
    assert adapter.feed({"type": "chunk"}) == []


def test_an_error_object_in_the_stream_fails_pending_calls() -> None:
    adapter = OpenAIChatAdapter()
    adapter.feed(chunk(choice([frag(0, id="a", name="f", args="{")])))
    events = adapter.feed({"error": {"message": "overloaded", "code": "server_error"}})
    assert len(events) == 1
    assert isinstance(events[0], Error)
    assert events[0].error.reason == "error: server_error"
    assert adapter.end() == [
        End(ok=False, reason="error: overloaded,no finish_reason for choice 0")
    ]


@pytest.mark.parametrize("junk", [None, "data: {}", b"{}", 3, 1.5, [], ()])
def test_feed_raises_type_error_for_what_is_not_an_item(junk: Any) -> None:
    with pytest.raises(TypeError, match="expected an OpenAI stream item"):
        OpenAIChatAdapter().feed(junk)


@pytest.mark.parametrize(
    "item",
    [
        {},
        {"choices": "nope"},
        {"choices": [None, 3, "x", {"delta": None}, {"delta": {"tool_calls": "x"}}]},
        {"choices": [{"index": "0", "delta": {"tool_calls": [None, 3, "x", {"function": 3}]}}]},
        {
            "choices": [
                {"delta": {"tool_calls": [{"index": True, "id": 5, "function": {"name": 7}}]}}
            ]
        },
    ],
)
def test_malformed_items_never_raise(item: Any) -> None:
    adapter = OpenAIChatAdapter()
    events = adapter.feed(item)
    assert all(isinstance(e, (Start, Delta, Ready, Error, End)) for e in events)
    assert adapter.end()[-1].ok is False


@SHAPES
def test_non_string_arguments_fail_only_that_call(shape: str) -> None:
    items = [
        chunk(
            choice([frag(0, id="a", name="f", args={"x": 1}), frag(1, id="b", name="g", args="{}")])
        ),
        chunk(choice([frag(0, args="more")])),
        chunk(choice(finish="tool_calls")),
    ]
    if shape == "typed":
        # The SDK's lenient constructor keeps what the wire sent, even a wrong type.
        assert typed(items[0]).choices[0].delta.tool_calls[0].function.arguments == {"x": 1}  # type: ignore[index,union-attr]
    machine, _ = run(shaped(items, shape))
    a, b = machine.list()
    assert a.status is Status.ERROR
    assert a.error == OpenAIMalformedToolCall(
        api="chat.completions", field="function.arguments", message=a.error.message
    )
    assert "dict" in a.error.message
    assert b.args == {}


@SHAPES
def test_a_call_whose_name_never_arrives_fails(shape: str) -> None:
    items = [chunk(choice([frag(0, id="a", args='{"x":1}')])), chunk(choice(finish="tool_calls"))]
    machine, events = run(shaped(items, shape))
    assert events[0] == Start(id="a", name="")
    (call,) = machine.list()
    assert call.status is Status.ERROR
    assert call.args_text == '{"x":1}'
    assert isinstance(call.error, OpenAIMalformedToolCall)
    assert call.error.field == "function.name"


def test_items_after_end_are_ignored_and_end_is_idempotent() -> None:
    adapter = OpenAIChatAdapter()
    assert adapter.end() == [End(ok=False, reason="stream ended without any choice")]
    assert adapter.feed(chunk(choice([frag(0, id="a", name="f", args="{}")]))) == []
    assert adapter.end() == []


# -- through adapt() into the tracker ---------------------------------------------------


@pytest.mark.anyio
async def test_adapt_runs_tools_as_calls_become_ready(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):

        async def source() -> AsyncIterator[dict[str, Any]]:
            for item in sse_items("parallel_calls"):
                yield item

        seen = []
        async with ToolCallTracker() as tracker, anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, adapt(source(), OpenAIChatAdapter()))
            async for call in tracker.ready_calls():
                seen.append(call.args["location"])
                tracker.apply({"type": "result", "id": call.id, "result": "sunny"})
        assert seen == ["Paris", "Tokyo", "New York"]
        assert [c.status for c in tracker.list()] == [Status.DONE] * 3


# -- property: re-chunking changes nothing ---------------------------------------------


def plan_of(name: str) -> list[dict[str, Any]]:
    """Each call of a transcript: its choice, first-fragment fields and whole text."""
    calls: dict[tuple[int, int], dict[str, Any]] = {}
    for item in sse_items(name):
        for ch in item["choices"]:
            for f in ch["delta"].get("tool_calls") or []:
                key = (ch["index"], f["index"])
                call = calls.setdefault(key, {"choice": ch["index"], "first": f, "text": ""})
                call["text"] += f["function"].get("arguments") or ""
    return list(calls.values())


@st.composite
def rechunked(draw: st.DrawFn, name: str) -> list[dict[str, Any]]:
    """The transcript's calls, their text cut anew, fragments regrouped into chunks."""
    fragments: list[tuple[int, dict[str, Any]]] = []
    for call in plan_of(name):
        text = call["text"]
        cuts = draw(st.lists(st.integers(0, len(text)), max_size=len(text) // 2 + 1))
        points = sorted(set(cuts) | {0, len(text)})
        pieces = [text[a:b] for a, b in itertools.pairwise(points)] or [""]
        first = dict(call["first"], function=dict(call["first"]["function"], arguments=pieces[0]))
        fragments.append((call["choice"], first))
        for piece in pieces[1:]:
            fragments.append(
                (call["choice"], {"index": first["index"], "function": {"arguments": piece}})
            )
    chunks = []
    position = 0
    while position < len(fragments):
        size = draw(st.integers(1, 4))
        group: dict[int, list[dict[str, Any]]] = {}
        for choice_index, f in fragments[position : position + size]:
            group.setdefault(choice_index, []).append(f)
        position += size
        chunks.append(chunk(*(choice(fs, index=c) for c, fs in group.items())))
    finish = sorted({c["choice"] for c in plan_of(name)})
    chunks.append(chunk(*(choice(finish="tool_calls", index=c) for c in finish)))
    return chunks


PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(
    "name", ["one_call", "parallel_calls", "text_and_calls", "n2_choices", "missing_ids"]
)
@PROPERTY
@given(data=st.data())
def test_rechunking_a_transcript_gives_the_same_calls(name: str, data: st.DataObject) -> None:
    reference, _ = run(sse_items(name))
    chunks = data.draw(rechunked(name))
    shape = data.draw(st.sampled_from(["dict", "typed"]))
    machine, _ = run(shaped(chunks, shape))
    assert summary(machine) == summary(reference)
    # ... and the official accumulator agrees on the re-chunked stream too.
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    for item in chunks:
        state.handle_chunk(typed(item))
    expected = expected_calls(final_of(state.get_final_completion))
    assert {c.id: (c.name, c.args_text) for c in machine.list()} == {
        k: (name_, text or "{}") for k, (_, name_, text) in expected.items()
    }


# -- quirks of real OpenAI-compatible servers ------------------------------------------------


@SHAPES
def test_a_new_id_on_every_fragment_at_the_same_index_is_one_call(shape: str) -> None:
    # OCI behind a LiteLLM proxy: a fresh id on every fragment, index 0, name "".
    items = [
        chunk(choice([frag(0, "chatcmpl-tool-first", "get_weather", "")])),
        chunk(choice([frag(0, "call_b49e", "", '{"city": "')])),
        chunk(choice([frag(0, "call_ed82", "", 'Paris"}')])),
        chunk(choice(finish="stop")),
    ]
    machine, _ = run(shaped(items, shape))
    assert summary(machine) == [
        ("chatcmpl-tool-first", "get_weather", '{"city": "Paris"}', "running")
    ]
    assert machine.end is not None
    assert machine.end.ok


@SHAPES
def test_a_new_id_with_a_name_at_the_same_index_is_still_a_new_call(shape: str) -> None:
    items = [
        chunk(choice([frag(0, "a", "f", '{"x":1}')])),
        chunk(choice([frag(0, "b", "f", '{"x":2}')])),
        chunk(choice(finish="tool_calls")),
    ]
    machine, _ = run(shaped(items, shape))
    assert summary(machine) == [("a", "f", '{"x":1}', "running"), ("b", "f", '{"x":2}', "running")]


def test_the_same_name_after_a_complete_value_without_id_or_index_is_a_new_call() -> None:
    # Two parallel calls to one tool from a server that sends no id and no index (Gemini's
    # OpenAI-compatible endpoint: index null, id "").
    items = [
        chunk(choice([{"index": None, "id": "", "function": {"name": "w", "arguments": ""}}])),
        chunk(choice([{"index": None, "id": "", "function": {"arguments": '{"city":'}}])),
        chunk(choice([{"index": None, "id": "", "function": {"arguments": '"Paris"}'}}])),
        chunk(choice([{"index": None, "id": "", "function": {"name": "w", "arguments": ""}}])),
        chunk(choice([{"index": None, "id": "", "function": {"arguments": '{"city":"Rome"}'}}])),
        chunk(choice(finish="tool_calls")),
    ]
    machine, _ = run(items)
    assert summary(machine) == [
        ("call_0_0", "w", '{"city":"Paris"}', "running"),
        ("call_0_1", "w", '{"city":"Rome"}', "running"),
    ]


def test_the_same_name_before_the_value_is_complete_is_not_a_new_call() -> None:
    items = [
        chunk(choice([frag(name="w", args='{"s":"} ]')])),  # brackets inside a string
        chunk(choice([frag(name="w", args='x"}')])),  # repeated name: ignored
        chunk(choice(finish="tool_calls")),
    ]
    machine, _ = run(items)
    assert summary(machine) == [("call_0_0", "w", '{"s":"} ]x"}', "running")]
