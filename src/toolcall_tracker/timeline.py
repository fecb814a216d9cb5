"""The per-call timeline an async tracker keeps: when each step of a call happened."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CallTimeline"]


@dataclass(slots=True)
class CallTimeline:
    """When things happened to one call, in seconds of ``time.monotonic()``.

    ``started``: its ``start`` was applied. ``ready``: its arguments completed (it became
    ``running``, or failed to parse). ``tool_started`` / ``tool_finished``: set by a tool
    runner around the tool itself (``None`` if no runner recorded them). ``finished``: it
    became ``done`` or ``error``. A field is ``None`` until that moment comes.
    """

    started: float | None = None
    ready: float | None = None
    tool_started: float | None = None
    tool_finished: float | None = None
    finished: float | None = None
