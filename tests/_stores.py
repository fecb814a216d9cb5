"""Outcome stores for the resume tests (not a test module): one that fails on demand (it
speaks protocol version 2 and forwards fences), one written for protocol version 1 (no
fencing), and one written for the old ``FinishedCalls`` protocol."""

from __future__ import annotations

from datetime import datetime

from toolcall_tracker.runner import CallOutcome, Claim, Fence, InMemoryOutcomeStore


class FlakyStore:
    """An in-memory store whose claim / record raise for the keys (by call id) listed."""

    def __init__(self) -> None:
        self.inner = InMemoryOutcomeStore()
        self.fail_claim: set[str] = set()
        self.fail_record: set[str] = set()
        self.log: list[tuple[str, str]] = []

    async def claim(self, key: str, *, expires_at: datetime, fence: Fence | None = None) -> Claim:
        call_id = _call_id(key)
        self.log.append(("claim", call_id))
        if call_id in self.fail_claim:
            raise ConnectionError("store down")
        return await self.inner.claim(key, expires_at=expires_at, fence=fence)

    async def fence(self, scope: str, epoch: int) -> None:
        self.log.append(("fence", scope))
        await self.inner.fence(scope, epoch)

    async def record(self, key: str, outcome: CallOutcome) -> None:
        call_id = _call_id(key)
        self.log.append(("record", call_id))
        if call_id in self.fail_record:
            raise ConnectionError("store down")
        await self.inner.record(key, outcome)

    async def get(self, key: str) -> CallOutcome | None:
        return await self.inner.get(key)


class V1Store:
    """A store written for :class:`~toolcall_tracker.runner.OutcomeStore` protocol
    version 1: ``claim`` takes no ``fence``, and there is no ``fence`` method."""

    def __init__(self) -> None:
        self.inner = InMemoryOutcomeStore()

    async def claim(self, key: str, *, expires_at: datetime) -> Claim:
        return await self.inner.claim(key, expires_at=expires_at)

    async def record(self, key: str, outcome: CallOutcome) -> None:
        await self.inner.record(key, outcome)

    async def get(self, key: str) -> CallOutcome | None:
        return await self.inner.get(key)


class OldStore:
    """A store written for the old ``FinishedCalls`` protocol (a test-and-set ``add``)."""

    def __init__(self) -> None:
        self.keys: set[str] = set()

    async def add(self, key: str) -> bool:
        if key in self.keys:
            return False
        self.keys.add(key)
        return True


def _call_id(key: str) -> str:
    """The call id in a store key: ``"<turn>:<call id>:<digest>"``, or ``"<nonce>:<call
    id>"`` for a turn named by its nonce (ids without ``:``)."""
    parts = key.split(":")
    return parts[1]
