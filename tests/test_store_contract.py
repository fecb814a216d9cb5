"""The outcome store contract, for every store: the in-memory one here; the durable stores
of later issues add their factory to ``STORES`` and inherit every test.

Each test runs on asyncio and trio, bounded by ``anyio.fail_after``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import anyio
import pytest

from conftest import DEADLINE
from toolcall_tracker.durable import RedisOutcomeStore, SQLiteOutcomeStore
from toolcall_tracker.failures import ApprovalDenied, ToolRaised
from toolcall_tracker.runner import CallOutcome, Claim, InMemoryOutcomeStore, OutcomeStore

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
