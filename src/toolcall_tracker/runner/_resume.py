"""``ToolRunner.resume``: replay a turn's decided calls, truthfully (private).

Theory of operation. A resume gets back a signed :class:`PendingApprovals` and decisions.

1. It verifies them (``_Signer.verify``): signature, expiry, every decision's binding. An
   unsigned state (a runner without ``approval_secret``) is refused unless the caller says
   ``allow_unsigned=True``. Nothing runs before this passed.
2. It rebuilds the decided calls in a fresh tracker under the turn's own ``Limits`` and
   ends it with the turn's real ``End`` (from the state): a gated tool of a turn that was
   cut off (``length``) ends ``not_executed`` here as it would have in the first run. A
   state whose turn never ended replays as ``End(ok=False, reason="no_end")``.
3. Denied calls are settled first: each is claimed in the outcome store and its denial
   recorded (a later resume approving the same call gets the denial back). A call an
   earlier resume claimed ends with what that one recorded; if the claim itself fails,
   the call ends ``claim_failed`` (not "denied": only the store knows whether it ran).
4. The approved calls run through the ordinary turn, which asks a :class:`StoreGuard`
   right before each tool starts (``claim``: run it, or finish it with the outcome an
   earlier resume recorded, or ``in_doubt`` if that one never recorded one) and tells it
   the outcome after the tool really finished (``record``). A call that fails before its
   tool would start (invalid edited arguments, cut-off turn, cancelled) is never claimed,
   so it stays decidable.
5. The undecided calls stay pending: re-signed under the current key with the same nonce,
   turn id (a previous-format state's turn key, its nonce), expiry, limits and end (their
   tokens made again with the current key, so a state signed with a previous key comes
   back signed with the current one).

Every store key derives from the state's ``turn_key`` (its turn id; the nonce of a state of
the previous format, which is the key that format claimed).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from .._keys import call_key
from ..calls import ToolCall
from ..errors import ApprovalRefused
from ..failures import CallFailure
from ..tracker import ToolCallTracker
from . import _outcomes as outcomes
from ._approval import Resumed, Stamp
from ._guard import GuardOutcome
from ._invoke import describe
from ._pending import ApprovalDecision, PendingApprovals, _wire
from ._store import CallOutcome, ClaimFenced, Fence, LeasedOutcomeStore, OutcomeStore
from ._turn import Turn

if TYPE_CHECKING:
    from ._policy import RunPolicy
    from ._ports import Link

logger: Final = logging.getLogger("toolcall_tracker.runner")


class StoreGuard:
    """The runner's start guard over an :class:`OutcomeStore`, for one turn.

    Keys are ``call_key`` of the turn, the call's id, tool and argument text (one key per
    call of a turn, whichever path claims it: see :mod:`toolcall_tracker._keys`), kept
    until ``expires_at``. With a :class:`LeasedOutcomeStore`, a call of a tool named in
    ``idempotent`` whose holder stopped (lease expired, no outcome) is taken over and run
    again; any other such call is in doubt and never re-run.

    Args:
        store: where calls are claimed and their outcomes recorded.
        turn: the turn's id (a signed state's :attr:`PendingApprovals.turn_key`, a durable
            turn's id).
        expires_at: how long the keys are kept (the expiry of whatever can name them).
        idempotent: the names of the tools that may run a call again.
        legacy: the turn is named by its nonce (a state without a turn id of its own).
        fence: the claimer's :class:`Fence` (a durable turn's writer: its turn and epoch),
            sent with every claim and take-over (a store of protocol version 2); a claim
            the store refuses for it raises :class:`ClaimFenced`.
    """

    __slots__ = (
        "_expires_at",
        "_idempotent",
        "_legacy",
        "_store",
        "_taken_over",
        "fence",
        "turn",
    )

    def __init__(
        self,
        store: OutcomeStore,
        turn: str,
        expires_at: datetime,
        idempotent: frozenset[str] = frozenset(),
        *,
        legacy: bool = False,
        fence: Fence | None = None,
    ) -> None:
        self._store = store
        self.turn = turn
        self.fence = fence
        self._expires_at = expires_at
        self._idempotent = idempotent
        self._legacy = legacy
        self._taken_over: set[str] = set()  # keys won by a take-over (a second attempt)

    @classmethod
    def of_state(
        cls, store: OutcomeStore, state: PendingApprovals, idempotent: frozenset[str] = frozenset()
    ) -> StoreGuard:
        """The guard of the turn ``state`` belongs to: keyed by its ``turn_key``, kept until
        its expiry (a turn named by its nonce keeps the previous version's keys)."""
        legacy = state.turn_key == state.nonce
        return cls(store, state.turn_key, state.expires_at, idempotent, legacy=legacy)

    def key(self, call: ToolCall) -> str:
        """The store key of ``call`` of this turn (``legacy``: a turn named by its nonce
        claims the key the previous version claimed, ``"<nonce>:<call id>"``: see
        :mod:`toolcall_tracker._keys`)."""
        if self._legacy:
            return f"{self.turn}:{_wire(call.id)}"
        return call_key(self.turn, call.id, call.name, call.args_text)

    def attempt(self, call: ToolCall) -> int:
        """The attempt a won claim of ``call`` is (its tool's ``ToolContext.attempt``): 1,
        or 2 for a take-over (an earlier run is in doubt: the store counts no further)."""
        return 2 if self.key(call) in self._taken_over else 1

    async def claim(self, call: ToolCall) -> GuardOutcome | None:
        """``None`` if this resume won the call; else the outcome to finish it with."""
        store, key, fence = self._store, self.key(call), self.fence
        if fence is None:
            claim = await store.claim(key, expires_at=self._expires_at)
        else:
            claim = await store.claim(key, expires_at=self._expires_at, fence=fence)
        if (
            not claim.won
            and claim.outcome is None
            and not claim.fenced
            and call.name in self._idempotent
            and isinstance(store, LeasedOutcomeStore)
        ):  # the store decides whether the lease ran out, on its own clock
            if fence is None:
                claim = await store.take_over(key, expires_at=self._expires_at)
            else:
                claim = await store.take_over(key, expires_at=self._expires_at, fence=fence)
            if claim.won:
                self._taken_over.add(key)
        if claim.fenced:
            raise ClaimFenced(
                f"the claim of call {call.id!r} was refused: turn {self.turn!r} was taken "
                f"over by a newer epoch than this writer's ({fence.epoch if fence else '?'})"
            )
        if claim.won:
            return None
        if claim.outcome is None:
            return GuardOutcome(failure=outcomes.in_doubt(call, claim.lease_until))
        failure = claim.outcome.call_failure()
        if failure is not None:
            return GuardOutcome(failure=failure)
        return GuardOutcome(result=claim.outcome.result)

    async def record(self, call: ToolCall, result: Any, failure: CallFailure | None) -> None:
        """Record how the claimed ``call`` ended."""
        await self._store.record(self.key(call), CallOutcome.of(result, failure))


async def resume(
    policy: RunPolicy,
    store: OutcomeStore,
    pending: PendingApprovals,
    decisions: Iterable[ApprovalDecision],
    link: Link | None,
    allow_unsigned: bool,
    deps: Any = None,
) -> tuple[list[ToolCall], PendingApprovals | None]:
    """Resume ``pending`` with ``decisions``; the decided calls (finished) and what stays
    pending (``None`` if nothing does). See the module docstring."""
    signer = policy.signer
    if signer.key is None and not allow_unsigned:
        raise ApprovalRefused(
            "this runner has no approval_secret, so pending approvals carry plain digests "
            "that anybody can forge: set ToolRunner(approval_secret=...) (at least 16 "
            "bytes), or pass resume(..., allow_unsigned=True) if the state never left your "
            "server; nothing was run"
        )
    decided = signer.verify(pending, decisions)
    chosen = [call for call in pending.calls if call.call_id in decided]
    tracker = ToolCallTracker(limits=pending.limits)
    for call in chosen:
        tracker.write_start(call.call_id, call.tool)
        tracker.write_delta(call.call_id, call.args_text)
        tracker.write_ready(call.call_id)
    idempotent = frozenset(name for name, spec in policy.tools.items() if spec.idempotent)
    guard = StoreGuard(
        store,
        pending.turn_key,
        pending.expires_at,
        idempotent,
        legacy=pending.turn_key == pending.nonce,
    )
    for call in chosen:
        decision = decided[call.call_id]
        if not decision.approved:
            await _settle_denial(tracker, guard, call.call_id, decision.reason or "denied")
    end = pending.end
    if end is None:
        tracker.write_end(False, "no_end")
    else:
        tracker.write_end(end.ok, end.reason)
    stamp = Stamp.of(pending)
    resumed = Resumed(stamp, decided, set())
    await Turn(policy, tracker, link, resumed, guard=guard, deps=deps).go()
    rest = [
        signer.request(pending.nonce, call.call_id, call.tool, call.args_text)
        for call in pending.calls
        if call.call_id not in decided
    ]
    left = (
        signer.pending(
            pending.nonce, rest, pending.limits, pending.end, pending.expires_at, stamp.turn_id
        )
        if rest
        else None
    )
    return tracker.list(), left


async def _settle_denial(
    tracker: ToolCallTracker, guard: StoreGuard, call_id: str, reason: str
) -> None:
    """Claim a denied call and record its denial; if an earlier resume decided it, finish
    it here as that one did (the turn then leaves it as it is)."""
    call = tracker.get(call_id)
    assert call is not None
    try:
        earlier = await guard.claim(call)
    except Exception as exc:  # nothing ran here, nothing recorded: still decidable
        text = describe(exc)
        logger.warning("claiming denied call %r failed: %s", call_id, text)
        # Not "denied": an earlier resume may have run it, which only the store knows.
        earlier = GuardOutcome(failure=outcomes.claim_failed(call, exc, text))
    if earlier is None:
        try:
            await guard.record(call, None, outcomes.denied(call, reason))
        except Exception as exc:
            logger.warning("recording the denial of call %r failed: %s", call_id, describe(exc))
        return
    if earlier.failure is not None:
        outcomes.write(tracker, call_id, earlier.failure, error=True)
    else:
        outcomes.write(tracker, call_id, earlier.result, error=False)
