"""Where a journaled turn stands while it is read (private): has it finished?

A follower replays a turn's records into a state machine built under the turn's own
``Limits`` (its first record) and stops once the turn is finished: its ``end`` event read
and no call still ``running`` (a tool still running, or a call awaiting approval, keeps a
turn going after the model's stream ended). The same rule as ``toolcall-tracker replay
--follow``.
"""

from __future__ import annotations

from ..calls import Status
from ..limits import Limits
from ..machine import ToolCallStateMachine
from ._journal import JournalRecord
from ._restore import apply_events

__all__ = ["TurnProgress"]


class TurnProgress:
    """The calls of a turn as its records are read, and whether it finished."""

    __slots__ = ("machine",)

    def __init__(self) -> None:
        self.machine: ToolCallStateMachine | None = None

    def add(self, record: JournalRecord) -> None:
        """Apply one record (the ``limits`` record starts the machine; ``events``
        records move it; every other record leaves it as it is)."""
        if record.kind == "limits":
            self.machine = ToolCallStateMachine(limits=Limits(**record.data["limits"]))
            return
        if record.kind != "events":
            return
        machine = self.machine
        if machine is None:  # a journal written without its limits record: defaults
            machine = self.machine = ToolCallStateMachine()
        apply_events(machine, record.data)

    @property
    def finished(self) -> bool:
        """The turn ended and no call is left running."""
        machine = self.machine
        if machine is None or machine.end is None:
            return False
        return all(call.status is not Status.RUNNING for call in machine.list())
