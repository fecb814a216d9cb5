"""The turn's call table (private): every call the runner holds, by id, with its state.

A call the runner holds is a :class:`RunnerCall` (its record, from ready until it leaves
in a terminal state); the table, a :class:`RunnerCallTable`, holds them by id.

:meth:`RunnerCallTable.move` is the only place a call's state changes: it keeps the table (a call
leaves it in a terminal state), counts the calls per state, and publishes the transition
to the run's :class:`~toolcall_tracker.runner.RunnerListener` (whose faults are logged and
contained). :meth:`RunnerCallTable.state` answers :meth:`RunControl.state`, from the table or,
for calls the runner does not hold, from the tracker's live status.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

import anyio

from ..calls import Status, ToolCall
from ..tools import Tool
from ..tracker import ToolCallTracker
from ._table import TERMINAL, RunnerEvent, RunnerListener, RunnerState
from ._threads import ThreadJob

logger: Final = logging.getLogger("toolcall_tracker.runner")

S: Final = RunnerState
_STREAMING: Final = S.STREAMING
_NO_CALLS: Final[dict[RunnerState, int]] = dict.fromkeys(RunnerState, 0)  # (copied per turn)


class RunnerCall:
    """One call in the turn's table, from ready until it leaves (terminal state): the
    runner's record of a call (the machine's record is ``_reducer._CallRecord``, the
    adapters' ``adapters._calls.Record``)."""

    __slots__ = (
        "args",
        "call",
        "edited",
        "gated",
        "job",
        "kwargs",
        "released_by_thread",
        "scope",
        "slot",
        "spec",
        "state",
        "tool_started",
    )

    def __init__(self, call: ToolCall) -> None:
        self.call = call
        self.state = S.STREAMING
        self.spec: Tool[..., Any] | None = None
        self.args: tuple[Any, ...] = ()
        self.kwargs: dict[str, Any] = {}
        self.gated = True
        self.edited: Any = None  # the arguments a human approved instead of the model's
        self.scope: anyio.CancelScope | None = None  # while its task runs
        self.job: ThreadJob | None = None  # a sync tool's thread
        self.slot = False  # holds a slot (of the turn, of its tool, a thread if sync)
        self.released_by_thread = False  # an abandoned thread gave its capacity back
        self.tool_started = False


class RunnerCallTable:
    """The calls of one turn, by id, each in a :class:`RunnerState`."""

    __slots__ = ("_listener", "by_id", "count")

    def __init__(self, listener: RunnerListener | None) -> None:
        self.by_id: dict[str, RunnerCall] = {}
        self._listener = listener
        self.count: dict[RunnerState, int] = _NO_CALLS.copy()

    def get(self, call_id: str) -> RunnerCall | None:
        return self.by_id.get(call_id)

    def items(self) -> list[RunnerCall]:
        return list(self.by_id.values())

    def __len__(self) -> int:
        return len(self.by_id)

    def move(
        self,
        item: RunnerCall,
        after: RunnerState,
        event: RunnerEvent,
        targets: tuple[RunnerState, ...],
        on_move: Callable[[RunnerCall, RunnerState], None],
    ) -> None:
        """Put ``item`` in state ``after`` (one of the cell's ``targets``); then
        ``on_move(item, before)`` (the turn's bookkeeping), then tell the listener."""
        assert after in targets, (item.state, event, after)
        before = item.state
        call_id = item.call.id
        item.state = after
        count, calls = self.count, self.by_id
        if before is not _STREAMING:
            count[before] -= 1
        if after in TERMINAL:
            if calls.get(call_id) is item:
                del calls[call_id]
        else:
            calls[call_id] = item
            count[after] += 1
        on_move(item, before)
        listener = self._listener
        if listener is not None and before is not after:
            try:
                listener.transition(call_id, before, after, event)
            except Exception:
                logger.warning("a runner listener raised for call %r", call_id, exc_info=True)

    def state(self, tracker: ToolCallTracker, call_id: str) -> RunnerState | None:
        """The call's runner state: from the table, else from the tracker's live state."""
        item = self.by_id.get(call_id)
        if item is not None:
            return item.state
        status = tracker.status(call_id)
        if status is None:
            return None
        if status is Status.PENDING:
            return S.STREAMING
        if status is Status.RUNNING:
            return S.VALIDATING  # ready; the runner takes it up next
        timeline = tracker.timeline(call_id)
        ran = timeline is not None and timeline.tool_started is not None
        return S.FINISHED if ran else S.NOT_EXECUTED
