"""The AI SDK UI message stream of a journaled turn, resumed on another server
(``follow_ui_stream`` / ``follow_ui_sse``): the same parts as the original server wrote,
from a follower attached mid-turn or after the turn, with ``Last-Event-ID``.

Every journal is real: an SQLite file, or the Redis server of the ``redis_url`` fixture.
The "second server" is a second journal object on the same store, as another process has.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from _ai_sdk_node import consume, need_node
from _ui_turn import ODD, Shared, cut_turn, make_runner, serve_turn, shared, turn_events, wire
from conftest import DEADLINE
from toolcall_tracker import ToolCallTracker
from toolcall_tracker.adapters.ai_sdk import SSE_DONE, to_sse
from toolcall_tracker.durable import (
    DurableError,
    follow_ui_sse,
    follow_ui_stream,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["sqlite", "redis"])
def servers(request: pytest.FixtureRequest, tmp_path: Path) -> Shared:
    return shared(request, tmp_path)


def paced(events: list[dict[str, Any]], half: anyio.Event, go_on: anyio.Event) -> Any:
    """A model that streams ``events``, pausing after the first few until ``go_on``."""

    async def model(tracker: ToolCallTracker) -> None:
        for index, event in enumerate(events):
            if index == 6:
                half.set()
                await go_on.wait()
            tracker.apply(event)
            await anyio.lowlevel.checkpoint()

    return model


async def all_at_once(tracker: ToolCallTracker) -> None:
    for event in turn_events():
        tracker.apply(event)


@asynccontextmanager
async def served(servers: Shared, turn_id: str) -> AsyncIterator[list[dict[str, Any]]]:
    """A whole turn served (and journaled) by the first server; its parts."""
    ran: list[str] = []
    with servers.journal() as journal, servers.store() as store:
        yield await serve_turn(journal, store, turn_id, make_runner(ran), all_at_once)


async def test_a_follower_attached_mid_turn_writes_the_original_parts(
    anyio_backend: str, servers: Shared
) -> None:
    with anyio.fail_after(DEADLINE):
        half, go_on = anyio.Event(), anyio.Event()
        followed: list[dict[str, Any]] = []
        ran: list[str] = []

        async def second_server() -> None:
            await half.wait()  # the turn is under way
            with servers.journal() as journal:
                async for part in follow_ui_stream(journal, "turn-1", timeout=DEADLINE):
                    followed.append(part)
                    if part["type"] == "tool-input-delta":
                        go_on.set()  # seen live: let the model go on

        with servers.journal() as journal, servers.store() as store:
            async with anyio.create_task_group() as tg:
                tg.start_soon(second_server)
                model = paced(turn_events(), half, go_on)
                original = await serve_turn(journal, store, "turn-1", make_runner(ran), model)

    assert wire(followed) == wire(original)
    assert followed[0] == {"type": "start"}
    assert followed[-1]["type"] == "finish"
    kinds = [(p["type"], p.get("toolCallId")) for p in followed]
    assert ("tool-output-available", "c1") in kinds
    assert ("tool-output-error", "c2") in kinds
    approval = next(p for p in followed if p["type"] == "tool-approval-request")
    assert approval["toolCallId"] == "c3"
    assert approval["approvalId"].endswith(":c3")
    assert sorted(ran) == ["broken", f"lookup {ODD}"]  # the follower ran nothing


async def test_a_follower_after_the_turn_replays_it_and_reconnects_with_last_event_id(
    anyio_backend: str, servers: Shared
) -> None:
    with anyio.fail_after(DEADLINE):
        async with served(servers, "turn-1") as original:
            pass
        with servers.journal() as journal:
            text = "".join([t async for t in follow_ui_sse(journal, "turn-1", message_id="m1")])
            events = text.split("\n\n")
            assert text.endswith(SSE_DONE)
            frames = events[:-2]  # each part's frame; then [DONE] and the empty tail
            parts = [json.loads(frame.split("\ndata: ", 1)[1]) for frame in frames]
            assert parts[0] == {"type": "start", "messageId": "m1"}
            assert wire(parts[1:]) == wire(original[1:])
            assert [frame.split("\n", 1)[0] for frame in frames] == [
                f"id: {n}" for n in range(1, len(frames) + 1)
            ]
            assert frames[3] == f"id: 4\n{to_sse(parts[3])}".rstrip("\n")

            again = "".join([t async for t in follow_ui_sse(journal, "turn-1", last_event_id="3")])
            assert again == "".join(f"{frame}\n\n" for frame in frames[3:]) + SSE_DONE
            past = [t async for t in follow_ui_sse(journal, "turn-1", last_event_id="999")]
            assert past == [SSE_DONE]


async def test_a_last_event_id_the_stream_never_wrote_is_refused(
    anyio_backend: str, servers: Shared
) -> None:
    with anyio.fail_after(DEADLINE):
        async with served(servers, "turn-1"):
            pass
        with servers.journal() as journal:
            for bad in ("abc", "-1", "1.5", "\ud800", "9" * 40):
                with pytest.raises(ValueError, match="Last-Event-ID"):
                    follow_ui_sse(journal, "turn-1", last_event_id=bad)  # before any part


async def test_following_a_turn_that_never_ends_times_out(
    anyio_backend: str, servers: Shared
) -> None:
    with anyio.fail_after(DEADLINE):
        await cut_turn(servers, "turn-1")
        with servers.journal() as journal:
            seen: list[dict[str, Any]] = []

            async def read() -> None:
                async for part in follow_ui_stream(journal, "turn-1", timeout=0.2):
                    seen.append(part)

            with pytest.raises(DurableError, match="did not finish within"):
                await read()
            assert seen == [
                {"type": "start"},
                {"type": "tool-input-start", "toolCallId": "c1", "toolName": "lookup"},
            ]


def test_the_real_ai_sdk_reads_the_resumed_stream_as_the_original(servers: Shared) -> None:
    need_node()

    async def go() -> tuple[str, str]:
        with anyio.fail_after(DEADLINE):
            async with served(servers, "turn-1") as original:
                pass
            with servers.journal() as journal:
                resumed = "".join([t async for t in follow_ui_sse(journal, "turn-1")])
        return "".join(to_sse(part) for part in original) + SSE_DONE, resumed

    original, resumed = anyio.run(go)
    first, second = consume(original), consume(resumed)
    assert first["rejected"] == second["rejected"] == []
    assert first["errors"] == second["errors"] == []
    assert second["parts"] == first["parts"]
    states = [(p.get("toolCallId"), p.get("state")) for p in second["parts"]]
    assert states == [
        ("c1", "output-available"),
        ("c2", "output-error"),
        ("c3", "approval-requested"),
    ]
    assert second["finishReason"] == first["finishReason"] == "tool-calls"
