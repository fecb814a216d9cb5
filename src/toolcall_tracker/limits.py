"""Limits that keep a hostile or runaway stream from exhausting memory.

A tracker sits on the boundary between a remote model and local code, so its input is
untrusted. Every limit has a generous default (real streams never meet it) and can be
changed per machine or tracker: ``ToolCallTracker(limits=Limits(max_calls=100))``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_LIMITS", "Limits"]


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds a machine enforces. All sizes count characters (code points).

    Attributes:
        max_args_chars: the most argument text one call may accumulate (default 8 Mi
            characters, about 8 MB of ASCII JSON). A ``delta`` that would exceed it moves
            the call to ``error`` with an :class:`~toolcall_tracker.ArgumentsTooLarge`
            value and releases the buffered text; later deltas are ignored.
        max_calls: the most calls tracked at once (default 10,000). A ``start`` beyond it
            is ignored and reported with reason ``too_many_calls`` (the stream goes on;
            events for that id are then ``unknown_id``). Forgetting finished calls makes
            room again.
        max_id_chars: the longest call id accepted (default 256); a longer one makes the
            event an :class:`~toolcall_tracker.InvalidEvent`.
        max_name_chars: the longest tool name accepted (default 256); likewise.
        remember_forgotten: how many forgotten ids are remembered (default 4,096), so that
            late or duplicate events for them are ignored with reason ``forgotten`` rather
            than starting a new call. The oldest are dropped first.
    """

    max_args_chars: int = 8 * 1024 * 1024
    max_calls: int = 10_000
    max_id_chars: int = 256
    max_name_chars: int = 256
    remember_forgotten: int = 4096

    def __post_init__(self) -> None:
        for field in (
            "max_args_chars",
            "max_calls",
            "max_id_chars",
            "max_name_chars",
            "remember_forgotten",
        ):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"Limits.{field} must be a non-negative int, got {value!r}")
        if self.max_id_chars < 1:
            raise ValueError("Limits.max_id_chars must be at least 1")


DEFAULT_LIMITS = Limits()
"""The defaults, used when no ``limits`` are given."""
