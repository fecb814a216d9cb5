"""A hypothesis state machine of the SQLite outcome store: three owners (three stores on
one file, as three processes would be) claim, take over and record keys while a clock
moves and the file is sometimes locked by somebody else.

A model predicts every answer: a key nobody holds (or expired) is won with a fresh lease;
a held key reports its holder, lease and outcome; ``take_over`` wins only an expired lease
with no outcome; ``record`` stores the outcome and ends the lease; a locked file makes the
call raise :class:`DurableError` and changes nothing. Invariants: the file holds what the
model says. It runs on asyncio and trio, each through one blocking portal, with an
injected clock (leases never renewed by the keeper thread during a run).
"""

from __future__ import annotations

import sqlite3
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from toolcall_tracker.durable import DurableError, SQLiteOutcomeStore
from toolcall_tracker.runner import CallOutcome

OWNERS = ("p0", "p1", "p2")
KEYS = ("k0", "k1")
LEASE = 1000.0  # seconds of the fake clock; the keeper thread waits LEASE / 3 real ones
EXPIRES = 10_000.0  # seconds after the start when the keys expire


class StoreMachine(RuleBasedStateMachine):
    backend = "asyncio"

    def __init__(self) -> None:
        super().__init__()
        self._portal_cm = start_blocking_portal(self.backend)
        self.portal: BlockingPortal = self._portal_cm.__enter__()
        self._dir = tempfile.TemporaryDirectory()
        self.path = Path(self._dir.name) / "s.db"
        self.now = 1_000_000.0
        self.start = self.now
        self.stores = {
            owner: SQLiteOutcomeStore(
                self.path, owner=owner, lease=LEASE, wait=0, busy_timeout=0, clock=self.clock
            )
            for owner in OWNERS
        }
        # the model: key -> [holder, lease_until, outcome or None]
        self.model: dict[str, list[Any]] = {}
        self.locker: sqlite3.Connection | None = None

    def clock(self) -> float:
        return self.now

    def teardown(self) -> None:
        if self.locker is not None:
            self.locker.rollback()
            self.locker.close()
        for store in self.stores.values():
            store.close()
        self._portal_cm.__exit__(None, None, None)
        self._dir.cleanup()

    def expires(self) -> datetime:
        return datetime.fromtimestamp(self.start + EXPIRES, timezone.utc)

    def _live(self, key: str) -> list[Any] | None:
        entry = self.model.get(key)
        if entry is not None and self.now >= self.start + EXPIRES:
            return None  # expired keys are forgotten
        return entry

    @rule(seconds=st.sampled_from([1.0, LEASE / 2, LEASE * 2]))
    def advance(self, seconds: float) -> None:
        self.now += seconds

    @rule()
    def lock(self) -> None:
        if self.locker is None:
            self.locker = sqlite3.connect(self.path, isolation_level=None)
            self.locker.execute("BEGIN EXCLUSIVE")

    @rule()
    def unlock(self) -> None:
        if self.locker is not None:
            self.locker.execute("ROLLBACK")
            self.locker.close()
            self.locker = None

    @rule(owner=st.sampled_from(OWNERS), key=st.sampled_from(KEYS))
    def claim(self, owner: str, key: str) -> None:
        store = self.stores[owner]
        if self.locker is not None:
            with pytest.raises(DurableError, match="locked"):
                self.portal.call(lambda: store.claim(key, expires_at=self.expires()))
            return
        got = self.portal.call(lambda: store.claim(key, expires_at=self.expires()))
        entry = self._live(key)
        if entry is None:
            assert got.won
            assert got.owner == owner
            self.model[key] = [owner, self.now + LEASE, None]
            return
        holder, lease_until, outcome = entry
        assert not got.won
        assert got.owner == holder
        assert got.outcome == outcome
        expired = got.lease_expired(datetime.fromtimestamp(self.now, timezone.utc))
        assert expired == (lease_until <= self.now)

    @rule(owner=st.sampled_from(OWNERS), key=st.sampled_from(KEYS))
    def take_over(self, owner: str, key: str) -> None:
        store = self.stores[owner]
        if self.locker is not None:
            with pytest.raises(DurableError, match="locked"):
                self.portal.call(lambda: store.take_over(key, expires_at=self.expires()))
            return
        got = self.portal.call(lambda: store.take_over(key, expires_at=self.expires()))
        entry = self._live(key)
        if entry is not None and entry[2] is None and entry[1] <= self.now:
            assert got.won
            self.model[key] = [owner, self.now + LEASE, None]
        else:
            assert not got.won
            if entry is not None:
                assert got.owner == entry[0]

    @rule(owner=st.sampled_from(OWNERS), key=st.sampled_from(KEYS), value=st.integers(0, 9))
    def record(self, owner: str, key: str, value: int) -> None:
        store = self.stores[owner]
        outcome = CallOutcome.of(value, None)
        if self.locker is not None:
            with pytest.raises(DurableError, match="locked"):
                self.portal.call(store.record, key, outcome)
            return
        self.portal.call(store.record, key, outcome)
        entry = self._live(key)
        if entry is None:
            self.model[key] = [owner, 0.0, outcome]
        else:
            entry[1] = 0.0
            entry[2] = outcome

    @invariant()
    def the_file_holds_the_model(self) -> None:
        if self.locker is not None:
            return
        conn = sqlite3.connect(self.path)
        try:
            rows = dict(conn.execute("SELECT key, outcome FROM toolcall_outcomes").fetchall())
        finally:
            conn.close()
        for key, entry in self.model.items():
            if self._live(key) is None:
                continue
            text = rows.get(key)
            want = entry[2]
            assert (text is None) == (want is None)
            if want is not None:
                assert CallOutcome.model_validate_json(text) == want


class TrioStoreMachine(StoreMachine):
    backend = "trio"


TestStoreAsyncio = StoreMachine.TestCase
TestStoreAsyncio.settings = settings(max_examples=25, stateful_step_count=25, deadline=None)
TestStoreTrio = TrioStoreMachine.TestCase
TestStoreTrio.settings = settings(max_examples=25, stateful_step_count=25, deadline=None)
