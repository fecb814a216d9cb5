"""Head start: an eager tool starts while the model is still streaming, on every adapter.

Every claim is proved by ordering, never by timing: the source is a memory object stream
the test drives one item at a time, waiting after each until every task is blocked
(``anyio.wait_all_tasks_blocked``), and a log records, in order, each item the source
yields and each tool that starts.

``FORMATS`` (``tests/_headstart_formats.py``) is a table of per-format stream builders: a
new adapter joins every test here by adding a builder that writes a few sequential calls
in its wire format (plain dicts).

OpenAI Chat gets more: servers that interleave calls, that start the next call before any
text of the previous one, that send argument-less calls, or ``index: 0`` for every call,
and a hypothesis test over random chunkings and interleavings. In all of them no tool
ever runs with arguments other than those the model finally sent, and every complete call
ends ``done`` with its arguments.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionChunk

from _headstart_formats import CALLS, FORMATS, Args, chat_chunk
from conftest import DEADLINE
from toolcall_tracker import (
    Limits,
    Ready,
    Status,
    ToolCall,
    ToolCallTracker,
    tool_call_streaming_state_machine,
)
from toolcall_tracker.adapters import OpenAIChatAdapter, adapt
from toolcall_tracker.runner import ToolRunner
from toolcall_tracker.tools import tool

pytestmark = pytest.mark.anyio

_ROUNDS = 8

# -- driving a stream item by item -------------------------------------------------------


async def drive(
    items: list[Any], adapter: Any, tools: list[Any], log: list[tuple[str, Any]]
) -> list[ToolCall]:
    """Stream ``items`` through ``adapter`` into a tracker with a runner of eager ``tools``.

    The producer sends one item at a time and waits until every task is blocked before the
    next, so whatever an item makes ready has started its tool by then. ``log`` gets
    ``("yielded", i)`` as the source hands out item ``i``.
    """
    send, receive = anyio.create_memory_object_stream[tuple[int, Any]](0)

    async def source() -> AsyncIterator[Any]:
        async with receive:
            async for position, item in receive:
                log.append(("yielded", position))
                yield item

    async def produce() -> None:
        async with send:
            for position, item in enumerate(items):
                await send.send((position, item))
                # A few scheduling rounds first, only for speed: on asyncio,
                # wait_all_tasks_blocked polls every 0.1 s while a task is runnable.
                for _ in range(_ROUNDS):
                    await anyio.lowlevel.checkpoint()
                await anyio.wait_all_tasks_blocked()

    runner = ToolRunner(tools, eager=True)
    async with ToolCallTracker() as tracker, anyio.create_task_group() as tg:
        tg.start_soon(produce)
        tg.start_soon(tracker.consume, adapt(source(), adapter))
        return await runner.run(tracker)


# -- every adapter: a head start ------------------------------------------------------------


@pytest.mark.parametrize("fmt", sorted(FORMATS))
async def test_the_first_tool_starts_before_the_last_call_streams(
    anyio_backend: str, fmt: str
) -> None:
    with anyio.fail_after(DEADLINE):
        log: list[tuple[str, Any]] = []

        async def lookup(key: str, note: str) -> str:
            log.append(("started", key))
            return f"{key}: {len(note)}"

        built = FORMATS[fmt].build(CALLS)
        calls = await drive(built.items, FORMATS[fmt].adapter(), [lookup], log)

        last = len(CALLS) - 1
        last_args = min(i for i, carried in enumerate(built.carries) if last in carried)
        assert log.index(("started", "first")) < log.index(("yielded", last_args)), log
        # ... and every call still ends done, with its own arguments.
        assert [(c.name, c.args, c.status) for c in calls] == [
            (name, args, Status.DONE) for _, name, args in CALLS
        ]
        assert [c.result for c in calls] == [f"{a['key']}: {len(a['note'])}" for *_, a in CALLS]


# -- OpenAI Chat: servers that make early readiness unsafe -----------------------------------


def recording_tools(
    ran: list[tuple[str, Args]], log: list[tuple[str, Any]] | None = None
) -> list[Any]:
    """Eager tools with defaults for every parameter, recording the arguments they got in
    ``ran`` (and ``("started", (name, args))`` in ``log``). ``None`` defaults are left
    out, so ``{}`` and a default are told apart."""

    def record(name: str, **kwargs: Any) -> None:
        got = {k: v for k, v in kwargs.items() if v is not None}
        ran.append((name, got))
        if log is not None:
            log.append(("started", (name, got)))

    async def weather(city: str | None = None, days: int | None = None) -> str:
        record("weather", city=city, days=days)
        return "sunny"

    async def clock(tz: str | None = None) -> str:
        record("clock", tz=tz)
        return "noon"

    async def ping() -> str:
        record("ping")
        return "pong"

    return [tool(weather, eager=True), tool(clock, eager=True), tool(ping, eager=True)]


def frag(
    index: int | None, call_id: str | None = None, name: str | None = None, args: str = ""
) -> Args:
    out: Args = {} if index is None else {"index": index}
    if call_id is not None:
        out |= {"id": call_id, "type": "function"}
    function: Args = {"arguments": args}
    if name is not None:
        function["name"] = name
    return out | {"function": function}


def one(*fragments: Args) -> Args:
    return chat_chunk(list(fragments))


QUIRKS: dict[str, tuple[list[Args], list[tuple[str, Args]]]] = {
    # Each: the chunks, and the calls the model finally sent (name, arguments).
    "interleaved": (
        [
            one(frag(0, "a", "weather", '{"ci')),
            one(frag(1, "b", "clock", '{"tz"')),
            one(frag(0, args='ty":"Kyiv"}')),
            one(frag(2, "c", "weather", '{"city":"Oslo"}')),
            one(frag(1, args=':"UTC"}')),
            one(frag(3, "d", "ping", "{}")),
            chat_chunk(finish="tool_calls"),
        ],
        [
            ("weather", {"city": "Kyiv"}),
            ("clock", {"tz": "UTC"}),
            ("weather", {"city": "Oslo"}),
            ("ping", {}),
        ],
    ),
    "next call before any text": (
        [
            one(frag(0, "a", "weather")),
            one(frag(1, "b", "clock")),
            one(frag(0, args='{"city":"Lima"}')),
            one(frag(1, args='{"tz":"America/Lima"}')),
            one(frag(2, "c", "weather", '{"city":')),
            one(frag(2, args='"Quito","days":2}')),
            chat_chunk(finish="tool_calls"),
        ],
        [
            ("weather", {"city": "Lima"}),
            ("clock", {"tz": "America/Lima"}),
            ("weather", {"city": "Quito", "days": 2}),
        ],
    ),
    "argument-less calls": (
        [
            one(frag(0, "a", "weather")),
            one(frag(1, "b", "ping")),
            one(frag(2, "c", "clock", "{}")),
            one(frag(3, "d", "weather", '{"city":"Rome"}')),
            one(frag(4, "e", "weather", "")),
            chat_chunk(finish="tool_calls"),
        ],
        [
            ("weather", {}),
            ("ping", {}),
            ("clock", {}),
            ("weather", {"city": "Rome"}),
            ("weather", {}),
        ],
    ),
    "index 0 for every call": (
        [
            one(frag(0, "a", "weather", '{"city"')),
            one(frag(0, args=':"Nice"}')),
            one(frag(0, "b", "weather")),
            one(frag(0, args='{"city":"Bern","days":')),
            one(frag(0, args="3}")),
            one(frag(0, "c", "ping")),
            one(frag(0, "d", "clock", '{"tz":"CET"}')),
            chat_chunk(finish="tool_calls"),
        ],
        [
            ("weather", {"city": "Nice"}),
            ("weather", {"city": "Bern", "days": 3}),
            ("ping", {}),
            ("clock", {"tz": "CET"}),
        ],
    ),
}


def assert_ran_as_sent(
    calls: list[ToolCall], ran: list[tuple[str, Args]], sent: list[tuple[str, Args]]
) -> None:
    """No tool ran with other arguments than those the model finally sent, each call ran
    once, and every call ended done with its arguments."""
    key = [(name, json.dumps(args, sort_keys=True)) for name, args in sent]
    assert Counter((n, json.dumps(a, sort_keys=True)) for n, a in ran) == Counter(key)
    assert Counter((c.name, json.dumps(c.args, sort_keys=True)) for c in calls) == Counter(key)
    assert all(c.status is Status.DONE for c in calls), calls


@pytest.mark.parametrize("quirk", sorted(QUIRKS))
async def test_chat_tools_run_only_with_the_final_arguments(anyio_backend: str, quirk: str) -> None:
    with anyio.fail_after(DEADLINE):
        chunks, sent = QUIRKS[quirk]
        ran: list[tuple[str, Args]] = []
        calls = await drive(chunks, OpenAIChatAdapter(), recording_tools(ran), [])
        assert_ran_as_sent(calls, ran, sent)


async def test_chat_readies_a_call_early_only_with_complete_text(anyio_backend: str) -> None:
    """Which tools start before the ``finish_reason``: those of calls the next call followed
    with a complete value; never an argument-less one, and none once the choice turned out
    to interleave."""
    with anyio.fail_after(DEADLINE):
        chunks = [
            one(frag(0, "a", "weather", '{"city":"Oslo"}')),  # 0
            one(frag(1, "b", "ping")),  # 1: a is complete
            one(frag(2, "c", "clock", '{"tz":"UTC"}')),  # 2: b has no text
            one(frag(3, "d", "weather", '{"city":')),  # 3: c is complete
            one(frag(4, "e", "clock", '{"tz":"CET"}')),  # 4: d is not complete
            one(frag(3, args='"Rome"}')),  # 5: d after e started: interleaved
            one(frag(5, "f", "ping", "{}")),  # 6: e waits for the finish_reason
            chat_chunk(finish="tool_calls"),  # 7
        ]
        log: list[tuple[str, Any]] = []
        ran: list[tuple[str, Args]] = []
        calls = await drive(chunks, OpenAIChatAdapter(), recording_tools(ran, log), log)

        def after(started: tuple[str, Args]) -> int:
            """The last item yielded before this tool started."""
            position = log.index(("started", started))
            return max(i for kind, i in log[:position] if kind == "yielded")

        assert after(("weather", {"city": "Oslo"})) == 1
        assert after(("clock", {"tz": "UTC"})) == 3
        for late in [("ping", {}), ("weather", {"city": "Rome"}), ("clock", {"tz": "CET"})]:
            assert after(late) == 7
        assert_ran_as_sent(
            calls,
            ran,
            [
                ("weather", {"city": "Oslo"}),
                ("ping", {}),
                ("clock", {"tz": "UTC"}),
                ("weather", {"city": "Rome"}),
                ("clock", {"tz": "CET"}),
                ("ping", {}),
            ],
        )


def test_chat_never_readies_a_bare_number_early() -> None:
    """``12`` parses, but the model may still be writing ``123``: not a complete value."""
    adapter = OpenAIChatAdapter()
    adapter.feed(one(frag(0, "a", "ping", "12")))
    assert not [e for e in adapter.feed(one(frag(1, "b", "ping", "{}"))) if isinstance(e, Ready)]
    adapter.feed(one(frag(0, args="3")))  # interleaved: everything waits for finish_reason
    assert [e.id for e in adapter.feed(chat_chunk(finish="tool_calls"))] == ["a", "b"]


@pytest.mark.parametrize("feeder", ["feed", "machine"])
def test_chat_keeps_no_text_beyond_the_limit(feeder: str) -> None:
    """Text past ``max_args_chars`` is dropped, not kept for the check: never early."""
    limits = Limits(max_args_chars=8)
    adapter = OpenAIChatAdapter(limits=limits)
    items = [one(frag(0, "a", "ping", '{"k":')), one(frag(0, args='"abc"}'))]
    if feeder == "feed":
        for item in items:
            adapter.feed(item)
        started = adapter.feed(one(frag(1, "b", "ping", "{}")))
        assert not [e for e in started if isinstance(e, Ready)]
    else:
        machine = tool_call_streaming_state_machine(limits=limits)
        for item in [*items, one(frag(1, "b", "ping", "{}")), chat_chunk(finish="stop")]:
            adapter.write(item, machine)
        first, second = machine.list()
        assert first.status is Status.ERROR  # ArgumentsTooLarge, from the machine
        assert second.args == {}


# -- OpenAI Chat: random chunkings and interleavings -----------------------------------------

_ARGS: dict[str, Any] = {
    "weather": st.fixed_dictionaries(
        {}, optional={"city": st.text('abcé"\\{}', max_size=6), "days": st.integers(0, 99)}
    ),
    "clock": st.fixed_dictionaries({}, optional={"tz": st.sampled_from(["UTC", "CET", "a/b"])}),
    "ping": st.just({}),
}
_MODES = ["ids", "index0", "fresh-ids", "no-ids"]


@st.composite
def chat_streams(draw: st.DrawFn) -> tuple[list[Any], list[tuple[str, Args]]]:
    """A Chat stream of 1 to 4 calls as some server might send it, and the calls it means.

    Modes: ``ids`` (OpenAI: id and name on a call's first fragment, then its index),
    ``index0`` (``index: 0`` for every call, distinct ids), ``fresh-ids`` (a new id on
    every fragment, empty name after the first), ``no-ids`` (indexes only). Each call's
    text (``""`` allowed for an argument-less call) is cut at random; the first fragment
    may carry text or none. Calls are interleaved at random except with ``index0`` (where
    nothing could tell whose a fragment is); fragments are grouped into chunks at random,
    the ``finish_reason`` alone or in the last chunk; chunks are dicts or SDK objects."""
    mode = draw(st.sampled_from(_MODES))
    names = draw(st.lists(st.sampled_from(sorted(_ARGS)), min_size=1, max_size=4))
    sent: list[tuple[str, Args]] = []
    queues: list[list[Args]] = []
    for n, name in enumerate(names):
        args = draw(_ARGS[name])
        sent.append((name, args))
        text = json.dumps(args) if args or draw(st.booleans()) else ""
        cuts = sorted(draw(st.sets(st.integers(0, len(text)), max_size=4)) | {0, len(text)})
        texts = [text[a:b] for a, b in itertools.pairwise(cuts)] or [""]
        if draw(st.booleans()):
            texts.insert(0, "")  # the first fragment carries no text
        index = 0 if mode == "index0" else n
        call_id = None if mode == "no-ids" else f"call_{n}"
        queue = [frag(index, call_id, name, texts[0])]
        for k, piece in enumerate(texts[1:]):
            fresh = f"call_{n}_{k}" if mode == "fresh-ids" else None
            queue.append(frag(index, fresh, "" if fresh else None, piece))
        queues.append(queue)
    fragments: list[Args] = []
    if mode == "index0":
        fragments = [f for queue in queues for f in queue]
    else:
        started = 0
        while any(queues):
            # Any call already started with fragments left, or the next call to start.
            open_ = [n for n in range(started) if queues[n]]
            if started < len(queues):
                open_.append(started)
            n = draw(st.sampled_from(open_))
            started = max(started, n + 1)
            fragments.append(queues[n].pop(0))
    chunks: list[Args] = []
    while fragments:
        size = draw(st.integers(1, 3))
        chunks.append(chat_chunk(fragments[:size]))
        fragments = fragments[size:]
    if draw(st.booleans()):
        chunks[-1]["choices"][0]["finish_reason"] = "tool_calls"
    else:
        chunks.append(chat_chunk(finish="tool_calls"))
    if draw(st.booleans()):
        return [ChatCompletionChunk.construct(**c) for c in chunks], sent
    return chunks, sent


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream=chat_streams())
def test_chat_tools_run_only_with_the_final_arguments_whatever_the_chunking(
    backend: str, stream: tuple[list[Any], list[tuple[str, Args]]]
) -> None:
    chunks, sent = stream

    async def main() -> None:
        with anyio.fail_after(DEADLINE):
            ran: list[tuple[str, Args]] = []
            calls = await drive(chunks, OpenAIChatAdapter(), recording_tools(ran), [])
            assert_ran_as_sent(calls, ran, sent)

    anyio.run(main, backend=backend)
