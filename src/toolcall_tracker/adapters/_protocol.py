"""What every adapter is: the protocol, and the one path an adapter writes through.

An adapter is a sans-IO translator from one provider's stream items to tracker events. Its
one translation path writes the events into an :class:`~toolcall_tracker.EventSink`:

- ``write(item, sink)`` for each item and ``finish(sink)`` once the stream is exhausted.
  Bound to a machine or tracker this applies each event directly, with no event model
  built per fragment, under that machine's :class:`~toolcall_tracker.Limits`;
- ``feed(item) -> list[Event]`` and ``end() -> list[Event]`` are the same path written
  into an :class:`~toolcall_tracker.EventCollector`, under the adapter's own ``limits=``.

:class:`SinkAdapter` is the base every built-in adapter extends; the drivers that run one
over a stream are in ``_drive``.
"""

from __future__ import annotations

from collections.abc import (
    Iterable,
)
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..events import Delta, End, Error, Ready, Result, Start
from ..limits import DEFAULT_LIMITS, Limits
from ..sink import EventCollector, EventSink
from ._calls import AdapterCallTable
from ._sinkguard import SinkRaised, unwrap

if TYPE_CHECKING:
    pass

__all__ = ["Adapter", "AdapterEvent", "SinkAdapter"]

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
    is called when a sink with other limits is bound. ``apply_stream`` writes a whole
    stream through ``_translate_all(items)``: an adapter with a hot path reads there every
    item in one loop (``_translate(item)`` is then that loop over one item), saving a call
    per item; a subclass that overrides ``_translate`` gets the plain loop back.

    Args:
        limits: the limits to honour when used through ``feed`` / ``end`` (default: the
            default limits). Written into a machine or tracker, the adapter honours that
            machine's limits instead.
    """

    _table: AdapterCallTable | None = None
    """The adapter's call table, if it drives one (bound to the same sink)."""

    def __init__(self, *, limits: Limits | None = None) -> None:
        # Bound to nothing yet: ``write``/``finish`` bind the sink given, ``feed``/``end``
        # the adapter's own collector, made then (an adapter is made per turn, and most
        # only ever write into a tracker).
        self._collector: EventCollector | None = None
        self._given_limits = limits
        self._sink: EventSink | None = None
        self._limits: Limits = DEFAULT_LIMITS if limits is None else limits

    @property
    def limits(self) -> Limits:
        """The limits the adapter currently honours (those of the sink it writes into)."""
        return self._limits

    def feed(self, item: Any) -> list[AdapterEvent]:
        """The tracker events that one provider item implies (possibly none)."""
        collector = self._collector_bound()
        try:
            self._translate(item)
        except SinkRaised as wrapped:
            collector.take()
            unwrap(wrapped)
        return collector.take()

    def end(self) -> list[AdapterEvent]:
        """What the end of the stream implies: an ``End``, unless ``feed`` emitted one."""
        collector = self._collector_bound()
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

    def _collector_bound(self) -> EventCollector:
        """The adapter's own collector (made under the limits given to the adapter, the
        first time), bound."""
        collector = self._collector
        if collector is None:
            collector = self._collector = EventCollector(self._given_limits)
        if self._sink is not collector:
            self._bind(collector)
        return collector

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

    def _translate_all(self, items: Iterable[Any]) -> None:
        """Write every item of ``items`` (``apply_stream``'s loop): ``_translate`` each."""
        for item in items:
            self._translate(item)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "_translate" in cls.__dict__ and "_translate_all" not in cls.__dict__:
            # A class that rewrites items before its parent reads them (Mistral, the AI SDK
            # v4 reader): every item goes through its own _translate, never straight into
            # a loop it inherited.
            cls._translate_all = SinkAdapter._translate_all  # type: ignore[method-assign]

    def _finish_stream(self) -> None:
        raise NotImplementedError
