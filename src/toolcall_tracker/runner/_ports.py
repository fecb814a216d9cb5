"""The two sides of a run and its :class:`RunControl` (private, shared by both modules).

The control reaches its turn only through :class:`TurnPort`; the turn reaches the control
only through the control's :class:`Link` (what the control shares with the run it serves:
its feeds, its settings, what the run leaves behind).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from ._feeds import Feed, RequestFeed
from ._pending import PendingApproval, PendingApprovals
from ._progress import ProgressUpdate
from ._table import RunnerState

logger = logging.getLogger("toolcall_tracker.runner")

PROGRESS_UNREAD = 1024
"""Unread progress updates kept per ``progress()`` iterator: a tool yielding faster than a
reader reads cannot grow memory without bound."""


class Preset(NamedTuple):
    """A decision made before its call asked (``RunControl.preset``)."""

    approved: bool
    arguments: Any
    reason: str | None


class TurnPort(Protocol):
    """What a control may ask of the run it serves."""

    def decide(self, call_id: str, approved: bool, arguments: Any, reason: str | None) -> bool:
        """Apply a decision; ``False`` if the call no longer awaits one.

        Raises ``KeyError`` for an id that is no call of the run."""
        ...

    def cancel(self, call_id: str, reason: str) -> bool: ...

    def state(self, call_id: str) -> RunnerState | None: ...

    def awaiting(self) -> list[PendingApproval]: ...


class Link:
    """What a :class:`RunControl` shares with the run it serves."""

    def __init__(self, defer: bool, on_progress: Callable[[ProgressUpdate], None] | None) -> None:
        self.defer = defer
        self.on_progress = on_progress
        self.turn: TurnPort | None = None
        self.last: TurnPort | None = None  # the turn, kept after the run for ``state``
        self.used = False
        self.requests = RequestFeed()
        self.progress = Feed(PROGRESS_UNREAD)
        self.pending: PendingApprovals | None = None
        self.edited: dict[str, Any] = {}
        self.ran: set[str] = set()  # edited calls whose tool started
        self.decided: dict[str, Preset] = {}  # applied when their call asks

    def open(self, turn: TurnPort) -> None:
        if self.used:
            raise RuntimeError("a RunControl serves one run: make a new one for each run")
        self.used = True
        self.turn = self.last = turn

    def close(self, pending: PendingApprovals | None) -> None:
        self.turn = None
        self.pending = pending
        self.requests.close()
        self.progress.close()

    @property
    def wants_progress(self) -> bool:
        return self.on_progress is not None or self.progress.listened

    def publish_progress(self, update: ProgressUpdate) -> None:
        self.progress.publish(update)
        if self.on_progress is not None:
            try:
                self.on_progress(update)
            except Exception:
                logger.warning("on_progress raised for call %r", update.call_id, exc_info=True)
