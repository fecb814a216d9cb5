"""Approval inside a turn (private): what the runner keeps per call, and the steps between
admission and the run queue for calls that need a human's decision.

:class:`Approvals` is a mixin of :class:`~toolcall_tracker.runner._turn.Turn`: it asks (or
denies when nobody can be asked), takes decisions (in process through the
:class:`RunControl`, or brought by a resumed turn), evaluates per-call predicates (an async
one in its own task, counted so that an in-process run waits for it), and tells the turn
when nothing awaits a decision any more. Approved calls go on through ``Turn._proceed``.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.abc
from pydantic import ValidationError

from ..calls import Status, ToolCall
from ..errors import CallFailure
from ..failures import ToolRaised
from ..tools import Tool
from ..tracker import ToolCallTracker
from . import _outcomes as outcomes
from ._invoke import describe
from ._pending import ApprovalDecision, PendingApproval, PendingApprovals

if TYPE_CHECKING:
    from . import ToolRunner
    from ._control import RunControl
    from ._otel import TurnSpans

logger: Final = logging.getLogger("toolcall_tracker.runner")

_RUNNING: Final = Status.RUNNING


class _Call:
    """What the runner keeps of one admitted call, until it finishes."""

    __slots__ = (
        "args",
        "call",
        "edited",
        "gated",
        "kwargs",
        "request",
        "scope",
        "spec",
        "tool_started",
    )

    def __init__(
        self,
        call: ToolCall,
        spec: Tool[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        gated: bool,
    ) -> None:
        self.call = call
        self.spec = spec
        self.args = args
        self.kwargs = kwargs
        self.gated = gated
        self.request: PendingApproval | None = None  # set while it awaits a decision
        self.scope: anyio.CancelScope | None = None  # set while its task runs
        self.tool_started = False
        self.edited: Any = None  # arguments a human approved in place of the model's


class Resumed:
    """What a resumed turn brings: its nonce, the decisions, the calls decided before."""

    __slots__ = ("already", "decisions", "nonce")

    def __init__(
        self, nonce: str, decisions: dict[str, ApprovalDecision], already: set[str]
    ) -> None:
        self.nonce = nonce
        self.decisions = decisions
        self.already = already


class Approvals:
    """The approval steps of a turn (a mixin: the turn holds the state named here)."""

    _runner: ToolRunner
    _tracker: ToolCallTracker
    _control: RunControl | None
    _nonce: str
    _calls: dict[str, _Call]
    _awaiting: dict[str, _Call]
    _deciding: int
    _idle: anyio.Event | None
    _tg: anyio.abc.TaskGroup | None
    _otel: TurnSpans | None

    def _fail(self, call: ToolCall, failure: CallFailure) -> None:
        raise NotImplementedError

    def _proceed(self, item: _Call) -> None:
        raise NotImplementedError

    def _decide_need(self, item: _Call) -> None:
        """Ask for approval, or go on, as the tool's ``needs_approval`` says."""
        call, spec = item.call, item.spec
        needs = spec.needs_approval
        if needs is True:
            self._ask(item)
        elif needs is False:
            self._proceed(item)
        else:
            try:
                verdict = needs(call)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # the predicate's fault: do not run the call
                self._predicate_raised(item, exc)
                return
            if inspect.isawaitable(verdict):
                assert self._tg is not None
                self._deciding += 1
                self._tg.start_soon(self._await_verdict, item, verdict)
            elif verdict:
                self._ask(item)
            else:
                self._proceed(item)

    def awaiting(self) -> list[PendingApproval]:
        """The requests of the calls awaiting a decision, in asking order."""
        return [item.request for item in self._awaiting.values() if item.request is not None]

    def pending(self) -> PendingApprovals | None:
        """The calls still awaiting a decision as signed :class:`PendingApprovals`."""
        requests = self.awaiting()
        if not requests:
            return None
        tracker = self._tracker
        return self._runner._signer.pending(self._nonce, requests, tracker.limits, tracker.end)

    def decide(self, call_id: str, approved: bool, arguments: Any, reason: str | None) -> bool:
        item = self._awaiting.get(call_id)
        if item is None or self._tracker.status(call_id) is not _RUNNING:
            return False
        self._forget_request(call_id)
        self._apply_decision(item, approved, arguments, reason)
        return True

    async def _await_verdict(self, item: _Call, verdict: Awaitable[bool]) -> None:
        try:
            try:
                needed = await verdict
            except anyio.get_cancelled_exc_class():
                raise
            except KeyboardInterrupt:
                raise
            except BaseException as exc:
                self._predicate_raised(item, exc)
                return
            if self._calls.get(item.call.id) is item:  # still ours, still running
                self._ask(item) if needed else self._proceed(item)
        finally:
            self._deciding -= 1
            self._wake()

    def _predicate_raised(self, item: _Call, exc: BaseException) -> None:
        call = item.call
        text = describe(exc)
        logger.warning("needs_approval of tool %r raised for call %r: %s", call.name, call.id, text)
        self._fail(
            call,
            ToolRaised(
                message=f"deciding whether tool {call.name!r} needs approval raised {text}",
                tool=call.name,
                exception=type(exc).__name__,
            ),
        )

    def _ask(self, item: _Call) -> None:
        call = item.call
        control = self._control
        if control is None:
            self._fail(call, outcomes.denied(call, "no_approver"))
            return
        item.request = self._runner._signer.call(self._nonce, call)
        self._awaiting[call.id] = item
        if self._otel is not None:
            self._otel.approval_requested(call.id)
        control._requests.publish(item.request)

    def _apply_decision(
        self, item: _Call, approved: bool, arguments: Any, reason: str | None
    ) -> None:
        call = item.call
        if self._otel is not None:
            self._otel.approval_decided(call.id, approved, reason, arguments)
        if not approved:
            self._fail(call, outcomes.denied(call, reason or "denied"))
            return
        if arguments is not None:
            try:
                item.args, item.kwargs = item.spec.bind(arguments)
            except ValidationError as exc:
                self._fail(call, outcomes.validation_failure(call.name, exc, edited=True))
                return
            item.edited = arguments  # noted once the tool really starts with them
        self._proceed(item)

    async def _until_decided(self) -> None:
        while self._awaiting or self._deciding:
            self._idle = anyio.Event()
            await self._idle.wait()
        self._idle = None

    def _wake(self) -> None:
        if self._idle is not None and not self._awaiting and not self._deciding:
            self._idle.set()

    def _forget_request(self, call_id: str) -> None:
        if self._awaiting.pop(call_id, None) is not None:
            self._wake()
