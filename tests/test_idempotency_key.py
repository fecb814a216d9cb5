"""``ToolContext.idempotency_key`` and ``attempt``: one stable key per call of a turn, the
same on every path that may run the call (a durable turn's live run, a resume of its
signed state, a restore), different for any other call, safe to send to a third party."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import DEADLINE
from toolcall_tracker import RunControl, ToolCallTracker, ToolRunner, tool
from toolcall_tracker._keys import call_key, idempotency_key
from toolcall_tracker.durable import (
    DurableTurn,
    InMemoryJournal,
    SQLiteJournal,
    SQLiteOutcomeStore,
    resume_turn,
)
from toolcall_tracker.runner import InMemoryOutcomeStore
from toolcall_tracker.tools import ToolContext

pytestmark = pytest.mark.anyio

SECRET = b"an idempotency test secret (32 b)"
ARGS = json.dumps({"amount": 20})


class Payments:
    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []

    def tools(self, **options: Any) -> list[Any]:
        def charge(amount: int, ctx: ToolContext) -> str:
            """Charge the customer."""
            self.seen.append((ctx.idempotency_key, ctx.attempt))
            return "charged"

        return [tool(charge, eager=True, **options)]


def expected(turn: str, call_id: str) -> str:
    return idempotency_key(call_key(turn, call_id, "charge", ARGS))


def write_call(tracker: ToolCallTracker, call_id: str) -> None:
    tracker.write_start(call_id, "charge")
    tracker.write_delta(call_id, ARGS)
    tracker.write_ready(call_id)


async def test_a_durable_turn_gives_each_call_its_own_stable_key(anyio_backend: str) -> None:
    payments = Payments()
    runner = ToolRunner(payments.tools())
    with anyio.fail_after(DEADLINE):
        async with InMemoryJournal() as journal:
            for turn_id in ("turn-1", "turn-2"):
                tracker = ToolCallTracker()
                async with DurableTurn(
                    journal, turn_id, tracker, store=InMemoryOutcomeStore()
                ) as turn:
                    write_call(tracker, "c1")
                    write_call(tracker, "c2")
                    tracker.write_end(True, "tool_calls")
                    await turn.run(runner)
    keys = sorted(key for key, _ in payments.seen)
    want = sorted(expected(t, c) for t in ("turn-1", "turn-2") for c in ("c1", "c2"))
    assert keys == want
    assert len(set(keys)) == 4
    assert all(len(key) == 64 and int(key, 16) >= 0 for key in keys)
    assert all(attempt == 1 for _, attempt in payments.seen)
    assert not any("turn" in key for key in keys)  # reveals no turn id


async def test_the_live_run_and_a_resume_of_its_state_give_one_key(anyio_backend: str) -> None:
    """A call handed out for approval by a durable turn, approved on another server: its
    tool sees the key a live run of the same call would."""
    payments = Payments()
    store = InMemoryOutcomeStore()
    runner = ToolRunner(
        payments.tools(needs_approval=True), approval_secret=SECRET, outcome_store=store
    )
    with anyio.fail_after(DEADLINE):
        async with InMemoryJournal() as journal:
            tracker = ToolCallTracker()
            control = RunControl(defer_approvals=True)
            async with DurableTurn(journal, "turn-1", tracker, store=store) as turn:
                write_call(tracker, "c1")
                tracker.write_end(True, "tool_calls")
                await turn.run(runner, control=control)
            state = control.pending
            assert state is not None
            await runner.resume(state, [state.approve("c1")])
            # ... and a restore of the turn, approved again: the same key, not run again
            again = RunControl(defer_approvals=True)
            await resume_turn(journal, "turn-1", runner, store=store, control=again)
            assert again.pending is None
    assert payments.seen == [(expected("turn-1", "c1"), 1)]


async def test_a_take_over_of_an_idempotent_tool_is_a_second_attempt(
    anyio_backend: str, tmp_path: Path
) -> None:
    """The first run's process died inside the tool (claimed, its ``start`` journaled, no
    outcome); an hour later its lease has run out and the restore takes the idempotent
    call over: the same key, attempt 2."""
    payments = Payments()
    runner = ToolRunner(payments.tools(idempotent=True))
    db = tmp_path / "turns.db"
    with anyio.fail_after(DEADLINE):
        async with SQLiteJournal(db) as journal:
            with SQLiteOutcomeStore(db, owner="dead") as dead:
                tracker = ToolCallTracker()
                async with DurableTurn(journal, "turn-1", tracker, store=dead) as turn:
                    write_call(tracker, "c1")
                    tracker.write_end(True, "tool_calls")
                    call = tracker.get("c1")
                    assert call is not None
                    assert await turn.guard(runner).claim(call) is None  # then it died
            later = SQLiteOutcomeStore(db, owner="later", clock=lambda: time.time() + 3600)
            with later:
                calls = await resume_turn(journal, "turn-1", runner, store=later)
    assert calls[0].result == "charged"
    assert payments.seen == [(expected("turn-1", "c1"), 2)]
