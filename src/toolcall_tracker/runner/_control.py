"""The per-run handle: :class:`RunControl` (approvals, per-call cancellation, progress).

The runner keeps no per-turn state; a :class:`RunControl` passed to
:meth:`ToolRunner.run` (or :meth:`ToolRunner.resume`) is how the application reaches one
run while it goes on, and what it reads afterwards. One control serves one run.
Everything here is for the event loop's thread (from a worker thread, use
``anyio.from_thread.run_sync(control.approve, call_id)``).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio

from .._jsonout import _json_text
from ._pending import PendingApproval, PendingApprovals
from ._progress import ProgressUpdate

if TYPE_CHECKING:
    from ._turn import Turn

__all__ = ["RunControl"]

logger = logging.getLogger("toolcall_tracker.runner")

_T = TypeVar("_T")

_PROGRESS_UNREAD = 1024
"""Unread progress updates kept per ``progress()`` iterator: a tool yielding faster than a
reader reads cannot grow memory without bound."""


class _Subscriber(Generic[_T]):
    __slots__ = ("closed", "items", "wake")

    def __init__(self, items: Iterable[_T], closed: bool, maxlen: int | None) -> None:
        self.items: deque[_T] = deque(items, maxlen)
        self.closed = closed
        self.wake: anyio.Event | None = None


class _Feed(Generic[_T]):
    """Items published by the run, delivered to every iterator subscribed at the time.

    ``maxlen`` bounds what one iterator may leave unread (the oldest items go first); ``None``
    keeps everything (approval requests, which must never be lost, are few per call).
    """

    def __init__(self, maxlen: int | None = None) -> None:
        self._subscribers: list[_Subscriber[_T]] = []
        self.closed = False
        self._maxlen = maxlen

    def publish(self, item: _T) -> None:
        for subscriber in self._subscribers:
            items = subscriber.items
            if items.maxlen is not None and len(items) == items.maxlen:
                logger.debug("a slow reader missed an update: %d were unread", len(items))
            items.append(item)
            if subscriber.wake is not None:
                subscriber.wake.set()

    def close(self) -> None:
        self.closed = True
        for subscriber in self._subscribers:
            subscriber.closed = True
            if subscriber.wake is not None:
                subscriber.wake.set()

    async def iterate(self, initial: Callable[[], Iterable[_T]] = tuple) -> AsyncIterator[_T]:
        """Yield what is published from the first ``__anext__`` on (after ``initial()``)."""
        subscriber = _Subscriber(initial(), self.closed, self._maxlen)
        self._subscribers.append(subscriber)
        try:
            while True:
                if subscriber.items:
                    yield subscriber.items.popleft()
                    continue
                if subscriber.closed:
                    return
                subscriber.wake = anyio.Event()
                await subscriber.wake.wait()
                subscriber.wake = None
        finally:
            self._subscribers.remove(subscriber)

    @property
    def listened(self) -> bool:
        return bool(self._subscribers)


class RunControl:
    """A handle on one run of a :class:`ToolRunner`: decide approvals, cancel calls, watch.

    Make one per run and pass it: ``await runner.run(tracker, control=control)``. While the
    run goes on (from another task of the same task group, a websocket handler...):

    - ``async for request in control.approval_requests()`` receives each call that needs
      approval (a :class:`PendingApproval`) as it arises; answer with :meth:`approve` or
      :meth:`deny`, by call id, in any order, while the other calls go on;
    - :meth:`cancel` cancels one call by id, with a reason, wherever it is;
    - ``on_progress`` and ``async for update in control.progress()`` receive the
      :class:`ProgressUpdate` of async-generator tools as they yield.

    After the run: :attr:`pending` holds the calls still awaiting approval (with
    ``defer_approvals=True``), :attr:`edited` the arguments humans changed.

    Args:
        defer_approvals: ``False`` (default): ``run`` waits for every decision (in
            process). ``True``: ``run`` returns once everything not awaiting a decision has
            finished; the calls awaiting one stay ``running`` and :attr:`pending` holds them
            for a later :meth:`ToolRunner.resume` (across requests).
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
        self._defer = defer_approvals
        self._on_progress = on_progress
        self._progress: _Feed[ProgressUpdate] = _Feed(_PROGRESS_UNREAD)
        self._turn: Turn | None = None
        self._used = False
        self._requests: _Feed[PendingApproval] = _Feed()
        self._pending: PendingApprovals | None = None
        self._edited: dict[str, Any] = {}

    # -- for the application ------------------------------------------------------------

    @property
    def defer_approvals(self) -> bool:
        """Whether ``run`` returns with calls still awaiting approval."""
        return self._defer

    @property
    def running(self) -> bool:
        """Whether the run this control belongs to is going on."""
        return self._turn is not None

    @property
    def pending(self) -> PendingApprovals | None:
        """After the run: the calls still awaiting approval, or ``None`` if there are none.

        Serialise it with ``model_dump_json()``; resume it with
        :meth:`ToolRunner.resume`. Its calls are ``running`` in the returned calls, and
        the feedback builders refuse them until they are decided.
        """
        return self._pending

    @property
    def edited(self) -> dict[str, Any]:
        """The arguments a human approved in place of the model's, by call id (a copy):
        only for calls whose tool then really started with them."""
        return dict(self._edited)

    def notes(self) -> dict[str, str]:
        """Notes for the feedback builders (``notes=control.notes()``): for each call whose
        arguments a human edited, a sentence saying so, with the arguments it ran with."""
        return {
            call_id: "a human edited the arguments before the tool ran; it ran with "
            + _json_text(arguments)
            for call_id, arguments in self._edited.items()
        }

    def approval_requests(self) -> AsyncIterator[PendingApproval]:
        """Iterate over the calls awaiting approval, as they arise.

        Starts with the calls awaiting a decision when the iteration begins, then each new
        one; ends when the run has finished. A request may be stale when you act on it
        (the call was cancelled, or timed out): :meth:`approve` then returns ``False``.
        """
        return self._requests.iterate(
            lambda: self._turn.awaiting() if self._turn is not None else ()
        )

    def progress(self, call_id: str | None = None) -> AsyncIterator[ProgressUpdate]:
        """Iterate over progress updates (of one call, or of all), as tools yield them.

        Sees the updates published from its first step on (start iterating before the
        tools you care about run), buffered until you read them; ends when the run has
        finished. Nothing is buffered for nobody: without an iterator (or
        ``on_progress``) updates cost nothing. An iterator that falls behind keeps the
        latest 1,024 unread updates (progress is superseded by the next update; the
        result is never lost: it is the call's own result).
        """
        updates = self._progress.iterate()
        if call_id is None:
            return updates
        return _only(updates, call_id)

    def approve(self, call_id: str, arguments: Any = None) -> bool:
        """Approve a call awaiting approval; its tool runs when its turn allows.

        Args:
            call_id: the call.
            arguments: edited arguments to run the tool with instead of the model's
                (validated again: invalid ones fail the call with ``validation``). The
                call's ``args`` stay what the model sent; see :attr:`edited`.

        Returns:
            ``True`` if the call was awaiting approval in this run, else ``False``.
        """
        return self._turn is not None and self._turn.decide(call_id, True, arguments, None)

    def deny(self, call_id: str, reason: str = "denied") -> bool:
        """Deny a call awaiting approval: it ends ``error`` with ``ApprovalDenied(reason)``.

        Returns:
            ``True`` if the call was awaiting approval in this run, else ``False``.
        """
        return self._turn is not None and self._turn.decide(call_id, False, None, reason)

    def cancel(self, call_id: str, reason: str = "cancelled") -> bool:
        """Cancel one call of the run, wherever it is, with a reason.

        A call that is running has its tool cancelled (a sync tool's thread is abandoned,
        its result discarded); one waiting (for its approval, at the gate for the end of
        the turn, or for a slot) never starts. Either way it ends ``error`` with
        ``CallCancelled`` (``reason``, and ``tool_started`` saying whether the tool had
        begun). Every other call is untouched. To cancel the whole run, cancel the scope
        around ``run`` (a client disconnect does).

        Returns:
            ``True`` if the call was one of this run's and not finished, else ``False``.
        """
        return self._turn is not None and self._turn.cancel(call_id, reason)

    # -- for the runner -----------------------------------------------------------------

    def _attach(self, turn: Turn) -> None:
        if self._used:
            raise RuntimeError("a RunControl serves one run: make a new one for each run")
        self._used = True
        self._turn = turn

    def _detach(self, pending: PendingApprovals | None) -> None:
        self._turn = None
        self._pending = pending
        self._requests.close()
        self._progress.close()

    @property
    def _wants_progress(self) -> bool:
        return self._on_progress is not None or self._progress.listened

    def _publish_progress(self, update: ProgressUpdate) -> None:
        self._progress.publish(update)
        if self._on_progress is not None:
            try:
                self._on_progress(update)
            except Exception:
                logger.warning("on_progress raised for call %r", update.call_id, exc_info=True)


async def _only(
    updates: AsyncIterator[ProgressUpdate], call_id: str
) -> AsyncIterator[ProgressUpdate]:
    async for update in updates:
        if update.call_id == call_id:
            yield update
