"""One truth per turn across processes: the issue's regression cases, on SQLite and Redis.

1. A restore after a deferred approval hands out the same decision (the journaled state:
   same nonce, expiry and turn), and an approval given to either state runs the call once.
2. A writer that lost its turn (frozen past its lease while a restore finished the turn)
   is fenced: it starts no tool, appends nothing, and its ``run`` raises ``TurnSuperseded``;
   the restored turn's calls and messages are final.
3. Two ``DurableTurn`` entered at once with one turn id: the second gets ``TurnExists``.

Each process is played by its own journal and store objects (as separate processes would
open them); ``tests/test_durable_fence_kill.py`` does case 2 with real processes and SIGSTOP.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta, timezone
from typing import Any

import anyio
import pytest

from conftest import DEADLINE
from toolcall_tracker import RunControl, Status, ToolCallTracker, ToolRunner, tool
from toolcall_tracker.durable import DurableTurn, TurnExists, TurnSuperseded, resume_turn
from toolcall_tracker.errors import ApprovalRefused
from toolcall_tracker.failures import NotExecuted, OutcomeInDoubt
from toolcall_tracker.feedback import openai_chat_messages
from toolcall_tracker.runner import PendingApprovals

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup

pytestmark = pytest.mark.anyio

SECRET = b"a one-truth test secret (32 bytes)"


class Bank:
    """Tools whose every real run is counted (none of them idempotent)."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.booked: list[str] = []

        def transfer(to: str, amount: int) -> str:
            """Send money (a person approves it first)."""
            self.sent.append(to)
            return f"sent {amount} to {to}"

        def book(title: str) -> str:
            """Book a meeting (gated)."""
            self.booked.append(title)
            return f"booked {title}"

        self.tools = [tool(transfer, eager=True, needs_approval=True), tool(book)]

    def runner(self, store: Any, **options: Any) -> ToolRunner:
        return ToolRunner(self.tools, approval_secret=SECRET, outcome_store=store, **options)


def superseded(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a ``TurnSuperseded``, or a group holding only such errors."""
    if isinstance(exc, BaseExceptionGroup):
        return all(superseded(inner) for inner in exc.exceptions)
    return isinstance(exc, TurnSuperseded)


def start(tracker: ToolCallTracker, call_id: str, name: str, args: dict[str, Any]) -> None:
    tracker.write_start(call_id, name)
    tracker.write_delta(call_id, json.dumps(args))
    tracker.write_ready(call_id)


async def first_request(durable: Any, bank: Bank, turn_id: str, **options: Any) -> PendingApprovals:
    """Request 1: the transfer awaits approval; its signed state goes to the client; then
    the process dies (nothing of it is used again)."""
    journal, store = durable.journal(), durable.store(owner="server-1")
    tracker = ToolCallTracker()
    control = RunControl(defer_approvals=True)
    async with DurableTurn(journal, turn_id, tracker, store=store) as turn:
        start(tracker, "c1", "transfer", {"to": "alice", "amount": 10})
        tracker.write_end(True, "tool_calls")
        await turn.run(bank.runner(store, **options), control=control)
    assert control.pending is not None
    return control.pending


@pytest.mark.parametrize("order", ["client first", "restore first"])
async def test_a_restore_after_a_deferred_approval_hands_out_the_same_decision(
    durable: Any, anyio_backend: str, order: str
) -> None:
    bank = Bank()
    with anyio.fail_after(DEADLINE):
        held = await first_request(durable, bank, "turn-1")
        # Another process restores the turn: the call stays awaiting, under the same state.
        store2 = durable.store(owner="server-2")
        control = RunControl(defer_approvals=True)
        calls = await resume_turn(
            durable.journal(), "turn-1", bank.runner(store2), store=store2, control=control
        )
        assert bank.sent == []
        assert calls[0].status is Status.RUNNING
        again = control.pending
        assert again is not None
        assert (again.nonce, again.expires_at, again.turn_id) == (
            held.nonce,
            held.expires_at,
            held.turn_id,
        )
        assert again.calls == held.calls
        # The client approves the state it holds, and the restored one is approved too.
        states = [held, again] if order == "client first" else [again, held]
        results = []
        for state in states:
            store = durable.store(owner=f"server-{len(results) + 3}")
            resumed = await bank.runner(store).resume(state, [state.approve("c1")])
            results.append(resumed[0].result)
    assert bank.sent == ["alice"]  # once
    assert results == ["sent 10 to alice", "sent 10 to alice"]


async def test_a_restore_of_handed_out_calls_refuses_an_in_process_approver(
    durable: Any, anyio_backend: str
) -> None:
    bank = Bank()
    with anyio.fail_after(DEADLINE):
        await first_request(durable, bank, "turn-1")
        store2 = durable.store(owner="server-2")
        with pytest.raises(ValueError, match="defer_approvals=True"):
            await resume_turn(
                durable.journal(), "turn-1", bank.runner(store2), store=store2, control=RunControl()
            )
    assert bank.sent == []


async def test_an_approval_answered_before_the_restore_is_its_outcome(
    durable: Any, anyio_backend: str
) -> None:
    bank = Bank()
    with anyio.fail_after(DEADLINE):
        held = await first_request(durable, bank, "turn-1")
        store = durable.store(owner="server-3")
        await bank.runner(store).resume(held, [held.approve("c1")])
        store2 = durable.store(owner="server-2")
        control = RunControl(defer_approvals=True)
        calls = await resume_turn(
            durable.journal(), "turn-1", bank.runner(store2), store=store2, control=control
        )
    assert bank.sent == ["alice"]
    assert calls[0].status is Status.DONE
    assert calls[0].result == "sent 10 to alice"
    assert control.pending is None  # nothing is left to decide


async def test_a_restore_after_the_handed_out_state_expired_ends_its_calls_in_doubt(
    durable: Any, anyio_backend: str
) -> None:
    bank = Bank()
    with anyio.fail_after(DEADLINE):
        held = await first_request(durable, bank, "turn-1", approval_ttl=timedelta(milliseconds=1))
        assert held.expires_at <= datetime.now(timezone.utc)  # expired already
        store2 = durable.store(owner="server-2")
        control = RunControl()  # nothing awaits any more: any control will do
        calls = await resume_turn(
            durable.journal(), "turn-1", bank.runner(store2), store=store2, control=control
        )
        with pytest.raises(ApprovalRefused, match="expired"):
            await bank.runner(durable.store(owner="server-3")).resume(held, [held.approve("c1")])
    assert bank.sent == []
    assert isinstance(calls[0].error, OutcomeInDoubt)  # a resume may have run it: unknown
    assert "expired" in calls[0].error.message
    assert control.pending is None


async def test_a_writer_that_lost_its_turn_is_fenced(durable: Any, anyio_backend: str) -> None:
    """The writer streams a gated call and stalls (its stream frozen) before the end; a
    restore elsewhere ends the turn (cut: the call is not executed); then the writer wakes
    and its stream ends ok: it must not run the gated call, nor journal anything."""
    bank = Bank()
    wake = anyio.Event()
    stalled = anyio.Event()
    outcome: list[BaseException | None] = []

    async def writer() -> None:
        journal, store = durable.journal(), durable.store(owner="frozen")
        tracker = ToolCallTracker()

        async def stream() -> None:
            start(tracker, "b1", "book", {"title": "standup"})
            await journal.commit()  # its writer thread wrote b1 (as it soon would)
            stalled.set()
            await wake.wait()  # frozen (a GC pause, a stopped container)
            start(tracker, "b2", "book", {"title": "retro"})
            tracker.write_end(True, "tool_calls")

        try:
            turn = DurableTurn(journal, "turn-1", tracker, store=store)
            async with turn, anyio.create_task_group() as tg:
                tg.start_soon(stream)
                await turn.run(bank.runner(store))
        except BaseException as exc:  # TurnSuperseded, maybe inside the task group's group
            outcome.append(exc)
        else:
            outcome.append(None)

    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer)
            await stalled.wait()
            store2 = durable.store(owner="restorer")
            journal2 = durable.journal()
            restored = await resume_turn(journal2, "turn-1", bank.runner(store2), store=store2)
            wake.set()
        records = await journal2.read("turn-1")
    assert bank.booked == []  # neither b1 (restored: not executed) nor b2 ran
    assert superseded(outcome[0])
    [call] = restored
    assert isinstance(call.error, NotExecuted)
    # Nothing of the old writer after the fence: the journal still restores what the
    # restore finished, and its messages say the call did not run.
    fence = next(i for i, r in enumerate(records) if r.kind == "fence")
    assert all(r.epoch >= 2 for r in records[fence:])
    again = await resume_turn(journal2, "turn-1", bank.runner(store2), store=store2)
    assert openai_chat_messages(again) == openai_chat_messages(restored)


async def test_two_turns_entered_at_once_with_one_id(durable: Any, anyio_backend: str) -> None:
    results: list[str] = []

    async def enter(name: str) -> None:
        journal, store = durable.journal(), durable.store(owner=name)
        try:
            async with DurableTurn(journal, "turn-1", ToolCallTracker(), store=store):
                results.append("entered")
        except TurnExists as exc:
            results.append("refused" if "turn-1" in str(exc) else str(exc))

    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(enter, "a")
            tg.start_soon(enter, "b")
    assert sorted(results) == ["entered", "refused"]
