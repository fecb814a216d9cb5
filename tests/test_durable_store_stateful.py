"""A hypothesis state machine of the durable outcome stores: three owners (three stores on
one file or one Redis server, as three processes would be) claim, take over and record
keys while a clock moves and faults come and go: the SQLite file locked by somebody else,
or the Redis server killed with SIGKILL and restarted (AOF, ``appendfsync always``).

A model predicts every answer: a key nobody holds (or expired) is won with a fresh lease;
a held key reports its holder, lease and outcome; ``take_over`` wins only an expired lease
with no outcome; ``confirm`` renews the owner's lease of a key with no outcome; ``record``
stores the outcome and ends the lease; during a fault the call raises
:class:`DurableError` and changes nothing. Fencing: two scopes with an epoch each;
``fence`` raises one (never lowers it); a claim, take-over or confirm with an older fence
is refused and changes nothing, a newer one raises the epoch; ``record`` is never fenced;
a fence is forgotten once the claims it admitted have expired (and a day or ``ttl`` after
``fence``). Invariants: the file or the server holds
what the model says (on Redis: after every restart too, so nothing acknowledged is lost).
It runs on asyncio and trio, each through one blocking portal, with an injected clock
(leases never renewed by the keeper thread during a run).
"""

from __future__ import annotations

import contextlib
import sqlite3
import tempfile
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from _redis import RedisServer
from conftest import need_redis_server
from toolcall_tracker.durable import DurableError, RedisOutcomeStore, SQLiteOutcomeStore
from toolcall_tracker.runner import CallOutcome, Claim, Fence

OWNERS = ("p0", "p1", "p2")
KEYS = ("k0", "k1")
SCOPES = ("s0", "s1")
EPOCHS = st.none() | st.integers(0, 3)  # None: a claim without a fence
LEASE = 1000.0  # seconds of the fake clock; the keeper thread waits LEASE / 3 real ones
EXPIRES = 10_000.0  # seconds after the start when the keys expire


class StoreMachine(RuleBasedStateMachine):
    """The SQLite store (the fault: the file locked by another connection)."""

    backend = "asyncio"
    expiry = EXPIRES  # the keys' expiry, in seconds after the start
    record_ttl = 86400.0  # how long an outcome recorded for an unclaimed key is kept
    fault = "locked"  # what a DurableError during a fault says

    def __init__(self) -> None:
        super().__init__()
        self._portal_cm = start_blocking_portal(self.backend)
        self.portal: BlockingPortal = self._portal_cm.__enter__()
        self._dir = tempfile.TemporaryDirectory()
        self.path = Path(self._dir.name) / "s.db"
        self.now = self.first_time()
        self.start = self.now
        self.stores = {owner: self.make_store(owner) for owner in OWNERS}
        # the model: key -> [holder, lease_until, outcome or None, expires_at]
        self.model: dict[str, list[Any]] = {}
        # scope -> [epoch, kept until]
        self.fences: dict[str, list[Any]] = {}
        self.locker: sqlite3.Connection | None = None

    # -- the backend: SQLite here, Redis in RedisStoreMachine ------------------------------

    def first_time(self) -> float:
        return 1_000_000.0

    def make_store(self, owner: str) -> Any:
        return SQLiteOutcomeStore(
            self.path, owner=owner, lease=LEASE, wait=0, busy_timeout=0, clock=self.clock
        )

    @property
    def faulty(self) -> bool:
        return self.locker is not None

    def break_it(self) -> None:
        if self.locker is None:
            self.locker = sqlite3.connect(self.path, isolation_level=None)
            self.locker.execute("BEGIN EXCLUSIVE")

    def repair(self) -> None:
        if self.locker is not None:
            self.locker.execute("ROLLBACK")
            self.locker.close()
            self.locker = None

    def stored(self) -> dict[str, str | None]:
        """Every key's outcome text as the store holds it."""
        conn = sqlite3.connect(self.path)
        try:
            return dict(conn.execute("SELECT key, outcome FROM toolcall_outcomes").fetchall())
        finally:
            conn.close()

    def stored_epochs(self) -> dict[str, int]:
        """Every live scope's epoch as the store holds it."""
        conn = sqlite3.connect(self.path)
        try:
            rows = conn.execute(
                "SELECT scope, epoch FROM toolcall_fences WHERE expires_at > ?", (self.now,)
            ).fetchall()
        finally:
            conn.close()
        return dict(rows)

    def close_backend(self) -> None:
        self.repair()
        for store in self.stores.values():
            store.close()

    # -- the machine -----------------------------------------------------------------------

    def clock(self) -> float:
        return self.now

    def teardown(self) -> None:
        try:
            self.close_backend()
        finally:
            self._portal_cm.__exit__(None, None, None)
            self._dir.cleanup()

    def expires(self) -> datetime:
        return datetime.fromtimestamp(self.start + self.expiry, timezone.utc)

    def _live(self, key: str) -> list[Any] | None:
        entry = self.model.get(key)
        if entry is not None and self.now >= entry[3]:
            return None  # expired keys are forgotten
        return entry

    def _fence(self, scope: str) -> list[Any] | None:
        entry = self.fences.get(scope)
        if entry is not None and self.now >= entry[1]:
            return None  # forgotten: its keys expired
        return entry

    def _admit(self, scope: str, epoch: int | None, keep_until: float) -> bool:
        """The model of a fence check: ``False`` if refused; else the epoch raised."""
        if epoch is None:
            return True
        entry = self._fence(scope)
        if entry is None:
            self.fences[scope] = [epoch, keep_until]
            return True
        if entry[0] > epoch:
            return False
        self.fences[scope] = [max(entry[0], epoch), max(entry[1], keep_until)]
        return True

    @staticmethod
    def _fence_of(scope: str, epoch: int | None) -> Fence | None:
        return None if epoch is None else Fence(scope, epoch)

    @rule(seconds=st.sampled_from([1.0, LEASE / 2, LEASE * 2]))
    def advance(self, seconds: float) -> None:
        self.now += seconds

    @rule()
    def lock(self) -> None:
        self.break_it()

    @rule()
    def unlock(self) -> None:
        self.repair()

    @rule(
        owner=st.sampled_from(OWNERS),
        key=st.sampled_from(KEYS),
        scope=st.sampled_from(SCOPES),
        epoch=EPOCHS,
    )
    def claim(self, owner: str, key: str, scope: str, epoch: int | None) -> None:
        store, fence = self.stores[owner], self._fence_of(scope, epoch)
        if self.faulty:
            with pytest.raises(DurableError, match=self.fault):
                self.portal.call(lambda: store.claim(key, expires_at=self.expires(), fence=fence))
            return
        got = self.portal.call(lambda: store.claim(key, expires_at=self.expires(), fence=fence))
        if not self._admit(scope, epoch, self.start + self.expiry):
            assert got == Claim(won=False, fenced=True)
            return
        assert not got.fenced
        entry = self._live(key)
        if entry is None:
            assert got.won
            assert got.owner == owner
            self.model[key] = [owner, self.now + LEASE, None, self.start + self.expiry]
            return
        holder, lease_until, outcome, _ = entry
        assert not got.won
        assert got.owner == holder
        assert got.outcome == outcome
        expired = got.lease_expired(datetime.fromtimestamp(self.now, timezone.utc))
        assert expired == (lease_until <= self.now)

    @rule(
        owner=st.sampled_from(OWNERS),
        key=st.sampled_from(KEYS),
        scope=st.sampled_from(SCOPES),
        epoch=EPOCHS,
    )
    def take_over(self, owner: str, key: str, scope: str, epoch: int | None) -> None:
        store, fence = self.stores[owner], self._fence_of(scope, epoch)
        if self.faulty:
            with pytest.raises(DurableError, match=self.fault):
                self.portal.call(
                    lambda: store.take_over(key, expires_at=self.expires(), fence=fence)
                )
            return
        got = self.portal.call(lambda: store.take_over(key, expires_at=self.expires(), fence=fence))
        if not self._admit(scope, epoch, self.start + self.expiry):
            assert got == Claim(won=False, fenced=True)
            return
        assert not got.fenced
        entry = self._live(key)
        if entry is not None and entry[2] is None and entry[1] <= self.now:
            assert got.won
            self.model[key] = [owner, self.now + LEASE, None, entry[3]]
        else:
            assert not got.won
            if entry is not None:
                assert got.owner == entry[0]

    @rule(
        owner=st.sampled_from(OWNERS),
        key=st.sampled_from(KEYS),
        scope=st.sampled_from(SCOPES),
        epoch=EPOCHS,
    )
    def confirm(self, owner: str, key: str, scope: str, epoch: int | None) -> None:
        store, fence = self.stores[owner], self._fence_of(scope, epoch)
        if self.faulty:
            with pytest.raises(DurableError, match=self.fault):
                self.portal.call(store.confirm, key, fence)
            return
        got = self.portal.call(store.confirm, key, fence)
        if not self._admit(scope, epoch, self.now + self.record_ttl):
            assert got is False
            return
        entry = self._live(key)
        held = entry is not None and entry[0] == owner and entry[2] is None
        assert got is held
        if entry is not None and held:
            entry[1] = self.now + LEASE

    @rule(owner=st.sampled_from(OWNERS), scope=st.sampled_from(SCOPES), epoch=st.integers(0, 3))
    def fence(self, owner: str, scope: str, epoch: int) -> None:
        store = self.stores[owner]
        if self.faulty:
            with pytest.raises(DurableError, match=self.fault):
                self.portal.call(store.fence, scope, epoch)
            return
        self.portal.call(store.fence, scope, epoch)
        entry = self._fence(scope)
        keep = self.now + self.record_ttl
        if entry is None:
            self.fences[scope] = [epoch, keep]
        else:
            self.fences[scope] = [max(entry[0], epoch), max(entry[1], keep)]

    @rule(owner=st.sampled_from(OWNERS), key=st.sampled_from(KEYS), value=st.integers(0, 9))
    def record(self, owner: str, key: str, value: int) -> None:
        store = self.stores[owner]
        outcome = CallOutcome.of(value, None)
        if self.faulty:
            with pytest.raises(DurableError, match=self.fault):
                self.portal.call(store.record, key, outcome)
            return
        self.portal.call(store.record, key, outcome)
        entry = self._live(key)
        if entry is None:
            # never claimed (or expired): the store keeps the outcome for its own time
            self.model[key] = [owner, 0.0, outcome, self.now + self.record_ttl]
        else:
            entry[1] = 0.0
            entry[2] = outcome

    @invariant()
    def the_store_holds_the_epochs(self) -> None:
        if self.faulty:
            return
        want = {scope: self._fence(scope) for scope in SCOPES}
        assert self.stored_epochs() == {s: e[0] for s, e in want.items() if e is not None}

    @invariant()
    def the_file_holds_the_model(self) -> None:
        if self.faulty:
            return
        rows = self.stored()
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


class RedisStoreMachine(StoreMachine):
    """The Redis store on a private server (the fault: the server killed with SIGKILL, then
    restarted on the same data). Its keys expire by the server's real clock, so the model's
    clock starts now and never reaches the expiry (expiry has its own tests)."""

    expiry = 1e7
    record_ttl = 30 * 86400.0
    fault = "Redis server"

    def first_time(self) -> float:
        need_redis_server()
        self.server = RedisServer(Path(self._dir.name)).start()
        self.prefix = f"stateful:{uuid.uuid4().hex}:"
        self.down = False
        return float(int(time.time()))  # whole seconds: the leases are in milliseconds

    def make_store(self, owner: str) -> Any:
        return RedisOutcomeStore(
            self.server.url, owner=owner, lease=LEASE, wait=0, clock=self.clock, prefix=self.prefix
        )

    @property
    def faulty(self) -> bool:
        return self.down

    def break_it(self) -> None:
        self.server.kill()
        self.down = True

    def repair(self) -> None:
        if self.down:
            self.server.start()
            self.down = False
            # The first command on a connection the old server closed may fail (it may have
            # been sent: never retried); then the store reconnects. Read through each one.
            for store in self.stores.values():
                with contextlib.suppress(DurableError):
                    self.portal.call(store.get, "k0")

    def stored(self) -> dict[str, str | None]:
        import redis

        client = redis.Redis.from_url(self.server.url)
        try:
            return {
                key: client.hget(f"{self.prefix}outcome:{key}", "outcome") for key in self.model
            }
        finally:
            client.close()

    def stored_epochs(self) -> dict[str, int]:
        import redis

        client = redis.Redis.from_url(self.server.url)
        try:
            got = {scope: client.get(f"{self.prefix}fence:{scope}") for scope in SCOPES}
        finally:
            client.close()
        return {scope: int(text) for scope, text in got.items() if text is not None}

    def close_backend(self) -> None:
        try:
            for store in self.stores.values():
                self.portal.call(store.aclose)  # its asyncio client, on its loop
        finally:
            self.server.stop()


class TrioRedisStoreMachine(RedisStoreMachine):
    backend = "trio"


TestStoreAsyncio = StoreMachine.TestCase
TestStoreAsyncio.settings = settings(max_examples=25, stateful_step_count=25, deadline=None)
TestStoreTrio = TrioStoreMachine.TestCase
TestStoreTrio.settings = settings(max_examples=25, stateful_step_count=25, deadline=None)
TestRedisStoreAsyncio = RedisStoreMachine.TestCase
TestRedisStoreAsyncio.settings = settings(max_examples=20, stateful_step_count=25, deadline=None)
TestRedisStoreTrio = TrioRedisStoreMachine.TestCase
TestRedisStoreTrio.settings = settings(max_examples=20, stateful_step_count=25, deadline=None)
