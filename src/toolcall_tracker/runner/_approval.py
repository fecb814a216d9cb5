"""The approval desk of a turn (private): the requests of the calls awaiting a decision.

The turn calls the desk through a small port: :meth:`ApprovalDesk.ask` publishes a call's
request (to the run's :class:`RunControl`, if there is one), :meth:`ApprovalDesk.withdraw`
takes it back the moment the call stops awaiting a decision (decided, cancelled, timed
out, ended), so the desk, and every unread request of the control's iterators, hold only
the calls awaiting a decision. Whether a call awaits one, and what a decision does, is the
turn's table; the desk only keeps and publishes requests.

Every request and the signed state the desk leaves are made under the turn's
:class:`Stamp` (nonce, turn id, expiry): a fresh one for a new turn, the state's own for a
resume or a run that continues a state handed out before (``run(continues=...)``), so one
call of one turn is asked with one token and lands in one signed state, whichever process
asks.
"""

from __future__ import annotations

import secrets
from datetime import datetime

from ..calls import ToolCall
from ..tracker import ToolCallTracker
from ._pending import ApprovalDecision, PendingApproval, PendingApprovals, _shown, _Signer
from ._ports import Link


class Stamp:
    """What a turn's requests and signed state are made under: its nonce, its turn id and
    its expiry (each ``None``: the nonce is made at the first request, the turn id is the
    nonce, the expiry is the runner's ttl from when the state is signed).

    A run that continues a state handed out before (``run(continues=...)``), and a resume,
    take all three from that state, so the calls it leaves awaiting are asked under the
    same nonce (the same tokens) and signed into a state with the same turn and expiry.
    """

    __slots__ = ("expires_at", "nonce", "turn_id")

    def __init__(
        self,
        nonce: str | None = None,
        turn_id: str | None = None,
        expires_at: datetime | None = None,
    ) -> None:
        self.nonce = nonce
        self.turn_id = turn_id
        self.expires_at = expires_at

    @classmethod
    def of(cls, state: PendingApprovals) -> Stamp:
        """The stamp of ``state``'s turn (its turn key: the nonce of an old-format one)."""
        return cls(state.nonce, state.turn_key, state.expires_at)


def stamp_for(signer: _Signer, turn_id: str | None, continues: PendingApprovals | None) -> Stamp:
    """The stamp of a new run of the turn ``turn_id`` that continues ``continues``.

    Raises:
        TypeError: ``turn_id`` is not a ``str``, or ``continues`` not a
            :class:`PendingApprovals`.
        ValueError: ``turn_id`` is empty, or ``continues`` belongs to another turn.
        ApprovalRefused: ``continues`` does not verify (signature, key, expiry).
    """
    if turn_id is not None:
        if not isinstance(turn_id, str):
            raise TypeError(f"turn_id must be a str, not {type(turn_id).__name__}")
        if not turn_id:
            raise ValueError("turn_id must not be empty (pass None to let the nonce name the turn)")
    if continues is None:
        return Stamp(turn_id=turn_id)
    if not isinstance(continues, PendingApprovals):
        raise TypeError(
            "continues must be the PendingApprovals a run of this turn handed out, "
            f"not {type(continues).__name__}"
        )
    signer.check(continues)  # before anything of the turn runs
    if turn_id is not None and continues.turn_key != turn_id:
        raise ValueError(
            f"continues is a state of turn {_shown(continues.turn_key)}, not of turn "
            f"{_shown(turn_id)}: "
            "pass the state this turn handed out (or no turn_id)"
        )
    return Stamp.of(continues)


class Resumed:
    """What a resumed turn brings: its stamp, the decisions, the calls decided before."""

    __slots__ = ("already", "decisions", "stamp")

    def __init__(
        self, stamp: Stamp, decisions: dict[str, ApprovalDecision], already: set[str]
    ) -> None:
        self.stamp = stamp
        self.decisions = decisions
        self.already = already

    @property
    def nonce(self) -> str | None:
        """The resumed turn's nonce."""
        return self.stamp.nonce


class ApprovalDesk:
    """The requests of one turn's calls awaiting a decision, in asking order."""

    __slots__ = ("_link", "_requests", "_signer", "_stamp", "_tracker")

    def __init__(
        self, signer: _Signer, stamp: Stamp, link: Link | None, tracker: ToolCallTracker
    ) -> None:
        self._signer = signer
        self._tracker = tracker  # its limits and end go into the signed state
        self._stamp = stamp  # the turn's nonce (made at the first request if None), id, expiry
        self._link = link
        self._requests: dict[str, PendingApproval] = {}

    @property
    def can_ask(self) -> bool:
        """Whether anybody can be asked (the run has a :class:`RunControl`)."""
        return self._link is not None

    def ask(self, call: ToolCall, *, publish: bool = True) -> None:
        """Keep ``call``'s request and publish it (``publish=False``: a resumed turn brings
        the decision with it)."""
        request = self._signer.call(self._turn_nonce(), call)  # its arguments: a fresh copy each
        self._requests[call.id] = request
        if publish and self._link is not None:
            self._link.requests.publish(request)

    def _turn_nonce(self) -> str:
        stamp = self._stamp
        nonce = stamp.nonce
        if nonce is None:
            nonce = stamp.nonce = secrets.token_urlsafe(16)
        return nonce

    def turn_key(self) -> str:
        """The turn's id, or its nonce (made now if need be) for a turn given none: what
        the signed state names as ``turn_key`` and every store key of the turn derives
        from."""
        return self._stamp.turn_id or self._turn_nonce()

    def withdraw(self, call_id: str) -> None:
        """``call_id`` no longer awaits a decision: forget its request everywhere."""
        if self._requests.pop(call_id, None) is not None and self._link is not None:
            self._link.requests.withdraw(call_id)

    def awaiting(self) -> list[PendingApproval]:
        """The requests of the calls awaiting a decision, in asking order."""
        return list(self._requests.values())

    def pending(self) -> PendingApprovals | None:
        """The calls still awaiting a decision as signed :class:`PendingApprovals`."""
        requests = self.awaiting()
        if not requests:
            return None
        tracker, stamp = self._tracker, self._stamp
        return self._signer.pending(
            self._turn_nonce(),
            requests,
            tracker.limits,
            tracker.end,
            stamp.expires_at,
            stamp.turn_id,  # (None: the nonce names the turn)
        )

    def __len__(self) -> int:
        return len(self._requests)
