"""The turn's call table (private): every call the runner holds, by id, with its state.

:meth:`CallTable.move` is the only place a call's state changes: it keeps the table (a call
leaves it in a terminal state), counts the calls per state, and publishes the transition
to the run's :class:`~toolcall_tracker.runner.RunnerListener` (whose faults are logged and
contained). :meth:`CallTable.state` answers :meth:`RunControl.state`, from the table or,
for calls the runner does not hold, from the tracker's live status.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from typing import Final

from ..calls import Status
from ..tracker import ToolCallTracker
from ._start import Entry
from ._table import TERMINAL, RunnerEvent, RunnerListener, RunnerState

logger: Final = logging.getLogger("toolcall_tracker.runner")

S: Final = RunnerState


class CallTable:
    """The calls of one turn, by id, each in a :class:`RunnerState`."""

    __slots__ = ("_calls", "_listener", "count")

    def __init__(self, listener: RunnerListener | None) -> None:
        self._calls: dict[str, Entry] = {}
        self._listener = listener
        self.count: Counter[RunnerState] = Counter()

    def get(self, call_id: str) -> Entry | None:
        return self._calls.get(call_id)

    def holds(self, item: Entry) -> bool:
        return self._calls.get(item.call.id) is item

    def items(self) -> list[Entry]:
        return list(self._calls.values())

    def __len__(self) -> int:
        return len(self._calls)

    def move(
        self,
        item: Entry,
        after: RunnerState,
        event: RunnerEvent,
        targets: tuple[RunnerState, ...],
        on_move: Callable[[Entry, RunnerState], None],
    ) -> None:
        """Put ``item`` in state ``after`` (one of the cell's ``targets``); then
        ``on_move(item, before)`` (the turn's bookkeeping), then tell the listener."""
        assert after in targets, (item.state, event, after)
        before = item.state
        call_id = item.call.id
        item.state = after
        if before is not S.STREAMING:
            self.count[before] -= 1
        if after in TERMINAL:
            if self._calls.get(call_id) is item:
                del self._calls[call_id]
        else:
            self._calls[call_id] = item
            self.count[after] += 1
        on_move(item, before)
        if self._listener is not None and before is not after:
            try:
                self._listener.transition(call_id, before, after, event)
            except Exception:
                logger.warning("a runner listener raised for call %r", call_id, exc_info=True)

    def state(self, tracker: ToolCallTracker, call_id: str) -> RunnerState | None:
        """The call's runner state: from the table, else from the tracker's live state."""
        item = self._calls.get(call_id)
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
