"""The approval desk of a turn (private): the requests of the calls awaiting a decision.

The turn calls the desk through a small port: :meth:`ApprovalDesk.ask` publishes a call's
request (to the run's :class:`RunControl`, if there is one), :meth:`ApprovalDesk.withdraw`
takes it back the moment the call stops awaiting a decision (decided, cancelled, timed
out, ended), so the desk, and every unread request of the control's iterators, hold only
the calls awaiting a decision. Whether a call awaits one, and what a decision does, is the
turn's table; the desk only keeps and publishes requests.
"""

from __future__ import annotations

import copy

from ..calls import ToolCall
from ._pending import ApprovalDecision, PendingApproval, PendingApprovals, _pending, _pending_call
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

    __slots__ = ("_link", "_nonce", "_requests", "_secret")

    def __init__(self, secret: bytes | None, nonce: str, link: Link | None) -> None:
        self._secret = secret
        self._nonce = nonce
        self._link = link
        self._requests: dict[str, PendingApproval] = {}

    @property
    def can_ask(self) -> bool:
        """Whether anybody can be asked (the run has a :class:`RunControl`)."""
        return self._link is not None

    def ask(self, call: ToolCall, *, publish: bool = True) -> None:
        """Keep ``call``'s request and publish it (``publish=False``: a resumed turn brings
        the decision with it)."""
        request = _pending_call(self._secret, self._nonce, call)
        if request.arguments is not None:  # the UI's own copy, never the call's args
            request = request.model_copy(update={"arguments": copy.deepcopy(request.arguments)})
        self._requests[call.id] = request
        if publish and self._link is not None:
            self._link.requests.publish(request)

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
        return _pending(self._secret, self._nonce, requests) if requests else None

    def __len__(self) -> int:
        return len(self._requests)
