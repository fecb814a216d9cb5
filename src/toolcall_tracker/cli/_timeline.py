"""The ``--events`` timeline: which calls are open after each tracker event.

All of the timeline's knowledge of the machine is in :class:`Timeline`; the replay calls
:meth:`Timeline.record` once per applied event and hands the :class:`Step` it returns to
the report. (It re-derives the status changes from the transition rules today; a listener
on the machine's change feed can replace its insides without touching its callers.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from ..calls import Status
from ..events import Delta, End, Start
from ..machine import ToolCallStateMachine
from ..reducer import IgnoreReason

MAX_COLUMNS: Final = 12
"""Call columns in the timeline; later calls get none."""


@dataclass(frozen=True)
class Step:
    """One tracker event as it was applied.

    ``status`` is the status, after the event, of the call the event is about (``None``
    for ``end`` or an id that never started); ``cells`` is the timeline row: per call
    column (``columns``, the ids, in column order), the call's status after the event.
    """

    item: int | None  # None: the end of the stream (the adapter's end(), or exhaustion)
    event: Any
    ignored: IgnoreReason | None
    status: Status | None
    cells: tuple[Status | None, ...]
    columns: tuple[str, ...]


class Timeline:
    """Follows the status of each call cheaply while events are applied.

    Reading a pending call's snapshot joins its argument text, so doing that after every
    fragment would be quadratic. The status of a call changes only as the transition
    table says, so the machine is asked only after events that can change it: ``ready``,
    ``result`` and ``error`` (after which the snapshot is cached), a fragment that takes
    the text past ``Limits.max_args_chars``, and ``end`` (for the calls still pending).
    It holds a status and a length per call: no more than the machine holds.
    """

    def __init__(self, machine: ToolCallStateMachine) -> None:
        self._machine = machine
        self._status: dict[str, Status] = {}
        self._chars: dict[str, int] = {}
        self._limit = machine.limits.max_args_chars
        self.columns: tuple[str, ...] = ()
        """The ids of the calls that have a column, in column order."""

    def record(self, item: int | None, event: Any, ignored: IgnoreReason | None) -> Step:
        """The timeline row of ``event`` (already applied to the machine).

        Args:
            item: the stream item the event came from (``None``: the end of the stream).
            event: the event as a model (or, for an unknown ``type``, the mapping).
            ignored: why the machine ignored the event, or ``None`` if it applied.
        """
        if ignored is None:
            self._follow(event)
        call_id = getattr(event, "id", None)
        status = self._status.get(call_id) if isinstance(call_id, str) else None
        cells = tuple(self._status.get(column) for column in self.columns)
        return Step(item, event, ignored, status, cells, self.columns)

    def _follow(self, event: Any) -> None:
        """Update the statuses after an event that was not ignored."""
        if isinstance(event, End):
            for pending in [key for key, value in self._status.items() if value == "pending"]:
                self._refresh(pending)
            return
        call_id = getattr(event, "id", None)
        if not isinstance(call_id, str):
            return
        if isinstance(event, Start):
            if call_id not in self._status and self._machine.get(call_id) is not None:
                self._status[call_id] = Status.PENDING
                self._chars[call_id] = 0
                if len(self.columns) < MAX_COLUMNS:
                    self.columns = (*self.columns, call_id)
        elif isinstance(event, Delta):
            if self._status.get(call_id) == Status.PENDING:
                self._chars[call_id] += len(event.args_text_delta)
                if self._chars[call_id] > self._limit:
                    self._refresh(call_id)
        elif call_id in self._status:
            self._refresh(call_id)

    def _refresh(self, call_id: str) -> None:
        """Ask the machine for the call's status (cheap once it is no longer pending)."""
        call = self._machine.get(call_id)
        if call is not None:
            self._status[call_id] = call.status
