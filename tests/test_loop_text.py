"""ToolLoop's text passthrough: ``on_text(step_index, text)`` gets each text delta as its
item arrives (sync or async callback, async or sync stream), without holding back the
tools' head start."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from conftest import DEADLINE
from test_loop import USER, Model, answering, calling, chunk, runner
from toolcall_tracker._registry import Provider, get, register
from toolcall_tracker.runner import ToolLoop, ToolRunner
from toolcall_tracker.tools import tool

pytestmark = pytest.mark.anyio


async def test_each_steps_text_reaches_on_text_while_it_streams(anyio_backend: str) -> None:
    got: list[tuple[int, str]] = []
    pulled_with: list[int] = []  # how many texts had arrived when the stream was asked again

    class Watched(Model):
        async def _stream(self, items: list[Any]) -> AsyncIterator[Any]:
            for item in items:
                pulled_with.append(len(got))
                yield item

    stream = [
        chunk({"content": "Let "}),
        chunk({"content": "me check."}),
        *calling(("c1", "get_weather", {"city": "Oslo"}))[1:],
    ]
    model = Watched(
        stream, [chunk({"content": "Sun"}), chunk({"content": "ny."}), *answering("")[1:]]
    )
    loop = ToolLoop(model, "openai-chat", runner(), on_text=lambda i, t: got.append((i, t)))
    with anyio.fail_after(DEADLINE):
        state = await loop.run(USER)
    assert got == [(0, "Let "), (0, "me check."), (1, "Sun"), (1, "ny.")]
    assert pulled_with[:3] == [0, 1, 2]  # each text out before the next item is read
    assert state.stopped == "no_tool_calls"
    assert state.messages[1]["content"] is None  # the text is not fed back (documented)


async def test_an_async_on_text_feeding_a_bounded_stream(anyio_backend: str) -> None:
    send, receive = anyio.create_memory_object_stream[tuple[int, str]](1)
    seen: list[tuple[int, str]] = []

    async def show() -> None:
        async with receive:
            async for piece in receive:
                seen.append(piece)

    model = Model(calling(("c1", "get_weather", {"city": "Oslo"})), answering("Sunny."))
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(show)
            async with send:
                await ToolLoop(
                    model, "openai-chat", runner(), on_text=lambda i, t: send.send((i, t))
                ).run(USER)
    assert seen == [(0, "Let me check."), (1, "Sunny.")]


async def test_a_synchronous_stream_passes_its_text(anyio_backend: str) -> None:
    got: list[tuple[int, str]] = []
    streams = [answering("Hello.")]
    loop = ToolLoop(
        lambda m: streams.pop(0), "openai-chat", runner(), on_text=lambda *a: got.append(a)
    )
    with anyio.fail_after(DEADLINE):
        state = await loop.run(USER)
    assert got == [(0, "Hello.")]
    assert state.stopped == "no_tool_calls"


async def test_a_raising_on_text_ends_the_run_with_its_error(anyio_backend: str) -> None:
    def broken(index: int, text: str) -> None:
        raise RuntimeError("display gone")

    model = Model(answering("Hello."))
    with anyio.fail_after(DEADLINE), pytest.raises(RuntimeError, match="display gone"):
        await ToolLoop(model, "openai-chat", runner(), on_text=broken).run(USER)


async def test_the_head_start_holds_with_on_text(anyio_backend: str) -> None:
    started = anyio.Event()

    async def lookup(city: str) -> str:
        """Look up."""
        started.set()
        return city

    got: list[str] = []
    items = calling(("a", "lookup", {"city": "Oslo"}), ("b", "lookup", {"city": "Rome"}))

    async def step(messages: list[Any]) -> AsyncIterator[Any]:
        for item in items:
            yield item
            calls = item["choices"][0]["delta"].get("tool_calls") or [{}]
            if calls[0].get("id") == "b":
                await started.wait()  # call a is ready: it runs before the stream goes on

    items_done = [False]

    async def once(messages: list[Any]) -> AsyncIterator[Any]:
        if items_done[0]:
            return answering_stream()
        items_done[0] = True
        return step(messages)

    async def answering_stream() -> AsyncIterator[Any]:
        for item in answering("Done."):
            yield item

    loop = ToolLoop(
        once,
        "openai-chat",
        ToolRunner([tool(lookup, eager=True)]),
        on_text=lambda i, t: got.append(t),
    )
    with anyio.fail_after(DEADLINE):
        state = await loop.run(USER)
    assert got == ["Let me check.", "Done."]
    assert state.steps == 2
    results = [m for m in state.messages if m.get("role") == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in results] == [("a", "Oslo"), ("b", "Rome")]


def test_on_text_for_a_format_without_text_names_the_fix() -> None:
    chat = get("openai-chat")
    remove = register(
        Provider(
            format="toy-no-text",
            title="toy",
            one="a toy item",
            recognise=lambda item: False,
            adapter=chat.adapter,
            messages=chat.messages,
        )
    )
    try:
        ToolLoop(Model(), "toy-no-text", runner())  # fine without on_text
        with pytest.raises(ValueError, match="has no text"):
            ToolLoop(Model(), "toy-no-text", runner(), on_text=print)
    finally:
        remove()
