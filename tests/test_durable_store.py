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
import time
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
from toolcall_tracker.durable import (
    DurableError,
    RedisOutcomeStore,
    SQLiteOutcomeStore,
    sqlite_path,
)
from toolcall_tracker.failures import ClaimFailed, ToolRaised
from toolcall_tracker.runner import (
    CallOutcome,
    Claim,
    Fence,
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
        key = StoreGuard(dead, "turn", LATER).key(a_call())  # the call's key in its turn
        assert (await dead.claim(key, expires_at=LATER)).won
        dead.close()  # the process "died": nobody renews its lease
        with durable.store(owner="b", lease=5.0, poll=0.02) as b:
            claim = await b.claim(key, expires_at=LATER)
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
        key = StoreGuard(dead, "turn", LATER).key(a_call(name="lookup"))
        assert (await dead.claim(key, expires_at=LATER)).won
        dead.close()
        with durable.store(owner="b", lease=5.0, poll=0.02) as b:
            guard = StoreGuard(b, "turn", LATER, frozenset({"lookup"}))
            assert await guard.claim(a_call(name="lookup")) is None  # won: it runs again
            assert guard.attempt(a_call(name="lookup")) == 2
        with durable.store(owner="c", wait=0) as c:
            claim = await c.claim(key, expires_at=LATER)  # now held by b, live
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


# -- fencing (protocol version 2): take-over, confirm, a stalled writer ----------------------


async def test_take_over_and_confirm_respect_the_fence(
    durable: Durable, anyio_backend: str
) -> None:
    with anyio.fail_after(DEADLINE):
        dead = durable.store(owner="dead", lease=0.2)
        assert (await dead.claim("t:c1", expires_at=LATER, fence=Fence("t", 1))).won
        dead.close()  # its lease runs out
        with durable.store(owner="b", lease=5.0, wait=0, clock=lambda: time.time() + 60) as b:
            seen = await b.claim("t:c1", expires_at=LATER)  # b's clock is a minute ahead
            assert seen.lease_expired(datetime.now(timezone.utc) + timedelta(seconds=60))
            await b.fence("t", 3)
            refused = await b.take_over("t:c1", expires_at=LATER, fence=Fence("t", 2))
            assert refused == Claim(won=False, fenced=True)
            held = await b.take_over("t:c1", expires_at=LATER, fence=Fence("t", 4))
            assert held.won
            assert held.owner == "b"
            assert await b.epoch("t") == 4  # a take-over raises the epoch too
            assert await b.confirm("t:c1", fence=Fence("t", 4))
            assert not await b.confirm("t:c1", fence=Fence("t", 3))  # fenced
            assert await b.confirm("t:c1")  # no fence: as before
            assert await b.confirm("t:c1", fence=Fence("t", 5))  # newer: raises it
            assert await b.epoch("t") == 5


async def test_a_fenced_confirm_renews_nothing(durable: Durable, anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE), durable.store(owner="a", lease=5.0, wait=0) as a:
        assert (await a.claim("t:c1", expires_at=LATER, fence=Fence("t", 1))).won
        await a.fence("t", 2)
        with durable.store(owner="b", wait=0) as b:
            before = await b.claim("t:c1", expires_at=LATER)
            assert not await a.confirm("t:c1", fence=Fence("t", 1))
            after = await b.claim("t:c1", expires_at=LATER)
        assert after.owner == "a"
        assert after.lease_until == before.lease_until  # not pushed forward


async def test_a_stalled_writer_is_fenced_by_a_restore(
    durable: Durable, anyio_backend: str
) -> None:
    """Writer A (epoch 1) claims c1 and stalls; a restore B fences the turn at epoch 2,
    claims c2 and c3 and finishes. A wakes: its confirm of c1 and claims of c2, c4 are
    refused; nothing it asks changes what B wrote; its record is still accepted."""
    old, new = Fence("t", 1), Fence("t", 2)
    with (
        anyio.fail_after(DEADLINE),
        durable.store(owner="a", lease=5.0, wait=0) as a,
        durable.store(owner="b", lease=5.0, wait=0) as b,
    ):
        assert (await a.claim("t:c1", expires_at=LATER, fence=old)).won
        await b.fence("t", 2)
        assert (await b.claim("t:c2", expires_at=LATER, fence=new)).won
        await b.record("t:c2", CallOutcome.of("b ran c2", None))
        assert (await b.claim("t:c3", expires_at=LATER, fence=new)).won
        await b.record(
            "t:c3", CallOutcome.of(None, ToolRaised(message="x", tool="t", exception="E"))
        )
        # A wakes up
        assert not await a.confirm("t:c1", fence=old)  # so its tool never starts
        for key in ("t:c2", "t:c4"):
            assert await a.claim(key, expires_at=LATER, fence=old) == Claim(won=False, fenced=True)
        assert (await a.take_over("t:c3", expires_at=LATER, fence=old)).fenced
        assert await b.get("t:c2") == CallOutcome.of("b ran c2", None)
        assert await b.get("t:c4") is None
        # the restore goes on: c4 is still free for it
        assert (await b.claim("t:c4", expires_at=LATER, fence=new)).won
        await a.record("t:c1", CallOutcome.of("a ran c1 after all", None))  # never fenced
        assert await b.get("t:c1") == CallOutcome.of("a ran c1 after all", None)


async def test_a_fenced_claim_does_not_wait_for_a_live_holder(
    durable: Durable, anyio_backend: str
) -> None:
    with (
        anyio.fail_after(DEADLINE),
        durable.store(owner="a", lease=30.0) as a,
        durable.store(owner="b", lease=30.0, wait=30.0, poll=0.01) as b,
    ):
        assert (await a.claim("t:c1", expires_at=LATER, fence=Fence("t", 2))).won
        began = anyio.current_time()
        claim = await b.claim("t:c1", expires_at=LATER, fence=Fence("t", 1))
        assert claim == Claim(won=False, fenced=True)
        assert anyio.current_time() - began < 5.0  # answered at once, not after 30 s


async def test_concurrent_writers_with_mixed_epochs(durable: Durable, anyio_backend: str) -> None:
    """Three processes' stores (one file or server) claim the same keys at once, at epochs
    1..3 after a fence at 2: one winner per key, never at epoch 1."""
    got: list[tuple[str, int, Claim]] = []
    with (
        anyio.fail_after(DEADLINE),
        durable.store(owner="p0", wait=0) as p0,
        durable.store(owner="p1", wait=0) as p1,
        durable.store(owner="p2", wait=0) as p2,
    ):
        stores = [p0, p1, p2]
        await p0.fence("t", 2)

        async def claim(i: int) -> None:
            key, epoch = f"t:k{i % 4}", 1 + i % 3
            store = stores[i % len(stores)]
            got.append(
                (key, epoch, await store.claim(key, expires_at=LATER, fence=Fence("t", epoch)))
            )

        async with anyio.create_task_group() as tg:
            for i in range(48):
                tg.start_soon(claim, i)
        assert await p1.epoch("t") == 3
        await p2.fence("other", 1)
        assert await p2.epoch("t") == 3
    for key in ("t:k0", "t:k1", "t:k2", "t:k3"):
        winners = [epoch for k, epoch, claim in got if k == key and claim.won]
        assert len(winners) == 1, key
        assert winners[0] >= 2
    assert all(claim.fenced for _, epoch, claim in got if epoch == 1)
    assert not any(claim.fenced for _, epoch, claim in got if epoch == 3)


async def test_a_fence_is_kept_as_long_as_the_keys_it_protects_on_sqlite(
    tmp_path: Path, anyio_backend: str
) -> None:
    now = [1_000_000.0]
    hour = 3600.0
    with (
        anyio.fail_after(DEADLINE),
        SQLiteOutcomeStore(tmp_path / "s.db", wait=0, clock=lambda: now[0]) as store,
    ):
        keys_until = datetime.fromtimestamp(now[0] + 72 * hour, timezone.utc)
        assert (await store.claim("t:a", expires_at=keys_until, fence=Fence("t", 2))).won
        await store.fence("u", 1)  # no key: kept a day
        await store.fence("t", 2)  # a day is less than the key's expiry: not shortened
        now[0] += 23 * hour
        assert await store.epoch("u") == 1
        now[0] += 2 * hour
        assert await store.epoch("u") is None  # forgotten after a day
        assert await store.epoch("t") == 2
        now[0] += 46 * hour  # 71 hours in: the key and its fence live
        assert await store.claim("t:b", expires_at=keys_until, fence=Fence("t", 1)) == Claim(
            won=False, fenced=True
        )
        now[0] += 2 * hour  # both expired
        assert await store.epoch("t") is None
        later_keys = datetime.fromtimestamp(now[0] + hour, timezone.utc)
        assert (await store.claim("t:a", expires_at=later_keys, fence=Fence("t", 1))).won
        assert await store.epoch("t") == 1  # a forgotten scope starts afresh
    rows = sqlite3.connect(tmp_path / "s.db").execute("SELECT * FROM toolcall_fences").fetchall()
    assert rows == [("t", 1, now[0] + hour)]


async def test_a_fence_key_expires_never_before_the_keys_it_protects_on_redis(
    redis_url: str, redis_prefix: str, anyio_backend: str
) -> None:
    import redis

    hour = 3600
    client = redis.Redis.from_url(redis_url)
    store = RedisOutcomeStore(redis_url, prefix=redis_prefix, wait=0, ttl=2 * hour)

    def ttl(name: str) -> float:
        return float(client.pttl(f"{redis_prefix}{name}")) / 1000

    try:
        with anyio.fail_after(DEADLINE):
            await store.fence("u", 1)
            assert 2 * hour - 60 < ttl("fence:u") <= 2 * hour  # the store's ttl
            soon = datetime.now(timezone.utc) + timedelta(hours=3)
            assert (await store.claim("t:a", expires_at=soon, fence=Fence("t", 1))).won
            assert ttl("fence:t") >= ttl("outcome:t:a") - 1
            assert 3 * hour - 60 < ttl("fence:t") <= 3 * hour
            await store.fence("t", 2)  # never shortened by a fence
            early = datetime.now(timezone.utc) + timedelta(minutes=10)
            assert (await store.claim("t:b", expires_at=early, fence=Fence("t", 2))).won
            assert 3 * hour - 60 < ttl("fence:t") <= 3 * hour  # nor by an earlier key
            far = datetime.now(timezone.utc) + timedelta(hours=5)
            assert await store.take_over("t:c", expires_at=far, fence=Fence("t", 2)) == Claim(
                won=False
            )
            assert 5 * hour - 60 < ttl("fence:t") <= 5 * hour  # an admitted take-over
            assert client.get(f"{redis_prefix}fence:t") == b"2"
    finally:
        await store.aclose()
        client.close()
