"""What every adapter is, and :func:`adapt`, the one async helper on top of them.

An adapter is a sans-IO translator from one provider's stream items to tracker events:
``feed(item) -> list[Event]`` for each item and ``end() -> list[Event]`` once the stream is
exhausted. It does no I/O and never waits; :func:`adapt` drives it over an async iterable
so that ``await tracker.consume(adapt(sdk_stream, SomeAdapter()))`` is all a user writes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable
from typing import Any, Generic, Protocol, TypeVar

from ..events import Delta, End, Error, Ready, Result, Start
from ..machine import ToolCallStateMachine
from ..tracker import _close_source
from ._common import _delta

__all__ = ["Adapter", "AdaptedStream", "AdapterEvent", "adapt", "apply_stream"]

_DeltaSink = Callable[[str, str], bool]
"""``sink(call_id, text) -> handled``: a machine's fast lane for plain fragments."""


class _FastLane:
    """Mixin for adapters that can hand plain fragments straight to a machine.

    While an adapter is driven by ``tracker.consume(adapt(...))`` or :func:`apply_stream`,
    ``_sink`` is the machine's ``_fast_delta``. On its hot path (an item that implies
    exactly one ``delta`` and nothing else) the adapter calls ``self._sink(id, text)``
    instead of building a ``Delta`` model; if that returns ``True`` the fragment is applied
    and the adapter returns no event for it, otherwise it emits the ``Delta`` as usual.
    Nothing else may be emitted by the same ``feed`` call before it, so the order of
    events is the same either way: everything earlier was applied before ``feed`` ran.
    Outside those drivers ``_sink`` is ``None`` and ``feed`` returns every event.
    """

    _sink: _DeltaSink | None = None

    def _one_delta(self, call_id: str, text: str) -> list[AdapterEvent]:
        """What ``feed`` returns for an item that implies one plain fragment and nothing else."""
        sink = self._sink
        if sink is not None and sink(call_id, text):
            return []
        return [_delta(call_id, text)]


AdapterEvent = Start | Delta | Ready | Result | Error | End
"""The event models an adapter emits."""

ItemT_contra = TypeVar("ItemT_contra", contravariant=True)
ItemT = TypeVar("ItemT")


class Adapter(Protocol[ItemT_contra]):
    """The adapter protocol: a stateful, sans-IO translator for one stream."""

    def feed(self, item: ItemT_contra) -> list[AdapterEvent]:
        """The tracker events that one provider item implies (possibly none)."""
        ...

    def end(self) -> list[AdapterEvent]:
        """What the end of the stream implies: an ``End``, unless ``feed`` emitted one."""
        ...


class AdaptedStream(Generic[ItemT]):
    """The async iterator returned by :func:`adapt` (see there).

    ``aclose()`` closes the underlying source if it can be closed; :meth:`ToolCallTracker.consume`
    calls it when it stops reading early (cancelled, or a malformed event).
    """

    __slots__ = ("_adapter", "_done", "_pending", "_source", "_source_iter")

    def __init__(self, source: AsyncIterable[ItemT], adapter: Adapter[ItemT]) -> None:
        self._source = source
        self._source_iter: AsyncIterator[ItemT] | None = None
        self._adapter = adapter
        self._pending: deque[AdapterEvent] = deque()
        self._done = False

    def __aiter__(self) -> AdaptedStream[ItemT]:
        return self

    async def __anext__(self) -> AdapterEvent:
        pending = self._pending
        while not pending:
            if self._done:
                raise StopAsyncIteration
            if self._source_iter is None:
                self._source_iter = aiter(self._source)
            try:
                item = await anext(self._source_iter)
            except StopAsyncIteration:
                self._done = True
                pending.extend(self._adapter.end())
            else:
                pending.extend(self._adapter.feed(item))
        return pending.popleft()

    def _toolcall_fast_lane(self, sink: _DeltaSink | None) -> None:
        """Called by ``ToolCallTracker.consume``: bind (or unbind) the adapter's fast lane."""
        if isinstance(self._adapter, _FastLane):
            self._adapter._sink = sink

    async def aclose(self) -> None:
        """Stop: close the source (its ``aclose()`` or ``close()``) if it has one."""
        self._done = True
        self._pending.clear()
        for target in (self._source_iter, self._source):
            if target is not None:
                await _close_source(target)


def adapt(source: AsyncIterable[ItemT], adapter: Adapter[ItemT]) -> AdaptedStream[ItemT]:
    """Translate an async stream of provider items into tracker events.

    ``await tracker.consume(adapt(stream, OpenAIChatAdapter()))`` feeds each item to the
    adapter, yields the events it returns, and at the end of the source yields what
    ``adapter.end()`` returns (which includes the turn's ``End``).
    """
    return AdaptedStream(source, adapter)


def apply_stream(
    machine: ToolCallStateMachine, items: Iterable[Any], adapter: Adapter[Any]
) -> None:
    """Synchronously feed every item to ``adapter`` and apply the events to ``machine``.

    Then applies what ``adapter.end()`` returns, ending the turn. The synchronous
    counterpart of ``await tracker.consume(adapt(stream, adapter))``, for recorded streams,
    tests and sync code; it uses the same fast lane for plain fragments.

    Raises:
        InvalidEvent: an adapter produced a malformed event (a bug in the adapter).
    """
    apply = machine.apply
    fast = isinstance(adapter, _FastLane)
    if fast:
        adapter._sink = machine._fast_delta  # type: ignore[attr-defined]
    try:
        feed = adapter.feed
        for item in items:
            for event in feed(item):
                apply(event)
        for event in adapter.end():
            apply(event)
    finally:
        if fast:
            adapter._sink = None  # type: ignore[attr-defined]
