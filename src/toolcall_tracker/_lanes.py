"""The fast lane between the adapters' call table and a machine (private).

A machine keeps a pending call's argument text in its record (``_reducer._CallRecord``),
whose ``budget`` is the call's *fast lane*: the characters that may be appended with no
other check (see ``_CallRecord.append``). An adapter's call table writing into a machine
keeps, for each call it starts, the machine's record of that call, and appends a fragment
that fits in the lane straight into it: one subtraction, one comparison and one list
append, the first lines of ``_CallRecord.append``, without the machine's ``write_delta``
and its look-up. A fragment that does not fit refills the lane as ``write_delta`` would
(``_CallRecord.add``: coalescing the fragments when it is time), and one that does not
fit the call's room either, or meets a closed lane, goes through ``write_delta`` and the
table's path.

This is safe because a lane only ever admits what ``write_delta`` would append without a
report: the machine closes a call's lane (``budget = -1``) when the call leaves
``pending`` (so a record held after that appends nothing) and whenever a fragment listener
must be told of each fragment. The machine routes fragments by id and never replaces a
record under an id, so the record looked up at the call's start stays that call's.

A table that parsed a call's whole argument text itself (the AI SDK reader compares it
with the input the server states) hands that parse over with :func:`give`, so that the
text is parsed once. The machine takes it at ``ready`` only if the text it then holds is
that very string object (strings are immutable, and ``parse_json`` gives equal values for
one text), and drops it when the call fails. The value is the machine's from then on: the
table keeps no reference to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .calls import Status
from .machine import ToolCallStateMachine

if TYPE_CHECKING:
    from ._reducer import _CallRecord

__all__ = ["give", "lanes"]


def lanes(sink: object) -> Mapping[str, _CallRecord] | None:
    """The records by id of ``sink`` if it is a machine; ``None`` for any other sink (a
    tracker, a collector, a sink of the user's: their fragments take ``write_delta``)."""
    if type(sink) is ToolCallStateMachine:
        return sink._calls
    return None


def give(lane: _CallRecord, text: str, value: Any) -> None:
    """Hand the machine's pending record ``lane`` ``value``, the parse of ``text`` by
    ``parse_json``, for its ``ready`` to take if its text is then ``text`` itself."""
    if lane.status is Status.PENDING:
        lane.given = (text, value)
