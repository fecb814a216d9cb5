"""What a running tool may ask for besides its arguments (private; the public names are
re-exported by :mod:`toolcall_tracker.tools`).

A tool declares a parameter annotated ``ToolContext`` (or ``ToolContext[Deps]``): the
runner leaves it out of the tool's argument model and JSON Schema (the model never sees it)
and passes a :class:`ToolContext` when it runs the call. Through it the tool reads its
call's id and the application's dependencies (``runner.run(tracker, deps=...)``), publishes
progress, polls (from a sync tool's thread) whether its call was cancelled, and reads the
call's idempotency key, to pass to the API it calls, and which attempt this is.

A tool raises :class:`ToolRetry` to tell the model how to fix its call: the call fails with
a :class:`~toolcall_tracker.failures.RetryRequested` error, which every feedback builder
renders as the bare message.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic

from typing_extensions import TypeVar

from ._keys import call_key, idempotency_key

__all__ = ["DepsT", "ToolContext", "ToolRetry"]

DepsT = TypeVar("DepsT", default=Any)
"""The type of the application's dependencies (``Any`` unless a runner says otherwise)."""


class ToolContext(Generic[DepsT]):
    """The running call, as its tool sees it (built by the runner; one per call).

    Declare a parameter annotated ``ToolContext[MyDeps]`` (any name, any position after the
    positional-only parameters) to receive it; it is not part of the tool's schema.

    Attributes are read-only. :meth:`progress` and :attr:`cancelled` may be used from any
    thread (a sync tool runs in a worker thread).
    """

    __slots__ = (
        "_attempt",
        "_call_id",
        "_cancelled",
        "_deps",
        "_idempotency_key",
        "_publish",
        "_tool",
    )

    def __init__(
        self,
        call_id: str,
        tool: str,
        deps: DepsT,
        publish: Callable[[Any], None] | None = None,
        *,
        idempotency_key: str | None = None,
        attempt: int = 1,
    ) -> None:
        self._call_id = call_id
        self._tool = tool
        self._deps = deps
        self._publish = publish
        self._cancelled = threading.Event()
        self._idempotency_key = idempotency_key
        self._attempt = attempt

    @property
    def call_id(self) -> str:
        """The id of the call being run (the provider's tool-call id)."""
        return self._call_id

    @property
    def tool(self) -> str:
        """The tool's name, as the model called it."""
        return self._tool

    @property
    def deps(self) -> DepsT:
        """The dependencies given to ``runner.run(..., deps=...)`` (``None`` if none were)."""
        return self._deps

    @property
    def idempotency_key(self) -> str:
        """A stable key of this call of its turn (64 hex digits), safe to send to a third
        party: the same on every path that may run the call (the live run, a resume of
        its signed state, a restore of its durable turn, an engine's retry), and different
        for every other call. Pass it as the ``Idempotency-Key`` of the payment or e-mail
        API the tool calls: where that API honours it, a second run does no harm. It is
        derived from the turn, the call id, the tool and the model's argument text (see
        the "Durable turns" page); a context built by hand, outside a runner, derives it
        from the call id and tool alone."""
        key = self._idempotency_key
        if key is None:
            key = idempotency_key(call_key("", self._call_id, self._tool, ""))
            self._idempotency_key = key
        return key

    @property
    def attempt(self) -> int:
        """Which run of this call this is: 1, the first. A call is run again only when an
        earlier run of it is in doubt (its process stopped without recording an outcome)
        and its tool is ``idempotent=True``: the run that takes it over is attempt 2 (a
        durable turn counts the starts its journal recorded, so a third run is 3)."""
        return self._attempt

    @property
    def cancelled(self) -> bool:
        """Whether the call ended before the tool returned: cancelled, timed out, or its
        turn stopped. A sync tool cannot be interrupted, so a long one should poll this
        and return early; its result is discarded anyway. Thread-safe."""
        return self._cancelled.is_set()

    def wait_cancelled(self, timeout: float | None = None) -> bool:
        """Block (a sync tool's thread) until the call is cancelled or ``timeout`` seconds
        passed; return :attr:`cancelled`. Never call it from an async tool: it blocks the
        event loop (an async tool is cancelled by its cancel scope instead)."""
        return self._cancelled.wait(timeout)

    def progress(self, value: Any) -> None:
        """Publish a progress update of this call (as an async-generator tool's ``yield``
        does): ``RunControl.on_progress`` / ``progress()`` receive it as a
        :class:`~toolcall_tracker.runner.ProgressUpdate`. From a sync tool's thread it is
        handed to the event loop, keeping the order of the calls. A no-op when nobody
        watches progress, or once the call ended."""
        if self._publish is not None and not self._cancelled.is_set():
            self._publish(value)

    def _cancel(self) -> None:
        """The runner ended the call before the tool returned."""
        self._cancelled.set()

    def __repr__(self) -> str:
        state = ", cancelled" if self.cancelled else ""
        return f"<ToolContext {self._tool!r} call {self._call_id!r}{state}>"


class ToolRetry(Exception):
    """Raised by a tool to tell the model how to fix its call.

    The call fails with a :class:`~toolcall_tracker.failures.RetryRequested` error (kind
    ``retry``) holding ``message``, and every feedback builder sends the model that message
    as it is, instead of the structured error, so the model can call again::

        def get_weather(city: str) -> str:
            if city not in KNOWN:
                raise ToolRetry(f"unknown city {city!r}: use one of {sorted(KNOWN)}")
            ...

    Args:
        message: what the model should do differently (plain text).
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
