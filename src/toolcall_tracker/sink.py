"""The one path adapters write events through: :class:`EventSink`, and the sources that use it.

An adapter translates provider items into the six protocol events. It writes them into an
:class:`EventSink` with one method per event type (``write_start``, ``write_delta``, ...):

- a :class:`~toolcall_tracker.ToolCallStateMachine` (or a tracker) is a sink, so an adapter
  bound to one applies each event directly, without building an event model per
  fragment. That is the fast path, and it is simply the path;
- :class:`EventCollector` is a sink that builds the event models instead; an adapter's
  ``feed(item) -> list[Event]`` is a collector's contents.

A sink also carries the :class:`~toolcall_tracker.Limits` the adapter must honour, so an
adapter bound to a machine keeps no more text, ids or names than that machine allows.

:class:`ItemSource` is what :meth:`ToolCallTracker.consume` recognises to drive an adapted
stream (``adapters.adapt(...)`` returns one) through the sink path: it receives one
provider item at a time and writes the events it implies straight into the machine.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Protocol, runtime_checkable

from ._support import construct
from .events import Delta, End, Error, EventInput, Ready, Result, Start
from .limits import DEFAULT_LIMITS, Limits

__all__ = ["EventCollector", "EventSink", "ItemSource", "WrittenEvent"]

WrittenEvent = Start | Delta | Ready | Result | Error | End
"""The event models a collector builds (and an adapter's ``feed`` returns)."""


class EventSink(Protocol):
    """Where events are written: one method per event type, plus ``apply`` for models.

    Implemented by :class:`~toolcall_tracker.ToolCallStateMachine`,
    :class:`~toolcall_tracker.ToolCallTracker` and :class:`EventCollector`. Writing an event
    has exactly the effect of applying the same event model, including the
    :class:`~toolcall_tracker.InvalidEvent` raised for a malformed one.
    """

    @property
    def limits(self) -> Limits:
        """The limits the writer must honour (ids, names, argument text)."""
        ...

    def apply(self, event: EventInput) -> None:
        """Apply one event model or wire-shape mapping."""
        ...

    def write_start(self, call_id: str, name: str) -> None:
        """``start``: a call to tool ``name`` is announced."""
        ...

    def write_delta(self, call_id: str, text: str) -> None:
        """``delta``: a fragment of the call's argument JSON."""
        ...

    def write_ready(self, call_id: str) -> None:
        """``ready``: the arguments are complete."""
        ...

    def write_result(self, call_id: str, result: Any) -> None:
        """``result``: the tool returned ``result``."""
        ...

    def write_error(self, call_id: str, error: Any) -> None:
        """``error``: the call failed with ``error``."""
        ...

    def write_end(self, ok: bool = True, reason: str | None = None) -> None:
        """``end``: the model's turn is over."""
        ...


class EventCollector:
    """An :class:`EventSink` that builds the event models and keeps them, in order.

    ``take()`` returns them and starts a new list. The models are built without validation
    (the machine that later applies them validates them); nothing is checked here.

    Args:
        limits: the limits reported to writers (default: :data:`~toolcall_tracker.DEFAULT_LIMITS`).
    """

    __slots__ = ("_limits", "events")

    def __init__(self, limits: Limits | None = None) -> None:
        self._limits = DEFAULT_LIMITS if limits is None else limits
        self.events: list[WrittenEvent] = []
        """The events written since the last :meth:`take`."""

    @property
    def limits(self) -> Limits:
        """The limits reported to writers."""
        return self._limits

    def take(self) -> list[WrittenEvent]:
        """The events written so far; the collector starts empty again."""
        events = self.events
        self.events = []
        return events

    def apply(self, event: EventInput) -> None:
        """Keep an event model as it is (a mapping is kept too: the machine checks it)."""
        self.events.append(event)  # type: ignore[arg-type]

    def write_start(self, call_id: str, name: str) -> None:
        """Keep a ``Start``."""
        self.events.append(
            construct(Start, {"type": "start", "id": call_id, "name": name}, {"id", "name"})
        )

    def write_delta(self, call_id: str, text: str) -> None:
        """Keep a ``Delta``."""
        self.events.append(
            construct(
                Delta,
                {"type": "delta", "id": call_id, "args_text_delta": text},
                {"id", "args_text_delta"},
            )
        )

    def write_ready(self, call_id: str) -> None:
        """Keep a ``Ready``."""
        self.events.append(construct(Ready, {"type": "ready", "id": call_id}, {"id"}))

    def write_result(self, call_id: str, result: Any) -> None:
        """Keep a ``Result``."""
        self.events.append(
            construct(Result, {"type": "result", "id": call_id, "result": result}, {"id", "result"})
        )

    def write_error(self, call_id: str, error: Any) -> None:
        """Keep an ``Error``."""
        self.events.append(
            construct(Error, {"type": "error", "id": call_id, "error": error}, {"id", "error"})
        )

    def write_end(self, ok: bool = True, reason: str | None = None) -> None:
        """Keep an ``End``."""
        self.events.append(
            construct(End, {"type": "end", "reason": reason, "ok": ok}, {"ok", "reason"})
        )


@runtime_checkable
class ItemSource(Protocol):
    """An async source of provider items that writes the events each one implies.

    :meth:`ToolCallTracker.consume` drives a source of this shape through the sink path:
    ``item = await source.receive()`` until it raises ``StopAsyncIteration``, then
    ``source.write(item, machine)`` for each item, ``source.finish(machine)`` at the end,
    and ``await source.aclose()`` if it stops early. ``adapters.adapt(...)`` returns one.
    """

    def receive(self) -> Awaitable[Any]:
        """An awaitable of the next provider item, which raises ``StopAsyncIteration`` when
        there is none (an ``async def receive`` is one; ``adapt()``'s returns the source's
        own ``__anext__`` awaitable, with no coroutine of its own per item)."""
        ...

    def write(self, item: Any, sink: EventSink) -> None:
        """Write the events ``item`` implies into ``sink``."""
        ...

    def finish(self, sink: EventSink) -> None:
        """Write what the end of the source implies (the turn's end, usually)."""
        ...

    async def aclose(self) -> None:
        """Close the underlying source."""
        ...
