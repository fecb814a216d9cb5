"""Approvals across a restore: a decision's edited arguments are journaled and the restored
call runs with them; journaled decisions are reapplied under a deferring control too, and
only the undecided calls stay pending.

Every async test runs on asyncio and trio, bounded by ``anyio.fail_after``; every journal
is a real SQLite file in ``tmp_path``.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import anyio
import pytest

from _runner_helpers import call_events, from_list
from conftest import DEADLINE
from toolcall_tracker import RunControl, Status, ToolCallTracker, ToolRunner, tool
from toolcall_tracker.durable import (
    DurableTurn,
    SQLiteJournal,
    SQLiteOutcomeStore,
    restore,
    resume_turn,
)

pytestmark = pytest.mark.anyio


class Transfers:
    """A transfer tool that needs approval, recording what it really ran with."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, int]] = []

        def transfer(to: str, amount: int) -> str:
            self.ran.append((to, amount))
            return f"sent {amount} to {to}"

        self.runner = ToolRunner([tool(transfer, needs_approval=True)])


def calls_of(*ids: str) -> list[dict[str, Any]]:
    return [
        item
        for call_id in ids
        for item in call_events(call_id, "transfer", {"to": "bob", "amount": 5})
    ]


async def crashed_after_decisions(
    journal: SQLiteJournal,
    store: SQLiteOutcomeStore,
    turn_id: str,
    ids: tuple[str, ...],
    decisions: list[dict[str, Any]],
) -> None:
    """The journal of a turn whose process died after journaling ``decisions`` (runner
    records) and before any claim."""
    tracker = ToolCallTracker()
    async with DurableTurn(journal, turn_id, tracker, store=store) as turn:
        for item in [*calls_of(*ids), {"type": "end"}]:
            tracker.apply(item)
        for data in decisions:
            turn.log.append("runner", data)


async def test_edited_arguments_are_journaled_and_a_restore_runs_with_them(
    tmp_path: Path, anyio_backend: str
) -> None:
    db = tmp_path / "j.db"
    first, second = Transfers(), Transfers()
    edited = {"to": "carol\ud800", "amount": 2}  # a lone surrogate: the output rule applies
    control = RunControl()
    with anyio.fail_after(DEADLINE), SQLiteJournal(db) as journal, SQLiteOutcomeStore(db) as store:
        # process 1: a human approves c1 with edited arguments; the tool runs with them
        tracker = ToolCallTracker()
        async with (
            DurableTurn(journal, "turn-1", tracker, store=store) as turn,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(tracker.consume, from_list([*calls_of("c1"), {"type": "end"}]))
            tg.start_soon(functools.partial(turn.run, first.runner, control=control))
            async for request in control.approval_requests():
                control.approve(request.call_id, edited)
        approved = [
            r.data
            for r in await journal.read("turn-1")
            if r.kind == "runner" and r.data["event"] == "approved"
        ]
        assert approved == [
            {
                "id": "c1",
                "from": "awaiting_approval",
                "to": approved[0]["to"],
                "event": "approved",
                "arguments": {"to": "carol\ufffd", "amount": 2},
            }
        ]
        assert (await restore(journal, "turn-1")).edited == {"c1": approved[0]["arguments"]}
        # process 2 (turn-2): the same decision journaled, then the process died before
        # the claim; the restore runs the tool with the edited arguments, not the model's
        await crashed_after_decisions(journal, store, "turn-2", ("c1",), approved)
        calls = await resume_turn(
            journal, "turn-2", second.runner, store=store, control=RunControl()
        )
    assert first.ran == [("carol\ud800", 2)]
    assert second.ran == [("carol\ufffd", 2)]  # never ("bob", 5)
    assert calls[0].result == "sent 2 to carol\ufffd"


@pytest.mark.parametrize("defer", [True, False])
async def test_decided_approvals_are_reapplied_and_only_undecided_ones_stay_pending(
    tmp_path: Path, anyio_backend: str, defer: bool
) -> None:
    db = tmp_path / "j.db"
    tools = Transfers()
    decisions = [
        {
            "id": "a",
            "from": "awaiting_approval",
            "to": "waiting_slot",
            "event": "approved",
            "arguments": {"to": "dan", "amount": 1},
        },
        {"id": "d", "from": "awaiting_approval", "to": "not_executed", "event": "denied"},
    ]
    control = RunControl(defer_approvals=defer)
    asked: list[str] = []
    with anyio.fail_after(DEADLINE), SQLiteJournal(db) as journal, SQLiteOutcomeStore(db) as store:
        await crashed_after_decisions(journal, store, "turn-1", ("a", "d", "u"), decisions)
        async with anyio.create_task_group() as tg:

            async def answer() -> None:  # only the undecided call may be asked about
                async for request in control.approval_requests():
                    asked.append(request.call_id)
                    if not defer:
                        control.deny(request.call_id, "asked again")

            tg.start_soon(answer)
            calls = {
                c.id: c
                for c in await resume_turn(
                    journal, "turn-1", tools.runner, store=store, control=control
                )
            }
    assert tools.ran == [("dan", 1)]
    assert calls["a"].result == "sent 1 to dan"
    assert calls["d"].error is not None
    assert calls["d"].error.kind == "approval_denied"
    assert asked == ["u"]
    if defer:
        assert calls["u"].status is Status.RUNNING
        assert control.pending is not None
        assert [c.call_id for c in control.pending.calls] == ["u"]
    else:
        assert calls["u"].error is not None
        assert calls["u"].error.kind == "approval_denied"


async def test_a_preset_after_the_run_started_is_refused(anyio_backend: str) -> None:
    tools = Transfers()
    control = RunControl()
    tracker = ToolCallTracker()
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(functools.partial(tools.runner.run, tracker, control=control))
            await anyio.wait_all_tasks_blocked()
            with pytest.raises(RuntimeError, match="before the run starts"):
                control.preset("c1", True)
            tracker.write_end(True, None)
