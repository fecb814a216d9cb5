"""The per-run handle: :class:`RunControl` (approvals, per-call cancellation, progress).

The runner keeps no per-turn state; a :class:`RunControl` passed to
:meth:`ToolRunner.run` (or :meth:`ToolRunner.resume`) is how the application reaches one
run while it goes on, and what it reads afterwards. One control serves one run.
Everything here is for the event loop's thread (from a worker thread, use
``anyio.from_thread.run_sync(control.approve, call_id)``).
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Callable
from typing import Any

from .._jsonout import _json_text
from ._pending import ApprovalDecision, PendingApproval, PendingApprovals
from ._ports import Link, Preset
from ._progress import ProgressUpdate
from ._table import RunnerState

__all__ = ["RunControl"]


class RunControl:
    """A handle on one run of a :class:`ToolRunner`: decide approvals, cancel calls, watch.

    Make one per run and pass it: ``await runner.run(tracker, control=control)``. While the
    run goes on (from another task of the same task group, a websocket handler...):

    - ``async for request in control.approval_requests()`` receives each call that needs
      approval (a :class:`PendingApproval`) as it arises; answer with :meth:`approve`,
      :meth:`deny` or :meth:`decide`, by call id, in any order, while the other calls go on;
    - :meth:`cancel` cancels one call by id, with a reason, wherever it is (its arguments
      may still be streaming);
    - :meth:`state` tells where a call is (a :class:`RunnerState`: awaiting approval,
      waiting for a slot, running...);
    - ``on_progress`` and ``async for update in control.progress()`` receive the
      :class:`ProgressUpdate` of async-generator tools as they yield.

    After the run: :attr:`pending` holds the calls still awaiting approval (with
    ``defer_approvals=True``), :attr:`edited` the arguments humans changed.

    Args:
        defer_approvals: ``False`` (default): ``run`` waits for every decision (in
            process). ``True``: ``run`` returns once everything not awaiting a decision has
            finished; the calls awaiting one stay ``running`` and :attr:`pending` holds them
            for a later :meth:`ToolRunner.resume` (across requests). The run's deadline
            never denies them: nobody was asked yet.
        on_progress: called with each :class:`ProgressUpdate`, synchronously, on the event
            loop's thread, the moment the tool yields it (keep it quick; an exception it
            raises is logged and ignored). For an encoder writing a response stream.
    """

    def __init__(
        self,
        *,
        defer_approvals: bool = False,
        on_progress: Callable[[ProgressUpdate], None] | None = None,
    ) -> None:
        self._link = Link(defer_approvals, on_progress)

    # -- for the application ------------------------------------------------------------

    @property
    def defer_approvals(self) -> bool:
        """Whether ``run`` returns with calls still awaiting approval."""
        return self._link.defer

    @property
    def running(self) -> bool:
        """Whether the run this control belongs to is going on."""
        return self._link.turn is not None

    @property
    def pending(self) -> PendingApprovals | None:
        """After the run: the calls still awaiting approval, or ``None`` if there are none.

        Serialise it with ``model_dump_json()``; resume it with
        :meth:`ToolRunner.resume`. Its calls are ``running`` in the returned calls, and
        the feedback builders refuse them until they are decided.
        """
        return self._link.pending

    @property
    def edited(self) -> dict[str, Any]:
        """The arguments a human approved in place of the model's, by call id (copies)."""
        return {call_id: copy.deepcopy(value) for call_id, value in self._link.edited.items()}

    def notes(self) -> dict[str, str]:
        """Notes for the feedback builders (``notes=control.notes()``): for each call whose
        arguments a human edited and whose tool then really started, a sentence saying so,
        with the arguments it ran with (a call that never ran gets no note)."""
        link = self._link
        return {
            call_id: "a human edited the arguments before the tool ran; it ran with "
            + _json_text(arguments)
            for call_id, arguments in link.edited.items()
            if call_id in link.ran
        }

    def state(self, call_id: str) -> RunnerState | None:
        """Where call ``call_id`` is in the run (``None``: no call of this run, or the run
        has not started). After the run, a finished call reads ``finished`` (its tool ran)
        or ``not_executed``."""
        turn = self._link.last
        return None if turn is None else turn.state(call_id)

    def approval_requests(self) -> AsyncIterator[PendingApproval]:
        """Iterate over the calls awaiting approval, as they arise.

        Starts with the calls awaiting a decision when the iteration begins, then each new
        one; ends when the run has finished. A request whose call stops awaiting a
        decision before you read it (decided, cancelled, timed out) is dropped unread, so
        unread requests never outnumber the calls awaiting a decision. A request may still
        be stale when you act on it: :meth:`approve` then returns ``False``.
        """
        link = self._link
        return link.requests.iterate(lambda: link.turn.awaiting() if link.turn else ())

    def progress(self, call_id: str | None = None) -> AsyncIterator[ProgressUpdate]:
        """Iterate over progress updates (of one call, or of all), as tools yield them.

        Sees the updates published from its first step on (start iterating before the
        tools you care about run), buffered until you read them; ends when the run has
        finished. Nothing is buffered for nobody: without an iterator (or
        ``on_progress``) updates cost nothing. An iterator buffers only its own call's
        updates (another call's chatter never evicts them) and keeps the latest 1,024
        unread ones (progress is superseded by the next update; the result is never
        lost: it is the call's own result).
        """
        return self._link.progress.iterate(call_id)

    def approve(self, call_id: str, arguments: Any = None) -> bool:
        """Approve a call awaiting approval; its tool runs when its turn allows.

        Args:
            call_id: the call.
            arguments: edited arguments to run the tool with instead of the model's
                (validated again: invalid ones fail the call with ``validation``). The
                call's ``args`` stay what the model sent; see :attr:`edited`. The tool
                gets its own copy.

        Returns:
            ``True`` if the call was awaiting approval in this run, ``False`` if it no
            longer was (decided, cancelled, timed out: a lost race).

        Raises:
            KeyError: ``call_id`` is no call of this (running) run.
        """
        turn = self._link.turn
        return turn is not None and turn.decide(call_id, True, arguments, None)

    def deny(self, call_id: str, reason: str = "denied") -> bool:
        """Deny a call awaiting approval: it ends ``error`` with ``ApprovalDenied(reason)``.

        Returns:
            ``True`` if the call was awaiting approval in this run, else ``False``.

        Raises:
            KeyError: ``call_id`` is no call of this (running) run.
        """
        turn = self._link.turn
        return turn is not None and turn.decide(call_id, False, None, reason)

    def decide(self, decision: ApprovalDecision) -> bool:
        """Apply a decision built with :meth:`PendingApproval.approve` / ``deny`` in
        process (the one way to decide with a request in hand): :meth:`approve` or
        :meth:`deny` by its call id.

        Returns / raises as :meth:`approve`.
        """
        if decision.approved:
            return self.approve(decision.call_id, decision.arguments)
        return self.deny(decision.call_id, decision.reason or "denied")

    def preset(
        self, call_id: str, approved: bool, *, arguments: Any = None, reason: str = "denied"
    ) -> None:
        """Decide a call before it asks: when call ``call_id`` of this control's run needs
        approval, the decision applies at once (as :meth:`approve` with ``arguments``, or
        :meth:`deny` with ``reason``) and no request is published for it. For decisions
        made earlier and kept elsewhere: a restored durable turn reapplies its journaled
        ones this way, with a deferring control too.

        Raises:
            RuntimeError: the run has already started (decide live calls with
                :meth:`approve` / :meth:`deny`).
        """
        if self._link.used:
            raise RuntimeError("preset decisions before the run starts; then use approve()")
        self._link.decided[call_id] = Preset(approved, copy.deepcopy(arguments), reason)

    def cancel(self, call_id: str, reason: str = "cancelled") -> bool:
        """Cancel one call of the run, wherever it is, with a reason.

        A call that is running has its tool cancelled (a sync tool's thread is abandoned,
        its result discarded; it keeps its slot until it really stops); one waiting (its
        arguments still streaming, just ready, awaiting approval, at the gate for the end
        of the turn, or waiting for a slot) never starts. Either way it ends ``error``
        with ``CallCancelled`` (``reason``, and ``tool_started`` saying whether the tool
        had begun). Every other call is untouched. To cancel the whole run, cancel the
        scope around ``run`` (a client disconnect does).

        Returns:
            ``True`` if the call was one of this run's and not finished, else ``False``.
        """
        turn = self._link.turn
        return turn is not None and turn.cancel(call_id, reason)


def link_of(control: RunControl) -> Link:
    """What ``control`` shares with the run it serves (for the runner's turn)."""
    return control._link
