"""The journal: a turn recorded as it happens (limits first, events in order, claims and
outcomes committed before the step they guard), failing closed, and restored elsewhere.

Every async test runs on asyncio and trio, bounded by ``anyio.fail_after``; every journal
is a real SQLite file in ``tmp_path``, and the tests taking the ``durable`` fixture run on a
real Redis server too (``RedisJournal`` and ``RedisOutcomeStore``).
"""

from __future__ import annotations

import functools
import json
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import anyio
import pytest

from _backends import Durable
from _runner_helpers import call_events, from_list
from conftest import DEADLINE
from toolcall_tracker import (
    Limits,
    NotExecuted,
    OutcomeInDoubt,
    RunControl,
    Status,
    ToolCall,
    ToolCallTracker,
    ToolRunner,
    tool,
)
from toolcall_tracker._keys import call_key
from toolcall_tracker.durable import (
    DurableError,
    DurableTurn,
    Journal,
    SQLiteJournal,
    SQLiteOutcomeStore,
    restore,
    resume_turn,
)
from toolcall_tracker.failures import ClaimFailed, ToolRaised
from toolcall_tracker.feedback import jsonable
from toolcall_tracker.runner import OutcomeStore

pytestmark = pytest.mark.anyio

ODD_ID = "call-\ud800-é"


class Tools:
    """An eager lookup, a gated transfer and a failing tool, counting real runs."""

    def __init__(self) -> None:
        self.ran: list[str] = []

        async def lookup(q: str) -> Any:
            self.ran.append(f"lookup {q}")
            return {"q": q, "score": float("nan")}

        async def transfer(to: str, amount: int) -> str:
            self.ran.append(f"transfer {to} {amount}")
            return f"sent {amount} to {to}"

        async def broken() -> None:
            self.ran.append("broken")
            raise ValueError("no")

        self.runner = ToolRunner(
            [tool(lookup, eager=True), tool(transfer), tool(broken, eager=True)]
        )


def stream(*, end: bool = True) -> list[dict[str, Any]]:
    items = [
        *call_events(ODD_ID, "lookup", {"q": "x\ud800"}),
        *call_events("t1", "transfer", {"to": "bob", "amount": 5}),
        *call_events("b1", "broken", {}),
    ]
    return [*items, {"type": "end"}] if end else items


async def journaled_turn(
    journal: Journal,
    store: OutcomeStore,
    tools: Tools,
    items: list[dict[str, Any]],
    limits: Limits | None = None,
) -> list[ToolCall]:
    tracker = ToolCallTracker(limits=limits)
    async with (
        DurableTurn(journal, "turn-1", tracker, store=store) as turn,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(tracker.consume, from_list(items))
        return await turn.run(tools.runner)


def leaves_of(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups."""
    inner = getattr(exc, "exceptions", None)
    if inner is None:
        return [exc]
    return [leaf for sub in inner for leaf in leaves_of(sub)]


def same(a: list[ToolCall], b: list[ToolCall]) -> None:
    assert [(c.id, c.name, c.args_text, c.status) for c in a] == [
        (c.id, c.name, c.args_text, c.status) for c in b
    ]
    assert [jsonable(c.result) for c in a] == [jsonable(c.result) for c in b]
    assert [type(c.error) for c in a] == [type(c.error) for c in b]


@pytest.mark.parametrize("batch_ms", [None, 5.0])
async def test_a_turn_is_journaled_in_order_and_restored(
    durable: Durable, anyio_backend: str, batch_ms: float | None
) -> None:
    tools = Tools()
    limits = Limits(max_calls=50, max_id_chars=40)
    with (
        anyio.fail_after(DEADLINE),
        durable.journal(batch_ms=batch_ms) as journal,
        durable.store() as store,
    ):
        assert isinstance(journal, Journal)
        calls = await journaled_turn(journal, store, tools, stream(), limits)
        records = await journal.read("turn-1")
        restored = await restore(journal, "turn-1")
    assert sorted(tools.ran) == ["broken", "lookup x\ud800", "transfer bob 5"]
    assert records[0].kind == "limits"
    assert records[0].data["limits"]["max_id_chars"] == 40
    kinds = [r.kind for r in records]
    assert kinds.count("claim") == 3
    assert kinds.count("outcome") == 3
    # every claim is committed before its call's outcome, and the end before the gated claim
    events = [(r.seq, item) for r in records if r.kind == "events" for item in r.data]
    claim_seq = {r.data["id"]: r.seq for r in records if r.kind == "claim"}
    end_seq = next(seq for seq, item in events if item[0] == "e")
    assert end_seq < claim_seq["t1"]
    for seq, item in events:
        if item[0] in "RE" and item[1] in claim_seq:
            assert claim_seq[item[1]] < seq
    assert restored.limits == limits
    assert not restored.cut
    assert restored.claimed == frozenset()
    same(restored.tracker.list(), calls)
    broken = restored.tracker.get("b1")
    assert broken is not None
    assert isinstance(broken.error, ToolRaised)  # restored by its kind
    found = restored.tracker.get(ODD_ID)
    assert found is not None
    assert found.result == {"q": "x\ufffd", "score": None}  # the one output rule


async def test_a_journal_that_cannot_commit_fails_the_turn_closed(
    tmp_path: Path, anyio_backend: str
) -> None:
    db = tmp_path / "j.db"
    tools = Tools()
    items = [*call_events("t1", "transfer", {"to": "bob", "amount": 5}), {"type": "end"}]
    tracker = ToolCallTracker()
    caught: list[BaseException] = []
    turns: list[DurableTurn] = []

    async def locked_turn(journal: SQLiteJournal, store: SQLiteOutcomeStore) -> None:
        async with DurableTurn(journal, "turn-1", tracker, store=store) as turn:
            turns.append(turn)
            other = sqlite3.connect(db, isolation_level=None)
            other.execute("BEGIN EXCLUSIVE")  # the journal's file is locked mid-turn
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(tracker.consume, from_list(items))
                    await turn.run(tools.runner)
            except Exception as exc:  # the run stops with the journal's error
                caught.append(exc)
            finally:
                other.execute("ROLLBACK")
                other.close()

    with (
        anyio.fail_after(DEADLINE),
        SQLiteJournal(db, batch_ms=60_000, busy_timeout=0.05) as journal,
        SQLiteOutcomeStore(tmp_path / "s.db") as store,
    ):
        with pytest.raises(DurableError, match="fails closed"):  # leaving the turn says so
            await locked_turn(journal, store)
        with pytest.raises(DurableError, match="fails closed"):
            turns[0].log.append_event(["r", "x"])
    assert len(caught) == 1
    assert tools.ran == []
    # the run stopped with the journal's error (its later writes are refused) ...
    leaves = leaves_of(caught[0])
    assert leaves
    assert all(isinstance(exc, DurableError) for exc in leaves)
    assert "fails closed" in str(leaves[0])
    # ... and the call says why its tool never started
    call = tracker.get("t1")
    assert call is not None
    assert isinstance(call.error, ClaimFailed)
    assert call.error.exception == "DurableError"
    assert "journal" in call.error.message
    assert "database is locked" in call.error.message


async def test_a_turn_id_is_journaled_once(durable: Durable, anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE), durable.journal() as journal, durable.store() as store:
        await journaled_turn(journal, store, Tools(), stream())
        with pytest.raises(DurableError, match="already in the journal"):
            async with DurableTurn(journal, "turn-1", ToolCallTracker(), store=store):
                pass  # pragma: no cover
        with pytest.raises(DurableError, match="no turn"):
            await restore(journal, "turn-2")


async def test_a_cut_turn_is_finished_elsewhere_without_its_gated_tools(
    durable: Durable, anyio_backend: str
) -> None:
    tools = Tools()
    with anyio.fail_after(DEADLINE), durable.journal() as journal, durable.store() as store:
        tracker = ToolCallTracker()
        async with DurableTurn(journal, "turn-1", tracker, store=store):
            for item in stream(end=False):  # the process dies before the stream's end
                tracker.apply(item)
        restored = await restore(journal, "turn-1")
        assert restored.cut
        calls = {c.id: c for c in await resume_turn(journal, "turn-1", tools.runner, store=store)}
        again = await restore(journal, "turn-1")
    # the eager calls (never claimed) run once; the gated transfer never runs
    assert sorted(tools.ran) == ["broken", "lookup x\ud800"]
    assert calls[ODD_ID].status is Status.DONE
    transfer = calls["t1"].error
    assert isinstance(transfer, NotExecuted)
    assert transfer.reason == "interrupted"
    assert not again.cut  # the interrupted end is journaled
    same(again.tracker.list(), list(calls.values()))


def key_of(call_id: str, tool_name: str) -> str:
    """The store key of ``call_id`` of ``turn-1`` called with ``{"q": "a"}``."""
    return call_key("turn-1", call_id, tool_name, json.dumps({"q": "a"}))


async def write_crashed_turn(journal: Journal, durable: Durable, tool_name: str) -> None:
    """The journal of a turn whose process died after claiming ``c1`` (lease 0.2 s)."""
    events = [*call_events("c1", tool_name, {"q": "a"}), {"type": "end"}]
    tracker = ToolCallTracker()
    dead = durable.store(owner="dead", lease=0.2)
    async with DurableTurn(journal, "turn-1", tracker, store=dead) as turn:
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, from_list(events))
        later = datetime.now(timezone.utc) + timedelta(days=1)
        assert (await dead.claim(key_of("c1", tool_name), expires_at=later)).won
        turn.log.append("claim", {"id": "c1", "tool": tool_name})
    dead.close()


@pytest.mark.parametrize("idempotent", [False, True])
async def test_a_claimed_call_without_outcome_is_in_doubt_unless_idempotent(
    durable: Durable, anyio_backend: str, idempotent: bool
) -> None:
    ran: list[str] = []

    def lookup(q: str) -> str:
        ran.append(q)
        return q * 2

    runner = ToolRunner([tool(lookup, eager=True, idempotent=idempotent)])
    with anyio.fail_after(DEADLINE), durable.journal() as journal:
        await write_crashed_turn(journal, durable, "lookup")
        restored = await restore(journal, "turn-1")
        assert restored.claimed == frozenset({"c1"})
        with durable.store(poll=0.02) as store:
            calls = await resume_turn(journal, "turn-1", runner, store=store)
        again = await restore(journal, "turn-1")
    if idempotent:
        assert ran == ["a"]
        assert calls[0].result == "aa"
    else:
        assert ran == []
        assert isinstance(calls[0].error, OutcomeInDoubt)
        assert "lease expired" in calls[0].error.message
    same(again.tracker.list(), calls)  # what the resume did is journaled too


async def test_the_runners_transitions_are_journaled_and_an_approval_before_its_claim(
    durable: Durable, anyio_backend: str
) -> None:
    ran: list[str] = []

    def transfer(to: str) -> str:
        ran.append(to)
        return f"sent to {to}"

    control = RunControl()
    items = [*call_events("c1", "transfer", {"to": "bob"}), {"type": "end"}]
    with anyio.fail_after(DEADLINE), durable.journal() as journal, durable.store() as store:
        tracker = ToolCallTracker()
        runner = ToolRunner([tool(transfer, needs_approval=True)])
        async with (
            DurableTurn(journal, "turn-1", tracker, store=store) as turn,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(tracker.consume, from_list(items))
            tg.start_soon(functools.partial(turn.run, runner, control=control))
            async for request in control.approval_requests():
                control.approve(request.call_id)
        records = await journal.read("turn-1")
        restored = await restore(journal, "turn-1")
    assert ran == ["bob"]
    runner_events = [r.data["event"] for r in records if r.kind == "runner"]
    assert "approved" in runner_events
    assert "claimed" in runner_events
    approved_at = next(
        r.seq for r in records if r.kind == "runner" and r.data["event"] == "approved"
    )
    claim_at = next(r.seq for r in records if r.kind == "claim")
    assert approved_at < claim_at  # the decision is durable before the tool starts
    assert restored.decisions == {"c1": True}


@pytest.mark.parametrize("approved", [True, False])
async def test_a_journaled_decision_is_applied_again_after_a_restore(
    durable: Durable, anyio_backend: str, approved: bool
) -> None:
    ran: list[str] = []

    def transfer(to: str) -> str:
        ran.append(to)
        return f"sent to {to}"

    items = [*call_events("c1", "transfer", {"to": "bob"}), {"type": "end"}]
    event = "approved" if approved else "denied"
    with anyio.fail_after(DEADLINE), durable.journal() as journal, durable.store() as store:
        # process 1 journaled the stream and the decision, then died before the claim
        tracker = ToolCallTracker()
        async with DurableTurn(journal, "turn-1", tracker, store=store) as turn:
            for item in items:
                tracker.apply(item)
            decision = {"id": "c1", "from": "awaiting_approval", "to": "x", "event": event}
            turn.log.append("runner", decision)
        restored = await restore(journal, "turn-1")
        assert restored.decisions == {"c1": approved}
        # process 2: nobody approves here; the journaled decision is applied again
        runner = ToolRunner([tool(transfer, needs_approval=True)])
        calls = await resume_turn(journal, "turn-1", runner, store=store, control=RunControl())
    if approved:
        assert ran == ["bob"]
        assert calls[0].result == "sent to bob"
    else:
        assert ran == []
        assert calls[0].error is not None
        assert calls[0].error.kind == "approval_denied"


async def test_journal_and_store_close_off_the_event_loop(
    durable: Durable, anyio_backend: str
) -> None:
    with anyio.fail_after(DEADLINE):
        async with durable.journal() as journal, durable.store() as store:
            await journaled_turn(journal, store, Tools(), stream())
        with durable.journal() as again:
            assert (await again.read("turn-1"))[0].kind == "limits"


@pytest.mark.parametrize("keep", [None, 0, 1])
async def test_keep_finished_is_journaled_with_the_limits_and_restored(
    durable: Durable, anyio_backend: str, keep: int | None
) -> None:
    limits = Limits(max_calls=7)
    with anyio.fail_after(DEADLINE), durable.journal() as journal, durable.store() as store:
        tracker = ToolCallTracker(limits=limits, keep_finished=keep)
        async with (
            DurableTurn(journal, "turn-1", tracker, store=store) as turn,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(tracker.consume, from_list(stream()))
            calls = await turn.run(Tools().runner)
        head = (await journal.read("turn-1"))[0]
        restored = await restore(journal, "turn-1")
    assert head.data["keep_finished"] == keep
    assert restored.tracker.keep_finished == keep
    assert restored.tracker.limits == limits
    assert len(calls) == (3 if keep is None else keep)
    same(restored.tracker.list(), calls)  # the same calls forgotten, the same kept


async def test_a_limits_record_without_keep_finished_restores_keeping_every_call(
    tmp_path: Path, anyio_backend: str
) -> None:
    with anyio.fail_after(DEADLINE), SQLiteJournal(tmp_path / "j.db") as journal:
        log = await journal.create("old", {"limits": {"max_calls": 3}})  # an older head
        log.append_event(["s", "c1", "lookup"])
        await log.commit()
        restored = await restore(journal, "old")
    assert restored.tracker.keep_finished is None
    assert restored.tracker.limits.max_calls == 3
    assert [c.id for c in restored.tracker.list()] == ["c1"]


async def test_a_turn_id_sqlite_cannot_bind_fails_alone_and_leaves_the_file_usable(
    tmp_path: Path, anyio_backend: str
) -> None:
    """A lone surrogate in a turn id cannot be written to SQLite: that create fails with
    DurableError, and the connection does not keep the file's write lock."""
    head: dict[str, Any] = {"limits": {}, "keep_finished": None}
    with anyio.fail_after(DEADLINE):
        async with SQLiteJournal(tmp_path / "j.db") as journal:
            with pytest.raises(DurableError, match="creating"):
                await journal.create("t\ud800", head)
            log = await journal.create("ok-turn", head)
            async with SQLiteJournal(tmp_path / "j.db") as other:  # another process
                assert (await other.create("other", head)).epoch == 1
        assert log.epoch == 1
