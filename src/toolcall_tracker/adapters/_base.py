"""What every adapter is, and :func:`adapt`, the one async helper on top of them.

An adapter is a sans-IO translator from one provider's stream items to tracker events:
``feed(item) -> list[Event]`` for each item and ``end() -> list[Event]`` once the stream is
exhausted. It does no I/O and never waits; :func:`adapt` drives it over an async iterable
so that ``await tracker.consume(adapt(sdk_stream, SomeAdapter()))`` is all a user writes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterable, AsyncIterator
from typing import Generic, Protocol, TypeVar

from ..events import Delta, End, Error, Ready, Result, Start
from ..tracker import _close_source

__all__ = ["Adapter", "AdaptedStream", "AdapterEvent", "adapt"]

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
        """The events the end of the provider stream implies (at least an ``End``)."""
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
