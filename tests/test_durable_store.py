"""The SQLite outcome store: claims with owner and lease, bounded waits, in-doubt calls,
idempotent take-over, retried and concurrent resumes, a locked database failing closed.

Every async test runs on asyncio and trio, bounded by ``anyio.fail_after``; every store is
a real SQLite file in ``tmp_path``; the tests taking the ``durable`` fixture run on a real
Redis server too (``RedisOutcomeStore``).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import anyio
import pytest

from _backends import Durable
from _runner_helpers import call_events, from_list
from conftest import DEADLINE
from toolcall_tracker import (
    OutcomeInDoubt,
    RunControl,
    Status,
    ToolCall,
    ToolCallTracker,
    ToolRunner,
    tool,
)
from toolcall_tracker.durable import DurableError, SQLiteOutcomeStore, sqlite_path
from toolcall_tracker.failures import ClaimFailed, ToolRaised
from toolcall_tracker.runner import (
    CallOutcome,
    LeasedOutcomeStore,
    OutcomeStore,
    PendingApprovals,
    StoreGuard,
)

pytestmark = pytest.mark.anyio

SECRET = b"a durable test secret (32 bytes)"
LATER = datetime.now(timezone.utc) + timedelta(days=1)
CHILD = str(Path(__file__).with_name("_durable_child.py"))


def a_call(call_id: str = "c1", name: str = "transfer") -> ToolCall:
    return ToolCall(id=call_id, name=name, status=Status.RUNNING)


async def test_claim_record_get_round_trip(durable: Durable, anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE), durable.store(owner="me") as store:
        assert isinstance(store, OutcomeStore)
        assert isinstance(store, LeasedOutcomeStore)
        first = await store.claim("k", expires_at=LATER)
        assert first.won
        assert first.owner == "me"
        assert not first.lease_expired()
        assert await store.get("k") is None
        outcome = CallOutcome.of({"n": float("nan"), "s": "\ud800"}, None)
        await store.record("k", outcome)
        assert await store.get("k") == outcome
        again = await store.claim("k", expires_at=LATER)
        assert not again.won
        assert again.outcome == outcome
        assert again.owner == "me"
        failure = CallOutcome.of(None, ToolRaised(message="boom", tool="t", exception="E"))
        await store.record("f", failure)
        got = await store.get("f")
        assert got is not None
        assert isinstance(got.call_failure(), ToolRaised)


async def test_a_live_lease_is_waited_for_and_its_outcome_returned(
    durable: Durable, anyio_backend: str
) -> None:
    with (
        anyio.fail_after(DEADLINE),
        durable.store(owner="a", lease=5.0) as a,
        durable.store(owner="b", lease=5.0, wait=5.0, poll=0.01) as b,
    ):
        assert (await a.claim("k", expires_at=LATER)).won
        outcome = CallOutcome.of("done by a", None)
        got: list[Any] = []

        async def retry() -> None:
            got.append(await b.claim("k", expires_at=LATER))

        async with anyio.create_task_group() as tg:
            tg.start_soon(retry)
            await anyio.wait_all_tasks_blocked()
            await a.record("k", outcome)
        assert not got[0].won
        assert got[0].outcome == outcome
        assert got[0].owner == "a"


async def test_an_expired_lease_without_outcome_is_in_doubt_and_never_rerun(
    durable: Durable, anyio_backend: str
) -> None:
    with anyio.fail_after(DEADLINE):
        dead = durable.store(owner="dead", lease=0.2)
        assert (await dead.claim("turn:c1", expires_at=LATER)).won
        dead.close()  # the process "died": nobody renews its lease
        with durable.store(owner="b", lease=5.0, poll=0.02) as b:
            claim = await b.claim("turn:c1", expires_at=LATER)
            assert not claim.won
            assert claim.outcome is None
            assert claim.lease_expired()
            guard = StoreGuard(b, "turn", LATER)
            outcome = await guard.claim(a_call())
            assert outcome is not None
            assert isinstance(outcome.failure, OutcomeInDoubt)
            assert "lease expired" in outcome.failure.message


async def test_an_idempotent_tool_takes_over_an_expired_lease(
    durable: Durable, anyio_backend: str
) -> None:
    with anyio.fail_after(DEADLINE):
        dead = durable.store(owner="dead", lease=0.2)
        assert (await dead.claim("turn:c1", expires_at=LATER)).won
        dead.close()
        with durable.store(owner="b", lease=5.0, poll=0.02) as b:
            guard = StoreGuard(b, "turn", LATER, frozenset({"lookup"}))
            assert await guard.claim(a_call(name="lookup")) is None  # won: it runs again
        with durable.store(owner="c", wait=0) as c:
            claim = await c.claim("turn:c1", expires_at=LATER)  # now held by b, live
            assert claim.owner == "b"
            assert not claim.won
            assert not claim.lease_expired()


async def test_the_lease_is_renewed_while_the_holder_lives(
    durable: Durable, anyio_backend: str
) -> None:
    with (
        anyio.fail_after(DEADLINE),
        durable.store(owner="a", lease=0.3) as a,
        durable.store(owner="b", wait=1.0, poll=0.05) as b,
    ):
        first = await a.claim("k", expires_at=LATER)
        claim = await b.claim("k", expires_at=LATER)  # waits a full second: 3 leases
        assert not claim.won
        assert claim.outcome is None
        assert claim.lease_until is not None
        assert first.lease_until is not None
        assert claim.lease_until > first.lease_until  # renewed meanwhile
        assert not claim.lease_expired()


async def test_expired_keys_are_forgotten(durable: Durable, anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE), durable.store() as store:
        past = datetime.now(timezone.utc) - timedelta(seconds=1)
        assert (await store.claim("old", expires_at=past)).won
        assert (await store.claim("new", expires_at=LATER)).won
        assert (await store.claim("old", expires_at=LATER)).won  # the old one was dropped


def test_locations(tmp_path: Path) -> None:
    assert sqlite_path("sqlite:///rel/x.db") == "rel/x.db"
    assert sqlite_path("sqlite:////abs/x.db") == "/abs/x.db"
    assert sqlite_path(tmp_path / "x.db") == str(tmp_path / "x.db")
    with pytest.raises(ValueError, match=r"sqlite:///relative\.db"):
        sqlite_path("sqlite://host/x.db")
    with pytest.raises(ValueError, match="lease"):
        SQLiteOutcomeStore(tmp_path / "x.db", lease=0)


def test_an_unusable_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DurableError, match="cannot open the SQLite file"):
        SQLiteOutcomeStore(tmp_path)  # a directory


# -- resumes over the store ---------------------------------------------------------------


class Ledger:
    def __init__(self) -> None:
        self.ran: list[tuple[str, int]] = []

        async def transfer(to: str, amount: int) -> str:
            self.ran.append((to, amount))
            return f"sent {amount} to {to}"

        self.transfer = transfer

    def runner(self, store: OutcomeStore) -> ToolRunner:
        return ToolRunner(
            [tool(self.transfer, needs_approval=True)],
            approval_secret=SECRET,
            outcome_store=store,
        )


async def pending_transfer(runner: ToolRunner) -> PendingApprovals:
    control = RunControl(defer_approvals=True)
    tracker = ToolCallTracker()
    items = [*call_events("c1", "transfer", {"to": "bob", "amount": 5}), {"type": "end"}]
    async with anyio.create_task_group() as tg:
        tg.start_soon(tracker.consume, from_list(items))
        await runner.run(tracker, control=control)
    assert control.pending is not None
    return control.pending


async def test_a_retried_resume_returns_the_recorded_outcome(
    durable: Durable, anyio_backend: str
) -> None:
    ledger = Ledger()
    with anyio.fail_after(DEADLINE):
        with durable.store() as store:
            runner = ledger.runner(store)
            pending = await pending_transfer(runner)
            decision = pending.approve("c1")
            first = await runner.resume(pending, [decision])
        with durable.store() as store:  # a retry served by a fresh process
            second = await ledger.runner(store).resume(pending, [decision])
    assert ledger.ran == [("bob", 5)]
    assert first[0].status is Status.DONE
    assert second[0].status is Status.DONE
    assert second[0].result == first[0].result == "sent 5 to bob"


async def test_a_locked_database_fails_the_claim_closed(tmp_path: Path, anyio_backend: str) -> None:
    path = tmp_path / "s.db"
    ledger = Ledger()
    with anyio.fail_after(DEADLINE), SQLiteOutcomeStore(path, busy_timeout=0.05) as store:
        runner = ledger.runner(store)
        pending = await pending_transfer(runner)
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")  # another process holds the write lock
        try:
            calls = await runner.resume(pending, [pending.approve("c1")])
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert ledger.ran == []
        assert calls[0].status is Status.ERROR
        assert isinstance(calls[0].error, ClaimFailed)
        assert "database is locked" in calls[0].error.message
        assert str(path) in calls[0].error.message
        again = await runner.resume(pending, [pending.approve("c1")])  # still decidable
        assert ledger.ran == [("bob", 5)]
        assert again[0].status is Status.DONE


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_two_processes_resuming_the_same_state_run_the_tool_once(
    tmp_path: Path, backend: str
) -> None:
    db, side, state = tmp_path / "s.db", tmp_path / "side.txt", tmp_path / "state.json"

    async def prepare() -> None:
        with SQLiteOutcomeStore(db) as store:
            save_state(state, await pending_transfer(Ledger().runner(store)))

    anyio.run(prepare, backend=backend)
    race_resumes([sys.executable, CHILD, "resume", str(db), str(state), str(side), backend], side)


def save_state(state: Path, pending: PendingApprovals) -> None:
    """Write ``pending`` and its approval to ``state`` for the resuming children."""
    decisions = [pending.approve("c1").model_dump_json()]
    state.write_text(json.dumps({"pending": pending.model_dump_json(), "decisions": decisions}))


def race_resumes(args: list[str], side: Path) -> None:
    """Start two children resuming the same state (``args``) and let them go at once:
    exactly one runs the transfer (one line in ``side``), both return its outcome."""
    children = [
        subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    for child in children:  # both are up and waiting: let them go at once
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    outputs = [child.communicate(timeout=60)[0] for child in children]
    assert [child.returncode for child in children] == [0, 0]
    runs = side.read_text().splitlines()
    assert runs == ["transfer bob 5"]  # exactly one process ran it
    results = [json.loads(out)[0] for out in outputs]
    assert results[0] == results[1]
    assert results[0]["status"] == "done"
    assert results[0]["result"] == "sent 5 to bob"
