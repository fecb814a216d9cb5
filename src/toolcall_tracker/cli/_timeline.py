"""The ``--events`` timeline: which calls are open after each tracker event.

:class:`Timeline` is a listener of the machine's change feed: it learns each call's status
from the machine itself, never by re-deriving the transition table. The replay calls
:meth:`Timeline.record` once per applied event and hands the :class:`Step` it returns to
the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from ..calls import Status
from ..changes import ChangeListener
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


class Timeline(ChangeListener):
    """Follows the status of each call from the machine's change feed.

    It subscribes to the machine and keeps one status per call (no more than the machine
    holds); :meth:`record` reads them after each applied event.
    """

    def __init__(self, machine: ToolCallStateMachine) -> None:
        self._status: dict[str, Status] = {}
        self.columns: tuple[str, ...] = ()
        """The ids of the calls that have a column, in column order."""
        machine.subscribe(self)

    def call_changed(self, call_id: str, before: Status | None, after: Status) -> None:
        """A call was created or changed status (the machine's change feed)."""
        self._status[call_id] = after
        if before is None and len(self.columns) < MAX_COLUMNS:
            self.columns = (*self.columns, call_id)

    def record(self, item: int | None, event: Any, ignored: IgnoreReason | None) -> Step:
        """The timeline row of ``event`` (already applied to the machine).

        Args:
            item: the stream item the event came from (``None``: the end of the stream).
            event: the event as a model (or, for an unknown ``type``, the mapping).
            ignored: why the machine ignored the event, or ``None`` if it applied.
        """
        call_id = getattr(event, "id", None)
        status = self._status.get(call_id) if isinstance(call_id, str) else None
        cells = tuple(self._status.get(column) for column in self.columns)
        return Step(item, event, ignored, status, cells, self.columns)
