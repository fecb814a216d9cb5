"""The outcome store: which calls of a resumed turn were claimed, and how they ended.

Resuming across requests must never run a call twice, even when a client retries a resume
or two servers receive the same decisions. That needs state on the server side, shared by
whoever may resume the turn: an :class:`OutcomeStore`. Its protocol is three operations on
a key (one per call of a turn, the same on every path that may run it:
:mod:`toolcall_tracker._keys`), and since version 2 a fence (see "Fencing" below):

- ``claim(key, expires_at=...)``: atomically take the key. The :class:`Claim` says whether
  this caller won it (then, and only then, it may run the tool) and, if somebody else holds
  it, the outcome recorded for it so far (``None``: claimed, no outcome yet). For a
  database: an insert that fails on a duplicate key, then a read.
- ``record(key, outcome)``: store the :class:`CallOutcome` of a claimed key, after the tool
  really finished (or after a denial).
- ``get(key)``: the recorded outcome, or ``None``.

What the runner does with each answer (see ``ToolRunner.resume``):

==========================================  =============================================
the store says                              the call
==========================================  =============================================
claim won                                   runs; its outcome is recorded afterwards
claim lost, outcome recorded                ends with the recorded outcome (not run again)
claim lost, no outcome                      ends ``in_doubt`` (not run: it may be running,
                                            or have run, elsewhere)
``claim`` raised                            ends ``claim_failed`` (``ClaimFailed``):
                                            nothing ran, a later resume may run it
``record`` raised after the tool ran        keeps its real outcome here; later claims find
                                            no outcome, so it is ``in_doubt``, never re-run
==========================================  =============================================

A key is kept until ``expires_at``, the expiry of the signed pending state it belongs to:
after that no resume of the turn verifies any more, so the key can never be claimed again
and may be forgotten. Stores evict by that expiry, never by count (evicting a live key by
count would let a retried resume run its call twice).

Outcomes are plain JSON (``CallOutcome.model_dump(mode="json")``), so any store can keep
them as text. The protocol leaves room for leases: a store may later add an owner and a
lease deadline to :class:`Claim` (fields with defaults) without changing these calls.

Fencing (protocol version 2, :data:`OUTCOME_STORE_PROTOCOL`). A writer that stalled (a
long pause, a stopped container) must not claim calls of a turn that another process has
taken over meanwhile. So every *scope* (a durable turn's id) has an *epoch* in the store,
a fencing token that only grows, and a claim may carry a :class:`Fence` (scope, epoch):

- ``fence(scope, epoch)`` raises the scope's epoch to at least ``epoch`` (never lowers
  it). A restore that takes a turn over calls it first.
- ``claim(key, expires_at=..., fence=Fence(scope, epoch))`` is refused when the scope's
  epoch is greater than ``epoch``: :class:`Claim` ``won=False, fenced=True``, nothing
  written. Otherwise it is an ordinary claim that also raises the scope's epoch to
  ``epoch`` (a claim fences older writers itself), in the same atomic step.
- A store with leases fences ``take_over`` and ``confirm`` the same way (``confirm``
  answers ``False``).
- ``record`` is never fenced: what really happened is always written.

A claim without a fence is never refused (the store does not know which scope a key
belongs to): fencing protects the writers that pass one. A store keeps a scope's epoch at
least as long as every key claimed under it (the latest ``expires_at`` of the claims it
admitted), and a while after ``fence`` (a day in memory and on SQLite, the Redis store's
``ttl``); a scope forgotten after that starts again from the next fence it is given.

A version 1 store (``claim`` without ``fence``, no ``fence`` method) keeps working
wherever nothing passes a fence (``ToolRunner.resume``): :func:`supports_fencing` tells
the two apart. ``isinstance(store, OutcomeStore)`` checks the version 1 methods only;
type checkers see the whole version 2 protocol.
"""

from __future__ import annotations

import heapq
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, cast, runtime_checkable

from pydantic import BaseModel, ConfigDict

from .. import failures as _failures  # noqa: F401 (registers the failure classes)
from .._jsonout import _jsonable
from .._registry import load_homes
from ..failures import CallFailure

__all__ = [
    "OUTCOME_STORE_PROTOCOL",
    "CallOutcome",
    "Claim",
    "ClaimFenced",
    "Fence",
    "InMemoryOutcomeStore",
    "LeasedOutcomeStore",
    "OutcomeStore",
    "supports_fencing",
]

OUTCOME_STORE_PROTOCOL: Final = 2
"""The version of the :class:`OutcomeStore` protocol this library speaks (2: fencing)."""

MAX_EPOCH: Final = 2**53 - 1
"""The largest epoch (exact in every store: a Lua number on Redis is a double)."""


class CallOutcome(BaseModel):
    """How a claimed call ended, as plain JSON a store can keep.

    Attributes:
        kind: ``"result"`` (the tool returned ``result``) or ``"failure"`` (the call ended
            ``error`` with ``failure``).
        result: the tool's result as plain JSON data (the one output rule of the library:
            NaN becomes ``null``, lone surrogates U+FFFD, objects their JSON form).
        failure: the failure's JSON form (``CallFailure.model_dump(mode="json")``, with its
            own ``kind``, ``message`` and fields).
    """

    model_config = ConfigDict(frozen=True)

    kind: Literal["result", "failure"]
    result: Any = None
    failure: dict[str, Any] | None = None

    @classmethod
    def of(cls, result: Any, failure: CallFailure | None) -> CallOutcome:
        """The outcome of a call that ended with ``result``, or with ``failure``."""
        if failure is not None:
            return cls(kind="failure", failure=_jsonable(failure))
        return cls(kind="result", result=_jsonable(result))

    def call_failure(self) -> CallFailure | None:
        """The failure as its :mod:`~toolcall_tracker.failures` class (``None`` for a
        result); a kind this version does not know comes back as a plain
        :class:`~toolcall_tracker.failures.CallFailure` with its kind and message."""
        if self.kind != "failure":
            return None
        data = dict(self.failure or {})
        kind = str(data.get("kind", "unknown"))
        known = _failure_classes().get(kind)
        if known is None:  # a provider's failure value whose home has not loaded yet
            load_homes()
            known = _failure_classes().get(kind)
        if known is not None:
            try:
                return known.model_validate(data)
            except ValueError:
                pass
        return CallFailure(kind=kind, message=str(data.get("message", "")))


@dataclass(frozen=True)
class Fence:
    """Who claims: the writer of turn ``scope`` at ``epoch`` (its fencing token).

    A store refuses a claim (``take_over``, ``confirm``) carrying a fence whose epoch is
    older than the scope's current epoch there (see the module documentation).

    Attributes:
        scope: the turn's id (any non-empty text).
        epoch: the writer's epoch: 1 for the turn's first writer, one more for each
            restore that took it over (an integer from 0 to ``2**53 - 1``).

    Raises:
        TypeError: ``scope`` is not a string or ``epoch`` not an integer.
        ValueError: ``scope`` is empty or ``epoch`` out of range.
    """

    scope: str
    epoch: int

    def __post_init__(self) -> None:
        _check_fence(self.scope, self.epoch)


class ClaimFenced(RuntimeError):
    """A store refused a claim carrying an older :class:`Fence` than its turn's epoch: the
    claimer was superseded (a restore took the turn over elsewhere); nothing was taken, and
    the call must not run here. A durable turn raises it as ``TurnSuperseded``."""


@dataclass(frozen=True)
class Claim:
    """The answer to :meth:`OutcomeStore.claim`.

    Attributes:
        won: ``True``: the caller holds the key now and may run the call. ``False``:
            somebody claimed it before, or the claim was fenced.
        outcome: when not won, the outcome recorded so far (``None``: none yet).
        owner: who holds the key (a store with leases says; ``None``: not told).
        lease_until: when the holder's lease ends (UTC), for a store with leases whose
            holders renew it while their tool runs; ``None``: the store has no leases.
            A lost claim with no outcome and a lease in the past is "in doubt": its
            holder stopped without recording an outcome.
        fenced: the claim carried a :class:`Fence` whose epoch is older than the scope's
            current epoch in the store: nothing was taken or read (``won`` is ``False``,
            ``outcome`` ``None``): the claimer was superseded and must stop.
    """

    won: bool
    outcome: CallOutcome | None = None
    owner: str | None = None
    lease_until: datetime | None = None
    fenced: bool = False

    def lease_expired(self, now: datetime | None = None) -> bool:
        """Whether a lost claim's holder stopped renewing its lease (``False`` without a
        lease)."""
        if self.lease_until is None:
            return False
        return self.lease_until <= (now or _utcnow())


@runtime_checkable
class OutcomeStore(Protocol):
    """Where a resume claims each call before running it and records how it ended.

    Protocol version 2 (:data:`OUTCOME_STORE_PROTOCOL`): version 1 plus fencing (the
    ``fence`` argument of :meth:`claim` and the :meth:`fence` method). Implement it over
    a database shared by the servers that may resume a turn (the in-memory default is
    per process). See the module documentation for the contract.

    ``isinstance`` checks the version 1 methods (``claim``, ``record``, ``get``), so a
    version 1 store is still accepted where nothing fences; :func:`supports_fencing` tells
    whether a store has version 2's :meth:`fence`.
    """

    async def claim(self, key: str, *, expires_at: datetime, fence: Fence | None = None) -> Claim:
        """Atomically take ``key`` (kept until ``expires_at``, UTC), or report who has it.

        With a ``fence``: refused (``Claim(won=False, fenced=True)``, nothing written)
        when the store's epoch of ``fence.scope`` is greater than ``fence.epoch``; else
        the scope's epoch is raised to ``fence.epoch`` in the same atomic step."""
        ...

    async def record(self, key: str, outcome: CallOutcome) -> None:
        """Store the outcome of the claimed ``key`` (never fenced)."""
        ...

    async def get(self, key: str) -> CallOutcome | None:
        """The outcome recorded for ``key``, or ``None`` (unclaimed, or no outcome yet)."""
        ...

    if TYPE_CHECKING:  # version 2; not in the runtime check (version 1 stores still pass)

        async def fence(self, scope: str, epoch: int) -> None:
            """Raise ``scope``'s epoch to at least ``epoch`` (never lower it), atomically:
            once it returned, every claim with an older fence of ``scope`` is refused."""
            ...


@runtime_checkable
class LeasedOutcomeStore(OutcomeStore, Protocol):
    """An :class:`OutcomeStore` whose claims carry an owner and a lease (an extension).

    Its :meth:`claim` fills :attr:`Claim.owner` and :attr:`Claim.lease_until`; the holder
    renews the lease while its tool runs. :meth:`take_over` lets an idempotent tool run a
    call again whose holder stopped (lease expired, no outcome).
    """

    async def take_over(
        self, key: str, *, expires_at: datetime, fence: Fence | None = None
    ) -> Claim:
        """Take ``key`` if its lease expired with no outcome recorded (else as ``claim``);
        a ``fence`` is checked (and raises the scope's epoch) as :meth:`claim` does."""
        ...


def supports_fencing(store: object) -> bool:
    """Whether ``store`` speaks :class:`OutcomeStore` protocol version 2 (it has a
    ``fence`` method, so its ``claim`` takes ``fence=``); a version 1 store must be called
    without fences."""
    return callable(getattr(store, "fence", None))


def _check_fence(scope: object, epoch: object) -> None:
    """Refuse a bad fence scope or epoch with an error naming the fix."""
    if not isinstance(scope, str):
        raise TypeError(f"a fence's scope is the turn id (a str), not {type(scope).__name__}")
    if not scope:
        raise ValueError("a fence's scope must be a non-empty string (the turn id)")
    if isinstance(epoch, bool) or not isinstance(epoch, int):
        raise TypeError(f"a fence's epoch must be an int, not {type(epoch).__name__}")
    if not 0 <= epoch <= MAX_EPOCH:
        raise ValueError(f"a fence's epoch must be from 0 to 2**53 - 1, not {epoch}")


_NO_OUTCOME: Any = object()
_DAY = timedelta(days=1)


class InMemoryOutcomeStore:
    """The default :class:`OutcomeStore`: a dict in this process (lost on restart).

    Keys are forgotten when they expire (the pending state they belong to can no longer be
    resumed then), never because there are many: memory grows with the calls resumed within
    one expiry period (24 hours by default). A scope's epoch (fencing) is kept until the
    latest expiry of the claims admitted under it, and at least a day after :meth:`fence`.

    Args:
        clock: the current time (UTC, aware); for tests.
    """

    def __init__(self, clock: Callable[[], datetime] | None = None) -> None:
        self._clock = clock or _utcnow
        self._entries: dict[str, tuple[datetime, Any]] = {}
        self._expiries: list[tuple[datetime, str]] = []  # a heap, stale entries skipped
        self._fences: dict[str, tuple[int, datetime]] = {}  # scope -> epoch, kept until
        self._fence_expiries: list[tuple[datetime, str]] = []  # a heap, as _expiries

    def __len__(self) -> int:
        """The number of keys held (expired ones are dropped on the next operation)."""
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    async def claim(self, key: str, *, expires_at: datetime, fence: Fence | None = None) -> Claim:
        """Take ``key`` until ``expires_at``, or report the outcome recorded so far; a
        claim with an older ``fence`` than its scope's epoch is refused (``fenced``)."""
        self._evict()
        if fence is not None and not self._admit(fence, expires_at):
            return Claim(won=False, fenced=True)
        entry = self._entries.get(key)
        if entry is not None:
            outcome = entry[1]
            return Claim(won=False, outcome=None if outcome is _NO_OUTCOME else outcome)
        self._entries[key] = (expires_at, _NO_OUTCOME)
        heapq.heappush(self._expiries, (expires_at, key))
        return Claim(won=True)

    async def fence(self, scope: str, epoch: int) -> None:
        """Raise ``scope``'s epoch to at least ``epoch`` (kept at least a day)."""
        fence = Fence(scope, epoch)  # refuses a bad scope or epoch
        self._evict()
        self._admit(fence, self._clock() + _DAY)

    async def epoch(self, scope: str) -> int | None:
        """``scope``'s epoch here (``None``: never fenced, or forgotten)."""
        self._evict()
        held = self._fences.get(scope)
        return None if held is None else held[0]

    async def record(self, key: str, outcome: CallOutcome) -> None:
        """Store the outcome of ``key`` (a key never claimed, or expired, is kept a day)."""
        entry = self._entries.get(key)
        if entry is None:  # not claimed here (or expired meanwhile): keep it a while
            expires_at = self._clock() + _DAY
            heapq.heappush(self._expiries, (expires_at, key))
        else:
            expires_at = entry[0]
        self._entries[key] = (expires_at, outcome)

    async def get(self, key: str) -> CallOutcome | None:
        """The outcome recorded for ``key``, or ``None``."""
        self._evict()
        entry = self._entries.get(key)
        if entry is None or entry[1] is _NO_OUTCOME:
            return None
        outcome: CallOutcome = entry[1]
        return outcome

    def _admit(self, fence: Fence, keep_until: datetime) -> bool:
        """``False`` if ``fence`` is older than its scope's epoch; else raise the epoch to
        it and keep it until ``keep_until`` at least."""
        held = self._fences.get(fence.scope)
        if held is None:
            epoch, until = fence.epoch, keep_until
        elif held[0] > fence.epoch:
            return False
        else:
            epoch, until = fence.epoch, max(held[1], keep_until)
        if held is None or until != held[1]:
            heapq.heappush(self._fence_expiries, (until, fence.scope))
        self._fences[fence.scope] = (epoch, until)
        return True

    def _evict(self) -> None:
        now, heap, entries = self._clock(), self._expiries, self._entries
        while heap and heap[0][0] <= now:
            expires_at, key = heapq.heappop(heap)
            entry = entries.get(key)
            if entry is not None and entry[0] == expires_at:
                del entries[key]
        heap, fences = self._fence_expiries, self._fences
        while heap and heap[0][0] <= now:
            until, scope = heapq.heappop(heap)
            held = fences.get(scope)
            if held is not None and held[1] == until:
                del fences[scope]


# -- the old names (deprecated) ------------------------------------------------------------


@runtime_checkable
class _OldFinishedCalls(Protocol):
    async def add(self, key: str) -> bool: ...


class _LegacyStore:
    """An old ``FinishedCalls`` (an async test-and-set ``add``) seen as an OutcomeStore:
    it records no outcomes, so a key it already has is "in doubt" (never run again)."""

    def __init__(self, old: _OldFinishedCalls) -> None:
        self._old = old

    async def claim(self, key: str, *, expires_at: datetime, fence: Fence | None = None) -> Claim:
        # No fence method, so supports_fencing() is False and nothing passes a fence.
        return Claim(won=await self._old.add(key))

    async def record(self, key: str, outcome: CallOutcome) -> None:
        return None

    async def get(self, key: str) -> CallOutcome | None:
        return None


def _as_store(store: object) -> OutcomeStore:
    """``store`` as an :class:`OutcomeStore` (an old ``FinishedCalls`` is wrapped)."""
    if isinstance(store, OutcomeStore):
        return store
    if isinstance(store, _OldFinishedCalls):
        warnings.warn(
            "a FinishedCalls store (add(key) -> bool) is deprecated: implement OutcomeStore "
            "(claim / record / get) so a retried resume gets the call's real outcome",
            DeprecationWarning,
            stacklevel=3,
        )
        return cast(OutcomeStore, _LegacyStore(store))
    raise TypeError(
        f"an outcome store needs async claim / record / get methods (OutcomeStore); got "
        f"{type(store).__name__}: use InMemoryOutcomeStore(), or implement OutcomeStore"
    )


class _InMemoryFinishedCalls(InMemoryOutcomeStore):
    """Deprecated: :class:`InMemoryOutcomeStore` (which also still offers ``add``)."""

    def __init__(self, limit: int | None = None) -> None:
        warnings.warn(
            "InMemoryFinishedCalls is deprecated: use InMemoryOutcomeStore (it evicts by "
            "expiry, so its limit argument is ignored)",
            DeprecationWarning,
            stacklevel=2,
        )
        super().__init__()

    async def add(self, key: str) -> bool:
        """The old test-and-set: claim ``key`` for a day; ``False`` if it was claimed."""
        return (await self.claim(key, expires_at=self._clock() + _DAY)).won


def _deprecated(name: str) -> Any:
    """The object behind a deprecated name of this module, with its warning."""
    if name == "FinishedCalls":
        warnings.warn(
            "FinishedCalls is deprecated: use OutcomeStore (claim / record / get)",
            DeprecationWarning,
            stacklevel=3,
        )
        return _OldFinishedCalls
    if name == "InMemoryFinishedCalls":
        warnings.warn(
            "InMemoryFinishedCalls is deprecated: use InMemoryOutcomeStore",
            DeprecationWarning,
            stacklevel=3,
        )
        return _InMemoryFinishedCalls
    raise AttributeError(name)


DEPRECATED: frozenset[str] = frozenset({"FinishedCalls", "InMemoryFinishedCalls"})


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


def _failure_classes() -> dict[str, type[CallFailure]]:
    found: dict[str, type[CallFailure]] = {}
    todo: list[type[CallFailure]] = [CallFailure]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        default = cls.model_fields.get("kind")
        if default is not None and isinstance(default.default, str):
            found.setdefault(default.default, cls)
    return found
