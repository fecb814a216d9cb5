"""A runner's settings: :class:`RunnerSettings` (a frozen value) and the policy built from it.

:class:`RunnerSettings` is what :class:`~toolcall_tracker.runner.ToolRunner` was given;
:class:`RunPolicy` is built once from it and the tools, and is everything a turn reads of
its runner: each tool's settings resolved against the runner's defaults, the signer of
pending approvals, tracing, and the runner-wide
:class:`~toolcall_tracker.runner._slots.Capacity` (per-tool caps and the sync tools'
thread pool, shared by every turn of the runner).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..tools import Tool
from ._pending import _Signer
from ._slots import Capacity, TurnSlots

if TYPE_CHECKING:
    from ._otel import Tracing

__all__ = ["DEFAULT_MAX_THREADS", "RunPolicy", "RunnerSettings"]

DEFAULT_MAX_THREADS = 40
"""Sync tools running at once per runner, abandoned ones included (on every backend)."""


def _positive_int(label: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{label} must be a positive int, not {value!r}")


@dataclass(frozen=True)
class RunnerSettings:
    """A :class:`ToolRunner`'s settings, as one frozen value (``runner.options``).

    (Named ``ToolOptions`` up to 0.2; that name is a deprecated alias: these are the
    runner's settings, not a tool's, which are :class:`~toolcall_tracker.Tool`'s own.)

    See :class:`ToolRunner` for each field.

    Raises:
        ValueError: a limit is not positive.
    """

    eager: bool = False
    max_concurrency: int | None = None
    call_timeout: float | None = None
    timeout: float | None = None
    max_threads: int = DEFAULT_MAX_THREADS

    def __post_init__(self) -> None:
        _positive_int("max_concurrency", self.max_concurrency)
        _positive_int("max_threads", self.max_threads)
        for label, value in (("call_timeout", self.call_timeout), ("timeout", self.timeout)):
            if value is not None and not value > 0:
                raise ValueError(f"{label} must be a positive number of seconds, not {value!r}")


class RunPolicy:
    """What every turn of one runner reads (built once per runner)."""

    __slots__ = ("capacity", "free_tools", "options", "signer", "sync_tools", "tools", "tracing")

    def __init__(
        self,
        tools: dict[str, Tool[..., Any]],
        options: RunnerSettings,
        signer: _Signer,
        tracing: Tracing | None,
    ) -> None:
        self.tools = tools
        self.options = options
        self.signer = signer  # signs (and checks) the pending approvals
        self.tracing = tracing
        self.capacity = Capacity(options.max_threads)
        # Resolved once here, not per call: the names of the sync tools (they take a thread)
        # and of the tools that draw nothing from the runner-wide capacity (no cap of their
        # own, not sync: nothing to count, lock or wake for).
        self.sync_tools = frozenset(name for name, spec in tools.items() if self.is_sync(spec))
        self.free_tools = frozenset(
            name
            for name, spec in tools.items()
            if spec.max_concurrency is None and name not in self.sync_tools
        )

    def turn_slots(self) -> TurnSlots:
        """A new turn's slots, drawing from this runner's capacity."""
        return TurnSlots(
            self.capacity,
            self.options.max_concurrency or math.inf,
            self.cap,
            self.sync_tools.__contains__,
            self.free_tools,
        )

    def eager(self, spec: Tool[..., Any]) -> bool:
        return self.options.eager if spec.eager is None else spec.eager

    def call_timeout(self, spec: Tool[..., Any]) -> float | None:
        return spec.timeout if spec.timeout is not None else self.options.call_timeout

    def cap(self, name: str) -> float:
        spec = self.tools.get(name)
        cap = spec.max_concurrency if spec is not None else None
        return math.inf if cap is None else cap

    @staticmethod
    def is_sync(spec: Tool[..., Any]) -> bool:
        return not spec.is_async and not spec.is_generator
