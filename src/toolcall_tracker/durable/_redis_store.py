"""An :class:`~toolcall_tracker.runner.OutcomeStore` on a Redis server, with leases.

Theory of operation. The same protocol as :class:`SQLiteOutcomeStore`, shared by every
server that can reach the Redis server. One hash per key, ``{prefix}outcome:{key}``,
with the fields ``owner``, ``lease`` (the owner's lease deadline, in milliseconds of the
Redis server's clock) and ``outcome`` (JSON, absent until recorded). Every step that
decides is one Lua script, so Redis runs it atomically (no other command in between):

==============  ===========================================================================
script          what it does
==============  ===========================================================================
``claim``       no hash: create it (owner = this store, lease = now + lease) and expire it
                at the caller's ``expires_at`` (``PEXPIREAT``): won. Else: lost, and the
                hash's owner, lease and outcome so far
``take_over``   the hash has no outcome and its lease ran out: this store becomes the owner
                with a fresh lease (won); else lost, as ``claim``
``confirm``     the hash is this store's and has no outcome: its lease is pushed forward
``renew``       ``confirm`` for every key the lease keeper holds
``record``      write the outcome and end the lease; a key never claimed (or expired) is
                created with the store's ``ttl``
``fence``       raise the scope's epoch (a string key ``{prefix}fence:{scope}``) to at
                least the one given (a max, never lower)
==============  ===========================================================================

Fencing (protocol version 2): ``claim``, ``take_over`` and ``confirm`` given a
:class:`~toolcall_tracker.runner.Fence` read the scope's epoch in the same script, before
anything else: an older epoch is refused (nothing written, ``Claim.fenced``; ``confirm``
answers ``False``), a newer one raised. The fence key expires with the latest
``expires_at`` of the claims it admitted (never sooner than the keys it protects), and at
least the store's ``ttl`` after ``fence`` or a fenced ``confirm``.

Time is the Redis server's (``TIME`` inside the scripts), so the servers sharing the store
agree on whose lease ran out; :attr:`Claim.lease_until` is that deadline as a UTC time,
which the caller compares with its own clock (keep the hosts' clocks synchronised). A lost
claim whose holder's lease is live and has no outcome waits, bounded by ``wait``, for the
outcome (as the SQLite store does). Keys expire with the caller's ``expires_at``, never
for lack of room: configure the server with ``maxmemory-policy noeviction`` (an evicted
claim could let a tool run twice) and with AOF (``appendonly yes``, ``appendfsync
always``) so an acknowledged claim survives a crash of the Redis server.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any, Final

import anyio
import anyio.to_thread

from ..runner import CallOutcome, Claim, Fence
from ._closing import Closing
from ._leases import LeaseKeeper, check_timing, wait_for_outcome
from ._redis import Connection, key_bytes

__all__ = ["RedisOutcomeStore"]

# now, in ms: the Redis server's clock, or the store's injected clock (the last argument)
_NOW: Final = """
local now = tonumber(ARGV[#ARGV])
if not now then
  local t = redis.call('TIME')
  now = t[1] * 1000 + math.floor(t[2] / 1000)
end
"""
# admit(fence key, epoch, keep until (ms, absolute)): false if the scope's epoch is newer
# than ``epoch``; else raise it to ``epoch`` and keep the key until then at least (the
# server's real clock: PEXPIREAT is absolute, whatever clock the leases use)
_ADMIT: Final = """
local function realnow()
  local t = redis.call('TIME')
  return t[1] * 1000 + math.floor(t[2] / 1000)
end
local function admit(fkey, epoch, keep)
  local e = tonumber(epoch)
  local cur = tonumber(redis.call('GET', fkey))
  if cur and cur > e then
    return false
  end
  if not cur or cur < e then
    redis.call('SET', fkey, epoch, 'KEEPTTL')
  end
  local ttl = redis.call('PTTL', fkey)
  if ttl < 0 or realnow() + ttl < keep then
    redis.call('PEXPIREAT', fkey, keep)
  end
  return true
end
"""
# KEYS: the outcome hash [, the fence key]; ARGV: owner, lease, expires_at, epoch, now
_CLAIM: Final = (
    _NOW
    + _ADMIT
    + """
if KEYS[2] and not admit(KEYS[2], ARGV[4], tonumber(ARGV[3])) then
  return {2}
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  local lease = now + tonumber(ARGV[2])
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'lease', lease)
  redis.call('PEXPIREAT', KEYS[1], ARGV[3])
  return {1, ARGV[1], lease, false}
end
local v = redis.call('HMGET', KEYS[1], 'owner', 'lease', 'outcome')
return {0, v[1], v[2], v[3]}
"""
)
_TAKE_OVER: Final = (
    _NOW
    + _ADMIT
    + """
if KEYS[2] and not admit(KEYS[2], ARGV[4], tonumber(ARGV[3])) then
  return {2}
end
local v = redis.call('HMGET', KEYS[1], 'owner', 'lease', 'outcome')
if v[1] and not v[3] and tonumber(v[2]) <= now then
  local lease = now + tonumber(ARGV[2])
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'lease', lease)
  return {1, ARGV[1], lease, false}
end
return {0, v[1], v[2], v[3]}
"""
)
_CONFIRM: Final = (
    _NOW
    + """
local n = 0
for _, key in ipairs(KEYS) do
  local v = redis.call('HMGET', key, 'owner', 'outcome')
  if v[1] == ARGV[1] and not v[2] then
    redis.call('HSET', key, 'lease', now + tonumber(ARGV[2]))
    n = n + 1
  end
end
return n
"""
)
# KEYS: the outcome hash, the fence key; ARGV: owner, lease, ttl, epoch, now
_CONFIRM_FENCED: Final = (
    _NOW
    + _ADMIT
    + """
if not admit(KEYS[2], ARGV[4], realnow() + tonumber(ARGV[3])) then
  return -1
end
local v = redis.call('HMGET', KEYS[1], 'owner', 'outcome')
if v[1] == ARGV[1] and not v[2] then
  redis.call('HSET', KEYS[1], 'lease', now + tonumber(ARGV[2]))
  return 1
end
return 0
"""
)
# KEYS: the fence key; ARGV: epoch, ttl
_FENCE: Final = (
    _ADMIT
    + """
admit(KEYS[1], ARGV[1], realnow() + tonumber(ARGV[2]))
return 1
"""
)
_RECORD: Final = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], 'outcome', ARGV[1], 'lease', 0)
else
  redis.call('HSET', KEYS[1], 'owner', ARGV[2], 'lease', 0, 'outcome', ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return 1
"""


class RedisOutcomeStore(Closing):
    """Claims and outcomes of tool calls on a Redis server, shared by every server.

    A :class:`~toolcall_tracker.runner.LeasedOutcomeStore`: pass it as
    ``ToolRunner(outcome_store=...)`` or to a :class:`~toolcall_tracker.durable.DurableTurn`.
    Exactly one store wins each key, whichever server asks first. Close it to stop its
    lease keeper: ``async with`` (or :meth:`aclose`) from async code, ``with`` (or
    :meth:`close`) otherwise. Needs redis-py (``pip install 'toolcall-tracker[redis]'``).

    Args:
        url: the server: ``redis://host:port/db``, ``rediss://...`` (TLS) or
            ``unix:///path/to/redis.sock?db=N``.
        owner: this store's name in the claims it wins (default: host, pid and a random
            part).
        lease: seconds a claim stays live without renewal (renewed every third of it while
            its tool runs). A process that died leaves its calls in doubt this long after.
        wait: the most seconds a lost claim waits for a live holder's outcome (default:
            twice the lease); then the call is reported in doubt.
        poll: seconds between two looks while waiting.
        ttl: seconds an outcome recorded for a key that was never claimed here (or had
            expired) is kept; claimed keys live until the claim's ``expires_at``.
        prefix: the start of every key this store writes (``{prefix}outcome:{key}``).
        clock: the wall-clock time in seconds, for tests (default: the Redis server's
            clock, shared by every server using it).

    Raises:
        ValueError: a bad URL or setting.
        ImportError: redis-py is not installed.
    """

    def __init__(
        self,
        url: str,
        *,
        owner: str | None = None,
        lease: float = 30.0,
        wait: float | None = None,
        poll: float = 0.05,
        ttl: float = 30 * 86400,
        prefix: str = "toolcall-tracker:",
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._wait = check_timing(lease, wait, poll)
        if not ttl > 0:
            raise ValueError(f"ttl must be a positive number of seconds, not {ttl!r}")
        self._conn = Connection(url)
        self.owner = owner or f"{os.uname().nodename}:{os.getpid()}:{secrets.token_hex(4)}"
        self.prefix = prefix
        self._lease_ms = max(1, round(lease * 1000))
        self._ttl_ms = max(1, round(ttl * 1000))
        self._poll = poll
        self._clock = clock
        self._keeper = LeaseKeeper(lease, self._renew)

    @property
    def url(self) -> str:
        """The Redis server's URL."""
        return self._conn.url

    # -- the protocol ------------------------------------------------------------------

    async def claim(self, key: str, *, expires_at: datetime, fence: Fence | None = None) -> Claim:
        """Take ``key`` until ``expires_at``; if somebody holds it with a live lease and
        no outcome, wait (at most ``wait`` seconds) for its outcome. With a ``fence``
        older than its scope's epoch: refused at once (``Claim.fenced``, nothing written);
        else the scope's epoch is raised to it, in the same script."""
        claim = await self._script("claiming a call", _CLAIM, key, expires_at, fence)

        async def read() -> Claim:
            return await self._read(key)

        return await wait_for_outcome(claim, read, self._now, wait=self._wait, poll=self._poll)

    async def take_over(
        self, key: str, *, expires_at: datetime, fence: Fence | None = None
    ) -> Claim:
        """Take ``key`` if its lease ran out with no outcome (for an idempotent tool whose
        earlier run is in doubt); else report it as :meth:`claim` does, without waiting.
        A ``fence`` is checked (and raises the scope's epoch) as in :meth:`claim`."""
        return await self._script("taking over a call", _TAKE_OVER, key, expires_at, fence)

    async def confirm(self, key: str, fence: Fence | None = None) -> bool:
        """Renew this store's lease on ``key`` now: ``True`` if it still holds the claim
        (no outcome recorded, not taken over by another owner), else ``False``; also
        ``False`` (nothing renewed) with a ``fence`` older than its scope's epoch."""
        if fence is None:
            keys, args = [self._key(key)], [self.owner, self._lease_ms, self._now_ms()]
            script = _CONFIRM
        else:
            keys = [self._key(key), self._fence_key(fence.scope)]
            args = [self.owner, self._lease_ms, self._ttl_ms, fence.epoch, self._now_ms()]
            script = _CONFIRM_FENCED
        done = await self._conn.call(
            "confirming a claim", lambda c: c.eval(script, len(keys), *keys, *args)
        )
        return int(done) == 1

    async def fence(self, scope: str, epoch: int) -> None:
        """Raise ``scope``'s epoch to at least ``epoch`` (never lower it), atomically: from
        then on every claim, take-over and confirm with an older fence of ``scope`` is
        refused. The key is kept at least ``ttl`` (and as long as the keys claimed under
        it)."""
        fence = Fence(scope, epoch)
        name = self._fence_key(fence.scope)
        await self._conn.call(
            "fencing a turn", lambda c: c.eval(_FENCE, 1, name, fence.epoch, self._ttl_ms)
        )

    async def epoch(self, scope: str) -> int | None:
        """``scope``'s epoch on the server (``None``: never fenced, or expired)."""
        name = self._fence_key(scope)
        text = await self._conn.call("reading a fence", lambda c: c.get(name))
        return None if text is None else int(text)

    async def record(self, key: str, outcome: CallOutcome) -> None:
        """Store the outcome of ``key`` and end its lease."""
        args = [self._key(key), outcome.model_dump_json(), self.owner, self._ttl_ms]
        try:
            await self._conn.call("recording an outcome", lambda c: c.eval(_RECORD, 1, *args))
        finally:
            self._keeper.release(key)

    async def get(self, key: str) -> CallOutcome | None:
        """The outcome recorded for ``key``, or ``None``."""
        name = self._key(key)
        text = await self._conn.call("reading an outcome", lambda c: c.hget(name, "outcome"))
        return None if text is None else CallOutcome.model_validate(json.loads(text))

    def close(self) -> None:
        """Stop renewing leases and close the connections (held claims then run out)."""
        self._keeper.stop()
        self._conn.close()

    async def aclose(self) -> None:
        """:meth:`close`, the event loop not waiting for the lease keeper."""
        await anyio.to_thread.run_sync(self._keeper.stop)
        await self._conn.aclose()

    # -- helpers ---------------------------------------------------------------------------

    def _key(self, key: str) -> bytes:
        return key_bytes(f"{self.prefix}outcome:{key}")

    def _fence_key(self, scope: str) -> bytes:
        return key_bytes(f"{self.prefix}fence:{scope}")

    def _now(self) -> datetime:
        clock = self._clock
        return datetime.now(timezone.utc) if clock is None else _utc(clock())

    def _now_ms(self) -> str:
        """The scripts' last argument: the injected clock's time, or ``""`` (the server's)."""
        clock = self._clock
        return "" if clock is None else str(round(clock() * 1000))

    async def _script(
        self, what: str, script: str, key: str, expires_at: datetime, fence: Fence | None
    ) -> Claim:
        """Run the claim or take-over ``script`` on ``key`` (and ``fence``'s key)."""
        at_ms = str(round(expires_at.timestamp() * 1000))
        keys = [self._key(key)]
        epoch = ""
        if fence is not None:
            keys.append(self._fence_key(fence.scope))
            epoch = str(fence.epoch)
        args = [self.owner, self._lease_ms, at_ms, epoch, self._now_ms()]
        reply = await self._conn.call(what, lambda c: c.eval(script, len(keys), *keys, *args))
        claim = _claim(reply)
        if claim.won:
            self._keeper.hold(key)
        return claim

    async def _read(self, key: str) -> Claim:
        name = self._key(key)
        fields = await self._conn.call(
            "reading a claim", lambda c: c.hmget(name, "owner", "lease", "outcome")
        )
        return _claim([0, *fields])

    def _renew(self, held: list[str]) -> None:
        """Push the leases of the ``held`` keys forward (on the lease keeper's thread)."""
        keys = [self._key(key) for key in held]
        now = self._now_ms()
        self._conn.run(
            "renewing leases",
            lambda c: c.eval(_CONFIRM, len(keys), *keys, self.owner, self._lease_ms, now),
        )


def _claim(reply: list[Any]) -> Claim:
    """A claim from a script's (or ``HMGET``'s) reply: won, owner, lease, outcome."""
    won, owner, lease, text = (list(reply) + [None] * 4)[:4]
    if won == 2:  # the script refused an older fence
        return Claim(won=False, fenced=True)
    if owner is None:  # no such key (expired meanwhile): nobody can name it any more
        return Claim(won=bool(won))
    outcome = None if text is None else CallOutcome.model_validate(json.loads(text))
    return Claim(
        won=bool(won),
        outcome=outcome,
        owner=owner.decode() if isinstance(owner, bytes) else str(owner),
        lease_until=_utc(int(lease) / 1000),
    )


def _utc(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, timezone.utc)
