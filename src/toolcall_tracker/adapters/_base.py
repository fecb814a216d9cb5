"""What every adapter is, the one path it writes through, and the drivers on top of it.

An adapter is a sans-IO translator from one provider's stream items to tracker events. Its
one translation path writes the events into an :class:`~toolcall_tracker.EventSink`:

- ``write(item, sink)`` for each item and ``finish(sink)`` once the stream is exhausted.
  Bound to a machine or tracker this applies each event directly, with no event model
  built per fragment, under that machine's :class:`~toolcall_tracker.Limits`;
- ``feed(item) -> list[Event]`` and ``end() -> list[Event]`` are the same path written
  into an :class:`~toolcall_tracker.EventCollector`, under the adapter's own ``limits=``.

:func:`adapt` drives an adapter over an async iterable, so that
``await tracker.consume(adapt(sdk_stream, SomeAdapter()))`` is all a user writes (the
tracker recognises the result as an :class:`~toolcall_tracker.ItemSource` and writes each
item straight into its machine); :func:`apply_stream` is the synchronous driver.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from typing import Any, Generic, Protocol, TypeVar

from ..events import Delta, End, Error, Ready, Result, Start
from ..limits import Limits
from ..sink import EventCollector, EventSink
from ._calls import CallTable
from ._sinkguard import SinkRaised, unwrap

__all__ = ["AdaptedStream", "Adapter", "AdapterEvent", "adapt", "apply_stream"]

AdapterEvent = Start | Delta | Ready | Result | Error | End
"""The event models an adapter emits."""

ItemT_contra = TypeVar("ItemT_contra", contravariant=True)
ItemT = TypeVar("ItemT")


class Adapter(Protocol[ItemT_contra]):
    """The adapter protocol: a stateful, sans-IO translator for one stream.

    ``feed`` and ``end`` are all an adapter must have. The built-in adapters also have
    ``write(item, sink)`` and ``finish(sink)`` (see :class:`SinkAdapter`), which the drivers
    use when present.
    """

    def feed(self, item: ItemT_contra) -> list[AdapterEvent]:
        """The tracker events that one provider item implies (possibly none)."""
        ...

    def end(self) -> list[AdapterEvent]:
        """What the end of the stream implies: an ``End``, unless ``feed`` emitted one."""
        ...


class SinkAdapter:
    """Base of the built-in adapters: one translation path, written into a sink.

    A subclass implements ``_translate(item)`` and ``_finish_stream()``, writing through
    ``self._sink`` (an :class:`~toolcall_tracker.EventSink`) and honouring ``self._limits``
    (the sink's limits) for every id, name and piece of text it keeps. ``_limits_changed()``
    is called when a sink with other limits is bound.

    Args:
        limits: the limits to honour when used through ``feed`` / ``end`` (default: the
            default limits). Written into a machine or tracker, the adapter honours that
            machine's limits instead.
    """

    _table: CallTable | None = None
    """The adapter's call table, if it drives one (bound to the same sink)."""

    def __init__(self, *, limits: Limits | None = None) -> None:
        self._collector = collector = EventCollector(limits)
        self._sink: EventSink = collector
        self._limits: Limits = collector.limits

    @property
    def limits(self) -> Limits:
        """The limits the adapter currently honours (those of the sink it writes into)."""
        return self._limits

    def feed(self, item: Any) -> list[AdapterEvent]:
        """The tracker events that one provider item implies (possibly none)."""
        collector = self._collector
        if self._sink is not collector:
            self._bind(collector)
        try:
            self._translate(item)
        except SinkRaised as wrapped:
            collector.take()
            unwrap(wrapped)
        return collector.take()

    def end(self) -> list[AdapterEvent]:
        """What the end of the stream implies: an ``End``, unless ``feed`` emitted one."""
        collector = self._collector
        if self._sink is not collector:
            self._bind(collector)
        try:
            self._finish_stream()
        except SinkRaised as wrapped:
            collector.take()
            unwrap(wrapped)
        return collector.take()

    def write(self, item: Any, sink: EventSink) -> None:
        """Write the events one provider item implies into ``sink`` (a machine, a tracker)."""
        if sink is not self._sink:
            self._bind(sink)
        try:
            self._translate(item)
        except SinkRaised as wrapped:  # what the sink raised, never a malformed item
            unwrap(wrapped)

    def finish(self, sink: EventSink) -> None:
        """Write what the end of the stream implies into ``sink``."""
        if sink is not self._sink:
            self._bind(sink)
        try:
            self._finish_stream()
        except SinkRaised as wrapped:
            unwrap(wrapped)

    def _bind(self, sink: EventSink) -> None:
        self._sink = sink
        if self._table is not None:
            self._table.bind(sink)
        limits = sink.limits
        if limits is not self._limits:
            self._limits = limits
            self._limits_changed()

    def _limits_changed(self) -> None:
        """Called when the adapter starts honouring other limits."""

    def _translate(self, item: Any) -> None:
        raise NotImplementedError

    def _finish_stream(self) -> None:
        raise NotImplementedError


class AdaptedStream(Generic[ItemT]):
    """What :func:`adapt` returns: an adapted stream, in two shapes.

    - An async iterator of event models (``async for event in adapt(...)``), for code that
      wants the events themselves.
    - An :class:`~toolcall_tracker.ItemSource` (``receive`` / ``write`` / ``finish``), which
      :meth:`ToolCallTracker.consume` uses to write each item straight into its machine.

    ``aclose()`` closes the underlying source if it can be closed; ``consume`` calls it
    when it stops reading early (cancelled, or a malformed event).
    """

    __slots__ = ("_adapter", "_done", "_pending", "_source", "_source_iter")

    def __init__(self, source: AsyncIterable[ItemT], adapter: Adapter[ItemT]) -> None:
        self._source = source
        self._source_iter: AsyncIterator[ItemT] | None = None
        self._adapter = adapter
        self._pending: deque[AdapterEvent] = deque()
        self._done = False

    @property
    def adapter(self) -> Adapter[ItemT]:
        """The adapter this stream drives."""
        return self._adapter

    def __aiter__(self) -> AdaptedStream[ItemT]:
        return self

    async def __anext__(self) -> AdapterEvent:
        pending = self._pending
        while not pending:
            if self._done:
                raise StopAsyncIteration
            try:
                item = await self.receive()
            except StopAsyncIteration:
                self._done = True
                pending.extend(self._adapter.end())
            else:
                pending.extend(self._adapter.feed(item))
        return pending.popleft()

    async def receive(self) -> ItemT:
        """The next provider item of the source; ``StopAsyncIteration`` at its end."""
        iterator = self._source_iter
        if iterator is None:
            iterator = self._source_iter = aiter(self._source)
        return await anext(iterator)

    def write(self, item: ItemT, sink: EventSink) -> None:
        """Write the events ``item`` implies into ``sink``, through the adapter."""
        adapter: Any = self._adapter
        if isinstance(adapter, SinkAdapter):
            adapter.write(item, sink)
        else:
            for event in adapter.feed(item):
                sink.apply(event)

    def finish(self, sink: EventSink) -> None:
        """Write what the end of the source implies into ``sink`` (the turn's end)."""
        self._done = True
        adapter: Any = self._adapter
        if isinstance(adapter, SinkAdapter):
            adapter.finish(sink)
        else:
            for event in adapter.end():
                sink.apply(event)

    async def aclose(self) -> None:
        """Stop: close the source (its ``aclose()`` or ``close()``) if it has one."""
        from .._sources import close_source  # anyio is loaded only when a stream is closed

        self._done = True
        self._pending.clear()
        for target in (self._source_iter, self._source):
            if target is not None:
                await close_source(target)


def adapt(source: AsyncIterable[ItemT], adapter: Adapter[ItemT]) -> AdaptedStream[ItemT]:
    """Translate an async stream of provider items into tracker events.

    ``await tracker.consume(adapt(stream, OpenAIChatAdapter()))`` writes the events each
    item implies straight into the tracker, then what the end of the source implies (which
    includes the turn's ``End``). Iterated directly, the result yields the event models.
    """
    return AdaptedStream(source, adapter)


def apply_stream(sink: EventSink, items: Iterable[Any], adapter: Adapter[Any]) -> None:
    """Synchronously write every item through ``adapter`` into ``sink``, then its end.

    ``sink`` is a :class:`~toolcall_tracker.ToolCallStateMachine`, a
    :class:`~toolcall_tracker.ToolCallTracker` or any :class:`~toolcall_tracker.EventSink`.
    The synchronous counterpart of ``await tracker.consume(adapt(stream, adapter))``, for
    recorded streams, tests and sync code; it uses the same path.

    Raises:
        InvalidEvent: an adapter produced a malformed event (a bug in the adapter).
    """
    if isinstance(adapter, SinkAdapter):
        # ``write`` for each item, with the binding checked once: nothing else binds the
        # adapter while this loop runs.
        if sink is not adapter._sink:
            adapter._bind(sink)
        translate = adapter._translate
        try:
            for item in items:
                translate(item)
        except SinkRaised as wrapped:  # what the sink raised, never a malformed item
            unwrap(wrapped)
        adapter.finish(sink)
        return
    apply = sink.apply
    feed = adapter.feed
    for item in items:
        for event in feed(item):
            apply(event)
    for event in adapter.end():
        apply(event)
