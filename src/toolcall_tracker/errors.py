"""Every exception the library raises (the error values it stores in calls live in
:mod:`toolcall_tracker.failures`).

Exceptions (raised to your code):

- :class:`InvalidEvent` (a :class:`ValueError`): an event is malformed. Nothing changed.
- :class:`ToolCallFailed`: a call you waited for ended in ``error``; carries the snapshot.
- :class:`UnknownToolCall` (a :class:`LookupError`): you waited for an id whose ``start``
  never arrived before the turn ended.
- :class:`TrackerClosed` (a :class:`RuntimeError`): the tracker was closed.

- :class:`ApprovalRefused` (a :class:`ValueError`): pending approvals or decisions given to
  ``ToolRunner.resume`` do not verify (tampered, replayed, wrong key). Nothing ran.

All of them derive from :class:`ToolCallTrackerError`.

- :class:`FailCall` is raised by a tool (not by the library): it ends the tool's call
  with a :class:`~toolcall_tracker.failures.CallFailure` of the tool's choosing.

The error values stored in ``ToolCall.error`` (:class:`~toolcall_tracker.failures.CallFailure`
and its subclasses) moved to :mod:`toolcall_tracker.failures` in 0.3; importing one from
here still works, with a ``DeprecationWarning``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import failures as _failures
from ._moved import aliases as _aliases

if TYPE_CHECKING:
    from .calls import ToolCall

__all__ = [
    "ApprovalRefused",
    "FailCall",
    "InvalidEvent",
    "ToolCallFailed",
    "ToolCallTrackerError",
    "TrackerClosed",
    "UnknownToolCall",
]


class ToolCallTrackerError(Exception):
    """Base class of every exception this library raises."""


class InvalidEvent(ToolCallTrackerError, ValueError):
    """An event is malformed: not a mapping or model, missing a field, a wrong type...

    The message names the problem; ``event`` is the offending input. The state is unchanged.
    """

    def __init__(self, message: str, event: object = None) -> None:
        super().__init__(message)
        self.event = event


class ToolCallFailed(ToolCallTrackerError):
    """A call ended in ``error`` while you waited for it.

    Attributes:
        call: the call's snapshot (status ``error``).
        error: the call's error value (``call.error``).
    """

    def __init__(self, call: ToolCall) -> None:
        self.call = call
        self.error = call.error
        super().__init__(f"tool call {call.id!r} ({call.name}) failed: {_summary(call.error)}")


class UnknownToolCall(ToolCallTrackerError, LookupError):
    """The turn ended (or the tracker closed) and no call with this id ever started."""

    def __init__(self, call_id: str, why: str) -> None:
        self.id = call_id
        super().__init__(f"no tool call {call_id!r} was started: {why}")


class ApprovalRefused(ToolCallTrackerError, ValueError):
    """Pending approvals or decisions that do not verify: nothing was run.

    Raised by :meth:`~toolcall_tracker.runner.ToolRunner.resume` when the pending state's
    signature does not match (tampered arguments or ids, a wrong key, unsigned state given
    to a runner with a secret) or a decision is not bound to a pending call of that state
    (another call's or another turn's decision, a made-up token). The message says which.
    """


class TrackerClosed(ToolCallTrackerError, RuntimeError):
    """The tracker was closed: it accepts no more events and releases every waiter."""


def _summary(error: Any) -> str:
    message = getattr(error, "message", None)
    if isinstance(message, str):
        return message
    text = repr(error)
    return text if len(text) <= 200 else text[:197] + "..."


class FailCall(Exception):
    """Raised by a tool to end its call with ``failure`` (a
    :class:`~toolcall_tracker.failures.CallFailure`) instead of ``tool_exception``.

    The runner stores ``failure`` as the call's error as it is; the model reads it through
    the feedback builders like any other failure.
    """

    def __init__(self, failure: _failures.CallFailure) -> None:
        if not isinstance(failure, _failures.CallFailure):
            raise TypeError(f"FailCall takes a CallFailure, not {type(failure).__name__}")
        super().__init__(failure.message)
        self.failure = failure


__getattr__ = _aliases(
    __name__,
    {
        name: ("toolcall_tracker.failures", name)
        for name in ("ArgumentsTooLarge", "CallFailure", "IncompleteArguments", "InvalidArguments")
    },
)
"""The error values that moved to :mod:`toolcall_tracker.failures` (deprecated aliases)."""
