"""The approval desk of a turn (private): the requests of the calls awaiting a decision.

The turn calls the desk through a small port: :meth:`ApprovalDesk.ask` publishes a call's
request (to the run's :class:`RunControl`, if there is one), :meth:`ApprovalDesk.withdraw`
takes it back the moment the call stops awaiting a decision (decided, cancelled, timed
out, ended), so the desk, and every unread request of the control's iterators, hold only
the calls awaiting a decision. Whether a call awaits one, and what a decision does, is the
turn's table; the desk only keeps and publishes requests.
"""

from __future__ import annotations

import secrets

from ..calls import ToolCall
from ..tracker import ToolCallTracker
from ._pending import ApprovalDecision, PendingApproval, PendingApprovals, _Signer
from ._ports import Link


class Resumed:
    """What a resumed turn brings: its nonce, the decisions, the calls decided before."""

    __slots__ = ("already", "decisions", "nonce")

    def __init__(
        self, nonce: str, decisions: dict[str, ApprovalDecision], already: set[str]
    ) -> None:
        self.nonce = nonce
        self.decisions = decisions
        self.already = already


class ApprovalDesk:
    """The requests of one turn's calls awaiting a decision, in asking order."""

    __slots__ = ("_link", "_nonce", "_requests", "_signer", "_tracker")

    def __init__(
        self, signer: _Signer, nonce: str | None, link: Link | None, tracker: ToolCallTracker
    ) -> None:
        self._signer = signer
        self._tracker = tracker  # its limits and end go into the signed state
        self._nonce = nonce  # the turn's (random, made at the first request if None)
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
        nonce = self._nonce
        if nonce is None:
            nonce = self._nonce = secrets.token_urlsafe(16)
        return nonce

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
        tracker = self._tracker
        return self._signer.pending(self._turn_nonce(), requests, tracker.limits, tracker.end)

    def __len__(self) -> int:
        return len(self._requests)
