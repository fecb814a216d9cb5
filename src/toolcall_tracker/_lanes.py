"""The fast lane between the adapters' call table and a machine (private).

A machine keeps a pending call's argument text in its record (``_reducer._CallRecord``),
whose ``budget`` is the call's *fast lane*: the characters that may be appended with no
other check (see ``_CallRecord.append``). An adapter's call table writing into a machine
keeps, for each call it starts, the machine's record of that call, and appends a fragment
that fits in the lane straight into it: one subtraction, one comparison and one list
append, the first lines of ``_CallRecord.append``, without the machine's ``write_delta``
and its look-up. A fragment that does not fit goes through ``write_delta``, which refills
the lane (coalescing the fragments when it is time) or takes the table's path.

This is safe because a lane only ever admits what ``write_delta`` would append without a
report: the machine closes a call's lane (``budget = -1``) when the call leaves
``pending`` (so a record held after that appends nothing) and whenever a fragment listener
must be told of each fragment. The machine routes fragments by id and never replaces a
record under an id, so the record looked up at the call's start stays that call's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .machine import ToolCallStateMachine

if TYPE_CHECKING:
    from ._reducer import _CallRecord

__all__ = ["lanes"]


def lanes(sink: object) -> Mapping[str, _CallRecord] | None:
    """The records by id of ``sink`` if it is a machine; ``None`` for any other sink (a
    tracker, a collector, a sink of the user's: their fragments take ``write_delta``)."""
    if type(sink) is ToolCallStateMachine:
        return sink._calls
    return None
