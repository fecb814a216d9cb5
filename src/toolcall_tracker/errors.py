"""Exceptions raised by the library, and the structured error values it stores in calls.

Exceptions (raised to your code):

- :class:`InvalidEvent` (a :class:`ValueError`): an event is malformed. Nothing changed.
- :class:`ToolCallFailed`: a call you waited for ended in ``error``; carries the snapshot.
- :class:`UnknownToolCall` (a :class:`LookupError`): you waited for an id whose ``start``
  never arrived before the turn ended.
- :class:`TrackerClosed` (a :class:`RuntimeError`): the tracker was closed.

- :class:`ApprovalRefused` (a :class:`ValueError`): pending approvals or decisions given to
  ``ToolRunner.resume`` do not verify (tampered, replayed, wrong key). Nothing ran.

All of them derive from :class:`ToolCallTrackerError`.

Error values (stored in ``ToolCall.error`` when the library itself fails a call): frozen
pydantic models deriving from :class:`CallFailure`, each with a ``kind`` string and a
human-readable ``message``. Recognise them with ``isinstance`` or by ``kind``;
``error.model_dump()`` (or ``call.model_dump(mode="json")``) gives plain JSON.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from .calls import ToolCall

__all__ = [
    "ApprovalRefused",
    "ArgumentsTooLarge",
    "CallFailure",
    "IncompleteArguments",
    "InvalidArguments",
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


class CallFailure(BaseModel):
    """Base of the error values the library stores in ``ToolCall.error``."""

    model_config = ConfigDict(frozen=True)

    kind: str
    message: str


class InvalidArguments(CallFailure):
    """The argument text was not valid JSON when the call became ready.

    ``position`` is the 0-based character offset of the problem in ``args_text``;
    ``line`` and ``column`` are 1-based.
    """

    kind: Literal["invalid_arguments"] = "invalid_arguments"
    position: int
    line: int
    column: int


class IncompleteArguments(CallFailure):
    """The turn ended while the call's arguments were still streaming.

    ``reason`` is the ``End`` event's reason (``"length"``, ``"cancelled"``, ...), if any.
    """

    kind: Literal["incomplete_arguments"] = "incomplete_arguments"
    reason: str | None = None


class ArgumentsTooLarge(CallFailure):
    """The argument text grew past ``Limits.max_args_chars``; the text was discarded.

    ``limit`` is the limit in characters; ``received`` how many had arrived, counting the
    fragment that crossed it.
    """

    kind: Literal["arguments_too_large"] = "arguments_too_large"
    limit: int
    received: int
