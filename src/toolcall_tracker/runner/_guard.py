"""The seam between the runner's start step and an outcome store (private).

Right before a tool starts, the runner's table puts the call in the ``claiming`` state and
asks the turn's :class:`StartGuard` (if it has one) whether the call may run:

- ``claim`` returns ``None``: the call is claimed; the tool runs;
- ``claim`` returns a :class:`GuardOutcome`: the tool does not run; the call ends with the
  outcome's result (or its failure, as an ``error``);
- ``claim`` raises: the tool does not run; the call ends ``error`` with a failure of kind
  ``claim_failed`` (nothing ran, so the call stays decidable by a later attempt).

After the tool really finished (returned, raised, timed out with its thread ended),
``record`` is told its outcome. If ``record`` raises, the real outcome still goes to the
tracker; the call is reported "in doubt" through the runner's listener hook and logged at
WARNING (it ran, so it must never be run again).

A guard may also offer ``key(call) -> str``, the store key it claims the call under, and
``attempt(call) -> int``, which run of the call a won claim is (a take-over is a second):
the runner gives the tool's :class:`~toolcall_tracker.tools.ToolContext` the idempotency key
derived from that key, and that attempt (without them: the turn's own key, attempt 1).

A resume helper implements this protocol over an outcome store; the runner knows nothing
else of stores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ..calls import ToolCall
from ..failures import CallFailure

__all__ = ["GuardOutcome", "StartGuard"]


@dataclass(frozen=True)
class GuardOutcome:
    """Do not run the tool; finish the call with this instead.

    Exactly one of ``result`` / ``failure`` is meaningful: a ``failure`` that is not
    ``None`` ends the call ``error`` with it, else the call ends ``done`` with ``result``.
    """

    result: Any = None
    failure: CallFailure | None = None


class StartGuard(Protocol):
    """Asked right before a tool starts, and told after it really finished."""

    async def claim(self, call: ToolCall) -> GuardOutcome | None:
        """``None``: claimed, the tool runs. A :class:`GuardOutcome`: it does not."""
        ...

    async def record(self, call: ToolCall, result: Any, failure: CallFailure | None) -> None:
        """The tool ran and really finished with ``result`` (or ``failure``)."""
        ...
