"""The reducer's tables and vocabulary: every transition of the protocol, in two tables.

``TRANSITIONS[state][event type]`` names, for each state a call can be in (``None`` for an id
never seen, ``"forgotten"`` for a forgotten one), the :class:`Action` to take or the
:class:`IgnoreReason` the event is ignored for; ``STREAM[phase][event type]`` does the same
for the stream's :class:`StreamPhase` (``OPEN``, ``FULL``, ``ENDED``: ``str`` members, so
``STREAM["open"]`` still works). :func:`reduce` applies one row.
The theory of operation, and the implementation, are in :mod:`toolcall_tracker._reducer`.
"""

from ._reducer import (
    FORGOTTEN,
    STREAM,
    TRANSITIONS,
    Action,
    IgnoreReason,
    StreamAction,
    StreamPhase,
    reduce,
)

__all__ = [
    "FORGOTTEN",
    "STREAM",
    "TRANSITIONS",
    "Action",
    "IgnoreReason",
    "StreamAction",
    "StreamPhase",
    "reduce",
]
