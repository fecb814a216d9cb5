"""The outcome store contract, for every store: the in-memory one here; the durable stores
of later issues add their factory to ``STORES`` and inherit every test.

Protocol version 2 (fencing) is part of the contract: a claim with an older fence than
its scope's epoch is refused and takes nothing, ``fence`` is monotone, a newer claim
raises the epoch, ``record`` is never fenced, concurrent claims with mixed epochs have
one winner of the current epoch, and scopes are independent. A version 1 store (no
fencing) still works where nothing fences.

Each test runs on asyncio and trio, bounded by ``anyio.fail_after``.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import anyio
import pytest

from _runner_helpers import call_events, from_list
from _stores import FlakyStore, V1Store
from conftest import DEADLINE
from toolcall_tracker import RunControl, Status, ToolCall, ToolCallTracker, ToolRunner, tool
from toolcall_tracker.durable import RedisOutcomeStore, SQLiteOutcomeStore
from toolcall_tracker.failures import ApprovalDenied, ToolRaised
from toolcall_tracker.runner import (
    OUTCOME_STORE_PROTOCOL,
    CallOutcome,
    Claim,
    Fence,
    InMemoryOutcomeStore,
    OutcomeStore,
    StoreGuard,
    supports_fencing,
)

pytestmark = pytest.mark.anyio

# Each factory gets a fresh directory. A store with leases fills Claim.owner/lease_until,
# so the tests compare what the contract fixes: won and outcome. ``wait=0``: a claim lost
# to a live holder answers at once (waiting for its outcome is the SQLite store's own test).
# The Redis store runs against a real server (the ``redis_url`` fixture; skipped without
# one, failed in CI), under this test's own key prefix.
STORES: dict[str, Callable[[pytest.FixtureRequest, Path], OutcomeStore]] = {
    "in-memory": lambda request, _: InMemoryOutcomeStore(),
    "sqlite": lambda request, directory: SQLiteOutcomeStore(directory / "outcomes.db", wait=0),
    "redis": lambda request, _: RedisOutcomeStore(
        request.getfixturevalue("redis_url"),
        prefix=request.getfixturevalue("redis_prefix"),
        wait=0,
    ),
}


@pytest.fixture(params=list(STORES))
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[OutcomeStore]:
    made = STORES[request.param](request, tmp_path)
    assert isinstance(made, OutcomeStore)
    yield made
    aclose = getattr(made, "aclose", None)
    if aclose is not None:  # on the test's event loop: its asyncio clients too
        await aclose()


def said(claim: Claim) -> Claim:
    """The contract's part of a claim (won, outcome)."""
    return Claim(won=claim.won, outcome=claim.outcome)


def later() -> datetime:
    return datetime.now(timezone.utc) + timedelta(hours=1)


async def test_a_key_is_won_once(anyio_backend: str, store: OutcomeStore) -> None:
    with anyio.fail_after(DEADLINE):
        assert said(await store.claim("n:a", expires_at=later())) == Claim(won=True)
        assert said(await store.claim("n:a", expires_at=later())) == Claim(won=False)
        assert said(await store.claim("n:b", expires_at=later())) == Claim(won=True)  # own key


async def test_concurrent_claims_have_exactly_one_winner(
    anyio_backend: str, store: OutcomeStore
) -> None:
    wins: list[bool] = []

    async def claim() -> None:
        wins.append((await store.claim("n:race", expires_at=later())).won)

    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            for _ in range(50):
                tg.start_soon(claim)
    assert wins.count(True) == 1
    assert len(wins) == 50


@pytest.mark.parametrize(
    "outcome",
    [
        CallOutcome.of({"rows": [1, 2.5, "é"], "none": None}, None),
        CallOutcome.of(None, ApprovalDenied(message="no", tool="t", reason="no")),
        CallOutcome.of(None, ToolRaised(message="boom", tool="t", exception="KeyError")),
    ],
)
async def test_a_recorded_outcome_comes_back_to_every_later_claim(
    anyio_backend: str, store: OutcomeStore, outcome: CallOutcome
) -> None:
    with anyio.fail_after(DEADLINE):
        assert (await store.claim("n:a", expires_at=later())).won
        assert await store.get("n:a") is None  # claimed, no outcome yet
        await store.record("n:a", outcome)
        assert await store.get("n:a") == outcome
        again = await store.claim("n:a", expires_at=later())
    assert said(again) == Claim(won=False, outcome=outcome)
    assert again.outcome is not None
    assert again.outcome.call_failure() == outcome.call_failure()


async def test_keys_are_any_wire_form_text(anyio_backend: str, store: OutcomeStore) -> None:
    keys = ["n:=?b64?7aCA", "n:é😀", "n:" + "x" * 300, "n:a:b"]
    with anyio.fail_after(DEADLINE):
        for key in keys:
            assert (await store.claim(key, expires_at=later())).won
        for key in keys:
            assert not (await store.claim(key, expires_at=later())).won


def test_an_outcome_is_plain_json() -> None:
    outcome = CallOutcome.of({"x": float("inf"), "s": "\ud800"}, None)
    text = outcome.model_dump_json()
    text.encode("utf-8")
    assert CallOutcome.model_validate_json(text) == outcome
    assert outcome.result == {"x": None, "s": "\ufffd"}


# -- fencing (protocol version 2) --------------------------------------------------------------

FENCED = Claim(won=False, fenced=True)


async def epoch_of(store: OutcomeStore, scope: str) -> int | None:
    """The scope's epoch as the store holds it (every store here can say)."""
    epoch: Any = getattr(store, "epoch")  # noqa: B009 (not part of the protocol)
    got: int | None = await epoch(scope)
    return got


def test_the_stores_speak_protocol_version_2() -> None:
    assert OUTCOME_STORE_PROTOCOL == 2
    assert supports_fencing(InMemoryOutcomeStore())
    assert supports_fencing(FlakyStore())
    assert not supports_fencing(V1Store())
    assert isinstance(V1Store(), OutcomeStore)  # still accepted where nothing fences


async def test_every_store_supports_fencing(anyio_backend: str, store: OutcomeStore) -> None:
    assert supports_fencing(store)
    with anyio.fail_after(DEADLINE):
        assert await epoch_of(store, "t") is None  # never fenced


async def test_a_claim_with_an_older_fence_is_refused_and_takes_nothing(
    anyio_backend: str, store: OutcomeStore
) -> None:
    with anyio.fail_after(DEADLINE):
        await store.fence("t", 2)
        assert await store.claim("t:a", expires_at=later(), fence=Fence("t", 1)) == FENCED
        assert await store.get("t:a") is None
        assert await epoch_of(store, "t") == 2  # a refused claim changes nothing
        won = await store.claim("t:a", expires_at=later(), fence=Fence("t", 2))
        assert won.won  # the refused claim took nothing
        assert not won.fenced
        # a held key answers an older fence with "fenced", never with its holder or outcome
        await store.record("t:a", CallOutcome.of("done", None))
        assert await store.claim("t:a", expires_at=later(), fence=Fence("t", 1)) == FENCED


async def test_fence_is_monotone(anyio_backend: str, store: OutcomeStore) -> None:
    with anyio.fail_after(DEADLINE):
        await store.fence("t", 3)
        await store.fence("t", 1)  # never lowers it
        await store.fence("t", 3)  # the same epoch again: a no-op
        assert await epoch_of(store, "t") == 3
        assert await store.claim("t:a", expires_at=later(), fence=Fence("t", 2)) == FENCED
        assert (await store.claim("t:a", expires_at=later(), fence=Fence("t", 3))).won
        await store.fence("t", 4)
        assert await epoch_of(store, "t") == 4
        assert await store.claim("t:b", expires_at=later(), fence=Fence("t", 3)) == FENCED


async def test_a_claim_with_a_newer_epoch_raises_it(
    anyio_backend: str, store: OutcomeStore
) -> None:
    with anyio.fail_after(DEADLINE):
        assert (await store.claim("t:a", expires_at=later(), fence=Fence("t", 1))).won
        assert await epoch_of(store, "t") == 1
        assert (await store.claim("t:b", expires_at=later(), fence=Fence("t", 2))).won
        assert await epoch_of(store, "t") == 2
        assert await store.claim("t:c", expires_at=later(), fence=Fence("t", 1)) == FENCED
        # a lost claim (the key is held) raises the epoch too: it fences older writers
        lost = await store.claim("t:a", expires_at=later(), fence=Fence("t", 5))
        assert said(lost) == Claim(won=False)
        assert not lost.fenced
        assert await epoch_of(store, "t") == 5
        assert await store.claim("t:d", expires_at=later(), fence=Fence("t", 4)) == FENCED


async def test_record_is_accepted_from_anyone(anyio_backend: str, store: OutcomeStore) -> None:
    outcome = CallOutcome.of("sent", None)
    with anyio.fail_after(DEADLINE):
        assert (await store.claim("t:a", expires_at=later(), fence=Fence("t", 1))).won
        await store.fence("t", 2)  # the claimer of t:a is superseded, but its tool ran:
        await store.record("t:a", outcome)  # what really happened is written
        assert await store.get("t:a") == outcome
        await store.record("t:never", outcome)  # never claimed: written too
        assert await store.get("t:never") == outcome
        again = await store.claim("t:a", expires_at=later(), fence=Fence("t", 2))
        assert said(again) == Claim(won=False, outcome=outcome)


async def test_claims_without_a_fence_are_never_refused(
    anyio_backend: str, store: OutcomeStore
) -> None:
    with anyio.fail_after(DEADLINE):
        await store.fence("t", 7)
        assert (await store.claim("t:a", expires_at=later())).won
        assert said(await store.claim("t:a", expires_at=later())) == Claim(won=False)
        assert await epoch_of(store, "t") == 7


@pytest.mark.parametrize("top", [3, 4])
async def test_concurrent_claims_with_mixed_epochs_after_a_fence(
    anyio_backend: str, store: OutcomeStore, top: int
) -> None:
    """After ``fence(t, 3)``, 60 claims of one key at epochs 1..top at once: exactly one
    wins, at epoch 3 or later; every refused one is older than the final epoch; none of
    the newest epoch is refused."""
    got: list[tuple[int, Claim]] = []

    async def claim(epoch: int) -> None:
        fence = Fence("t", epoch)
        got.append((epoch, await store.claim("t:race", expires_at=later(), fence=fence)))

    with anyio.fail_after(DEADLINE):
        await store.fence("t", 3)
        async with anyio.create_task_group() as tg:
            for i in range(60):
                tg.start_soon(claim, 1 + i % top)
        final = await epoch_of(store, "t")
    assert len(got) == 60
    winners = [epoch for epoch, claim in got if claim.won]
    assert len(winners) == 1
    assert winners[0] >= 3
    assert final == top
    for epoch, claim in got:
        if epoch < 3:
            assert claim == FENCED
        if claim.fenced:
            assert epoch < final
            assert not claim.won
        if epoch == top:
            assert not claim.fenced


async def test_scopes_are_independent(anyio_backend: str, store: OutcomeStore) -> None:
    scopes = ["t", "t1", "t:1", "é😀", "=?b64?x", "t\ud800"]
    with anyio.fail_after(DEADLINE):
        await store.fence("t", 9)
        for i, scope in enumerate(scopes[1:]):  # (keys are wire forms: ASCII-safe)
            assert await epoch_of(store, scope) is None
            claim = await store.claim(f"s{i}:a", expires_at=later(), fence=Fence(scope, 1))
            assert claim.won, scope
            assert await epoch_of(store, scope) == 1
        await store.fence("t\ud800", 4)
        assert await epoch_of(store, "t") == 9
        assert await epoch_of(store, "t1") == 1
        assert await epoch_of(store, "t\ud800") == 4


@pytest.mark.parametrize(
    ("scope", "epoch", "error", "match"),
    [
        ("", 1, ValueError, "non-empty"),
        (b"t", 1, TypeError, "turn id"),
        ("t", -1, ValueError, "from 0 to"),
        ("t", 2**53, ValueError, "from 0 to"),
        ("t", True, TypeError, "must be an int"),
        ("t", "1", TypeError, "must be an int"),
        ("t", 1.0, TypeError, "must be an int"),
    ],
)
async def test_a_bad_fence_is_a_clear_error(
    anyio_backend: str, store: OutcomeStore, scope: Any, epoch: Any, error: type, match: str
) -> None:
    with pytest.raises(error, match=match):
        Fence(scope, epoch)
    with anyio.fail_after(DEADLINE), pytest.raises(error, match=match):
        await store.fence(scope, epoch)
    assert Fence("t", 2**53 - 1).epoch == 2**53 - 1


async def test_the_largest_epoch_is_kept_exactly(anyio_backend: str, store: OutcomeStore) -> None:
    top = 2**53 - 1
    with anyio.fail_after(DEADLINE):
        await store.fence("t", top - 1)
        assert (await store.claim("t:a", expires_at=later(), fence=Fence("t", top))).won
        assert await epoch_of(store, "t") == top
        assert await store.claim("t:b", expires_at=later(), fence=Fence("t", top - 1)) == FENCED


# -- a version 1 store still works where nothing fences ------------------------------------------


async def test_a_version_1_store_still_guards_a_resume(anyio_backend: str) -> None:
    ran: list[str] = []

    async def transfer(to: str) -> str:
        ran.append(to)
        return f"sent to {to}"

    store = V1Store()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no deprecation: version 1 is still a store
        runner = ToolRunner(
            [tool(transfer, needs_approval=True)],
            approval_secret=b"a contract test secret (32 bytes)",
            outcome_store=store,
        )
    assert runner.outcome_store is store
    control = RunControl(defer_approvals=True)
    tracker = ToolCallTracker()
    items = [*call_events("c1", "transfer", {"to": "bob"}), {"type": "end"}]
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, from_list(items))
            await runner.run(tracker, control=control)
        pending = control.pending
        assert pending is not None
        first = await runner.resume(pending, [pending.approve("c1")])
        again = await runner.resume(pending, [pending.approve("c1")])
        guard = StoreGuard(store, "n", later())
        assert await guard.claim(ToolCall(id="x", name="transfer", status=Status.RUNNING)) is None
    assert ran == ["bob"]
    assert first[0].status is again[0].status is Status.DONE
    assert again[0].result == "sent to bob"


async def test_the_in_memory_store_keeps_a_fence_as_long_as_its_keys(anyio_backend: str) -> None:
    start = datetime(2026, 12, 7, tzinfo=timezone.utc)
    now = [start]
    store = InMemoryOutcomeStore(clock=lambda: now[0])
    with anyio.fail_after(DEADLINE):
        keys_until = start + timedelta(days=3)
        assert (await store.claim("t:a", expires_at=keys_until, fence=Fence("t", 2))).won
        await store.fence("u", 1)  # no key: kept a day
        await store.fence("t", 2)  # not shortened to a day
        now[0] = start + timedelta(hours=23)
        assert await store.epoch("u") == 1
        now[0] = start + timedelta(hours=25)
        assert await store.epoch("u") is None
        assert await store.epoch("t") == 2
        now[0] = keys_until - timedelta(seconds=1)
        assert await store.claim("t:b", expires_at=keys_until, fence=Fence("t", 1)) == FENCED
        now[0] = keys_until
        assert await store.epoch("t") is None  # gone with its keys
        assert len(store) == 0
        assert store._fences == {}  # nothing left behind
