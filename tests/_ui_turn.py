"""A server that streams a journaled turn as an AI SDK UI message stream (the pattern of
``examples/chat_app``: ``start``, an ``AISDKListener``'s parts, then the approval requests
of ``control.pending`` before ``finish``), the backends the follow tests share (an SQLite
file, or a test's keys on the Redis server), and the helpers they compare with.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolcall_tracker import RunControl, ToolCallTracker, ToolRunner, tool
from toolcall_tracker.adapters.ai_sdk import AISDKListener, to_sse
from toolcall_tracker.durable import (
    DurableTurn,
    FollowableJournal,
    Journal,
    RedisJournal,
    RedisOutcomeStore,
    SQLiteJournal,
    SQLiteOutcomeStore,
)
from toolcall_tracker.runner import OutcomeStore

SECRET = b"the ui follow tests secret, not for production"
# Argument text is journaled exactly: a lone surrogate and a terminal escape in it come back
# the same. (A lone surrogate in a *result* is journaled as U+FFFD, the output rule.)
ODD = "d\ud800t\x1b[2J"


class Shared:
    """What the servers share: an SQLite file, or the test's keys on the Redis server. Each
    call opens a journal or store of its own, as another server would."""

    def __init__(self, tmp_path: Path, redis: tuple[str, str] | None) -> None:
        self.db = tmp_path / "turns.db"
        self.redis = redis
        # on the command line: the location, and options after TURN
        self.location = f"sqlite:///{self.db}" if redis is None else redis[0]
        self.options = [] if redis is None else ["--prefix", redis[1]]

    @contextmanager
    def journal(self) -> Iterator[FollowableJournal]:
        if self.redis is None:
            with SQLiteJournal(self.db) as journal:
                yield journal
        else:
            with RedisJournal(self.redis[0], prefix=self.redis[1]) as redis_journal:
                yield redis_journal

    @contextmanager
    def store(self) -> Iterator[OutcomeStore]:
        if self.redis is None:
            with SQLiteOutcomeStore(self.db) as store:
                yield store
        else:
            with RedisOutcomeStore(self.redis[0], prefix=self.redis[1]) as redis_store:
                yield redis_store


async def cut_turn(servers: Shared, turn_id: str) -> None:
    """A turn whose server died after its first call started (it never ends)."""
    with servers.journal() as journal, servers.store() as store:
        tracker = ToolCallTracker()
        async with DurableTurn(journal, turn_id, tracker, store=store):
            tracker.write_start("c1", "lookup")


def shared(request: pytest.FixtureRequest, tmp_path: Path) -> Shared:
    """The body of a fixture parametrized ``["sqlite", "redis"]``."""
    if request.param == "sqlite":
        return Shared(tmp_path, None)
    url = request.getfixturevalue("redis_url")
    return Shared(tmp_path, (url, request.getfixturevalue("redis_prefix")))


def make_runner(ran: list[str]) -> ToolRunner:
    """An eager lookup, a failing tool and a tool that needs approval (deferred)."""

    async def lookup(q: str) -> dict[str, Any]:
        ran.append(f"lookup {q}")
        return {"chars": len(q), "score": float("nan")}  # NaN: null on both sides

    async def broken(q: str) -> str:
        ran.append("broken")
        raise RuntimeError("broken tool")

    async def delete_file(path: str) -> str:
        ran.append(f"delete {path}")
        return f"deleted {path}"

    return ToolRunner(
        [
            tool(lookup, eager=True),
            tool(broken, eager=True),
            tool(delete_file, eager=True, needs_approval=True),
        ],
        approval_secret=SECRET,
    )


def turn_events() -> list[dict[str, Any]]:
    """The model's turn: three calls, their arguments in small fragments."""
    events: list[dict[str, Any]] = []
    for call_id, name, args in (
        ("c1", "lookup", {"q": ODD}),
        ("c2", "broken", {"q": "x"}),
        ("c3", "delete_file", {"path": "/tmp/report.txt"}),
    ):
        text = json.dumps(args)
        events.append({"type": "start", "id": call_id, "name": name})
        events += [
            {"type": "delta", "id": call_id, "argsTextDelta": text[i : i + 4]}
            for i in range(0, len(text), 4)
        ]
        events.append({"type": "ready", "id": call_id})
    events.append({"type": "end", "ok": True, "reason": "tool_calls"})
    return events


async def serve_turn(
    journal: Journal,
    store: OutcomeStore,
    turn_id: str,
    runner: ToolRunner,
    model: Callable[[ToolCallTracker], Any],
    *,
    tracker: ToolCallTracker | None = None,
) -> list[dict[str, Any]]:
    """The original server: the parts it writes while ``model(tracker)`` streams the turn
    (``tracker``: the turn's, new and empty; by default ``ToolCallTracker()``)."""
    parts: list[dict[str, Any]] = [{"type": "start"}]
    finish: list[dict[str, Any]] = []

    def emit(part: dict[str, Any]) -> None:
        (finish if part["type"] == "finish" else parts).append(part)

    tracker = ToolCallTracker() if tracker is None else tracker
    listener = AISDKListener(tracker, on_part=emit)
    tracker.subscribe(listener, fragments=True)
    control = RunControl(defer_approvals=True)
    turn = DurableTurn(journal, turn_id, tracker, store=store)
    async with turn, anyio.create_task_group() as tg:
        tg.start_soon(model, tracker)
        await turn.run(runner, control=control)
    pending = control.pending
    if pending is not None:
        for call in pending.calls:
            listener.approval_request(call.call_id, f"{pending.nonce}:{call.call_id}")
    return parts + finish


def wire(parts: list[dict[str, Any]]) -> list[str]:
    """What the client reads of ``parts``: their SSE frames (the output rule applied: NaN as
    ``null``, lone surrogates as U+FFFD), consecutive ``tool-input-delta`` parts of one
    call joined (as the journal stores them)."""
    return [to_sse(part) for part in joined(parts)]


def joined(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``parts`` with consecutive ``tool-input-delta`` parts of one call joined."""
    out: list[dict[str, Any]] = []
    for part in parts:
        last = out[-1] if out else None
        if (
            part["type"] == "tool-input-delta"
            and last is not None
            and last["type"] == "tool-input-delta"
            and last["toolCallId"] == part["toolCallId"]
        ):
            out[-1] = {**last, "inputTextDelta": last["inputTextDelta"] + part["inputTextDelta"]}
        else:
            out.append(part)
    return out
