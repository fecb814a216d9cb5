"""What a run publishes to its :class:`RunControl`'s iterators (private).

- :class:`Feed`: progress updates, delivered to every iterator subscribed at the time, each
  iterator keeping only its own call's updates (``progress(call_id)``) and at most
  ``maxlen`` unread ones (progress is superseded by the next update);
- :class:`RequestFeed`: approval requests, keyed by call id; a request is withdrawn from
  every iterator's unread items the moment its call no longer awaits a decision, so unread
  requests are bounded by the calls awaiting one.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Sized
from typing import Any, Generic, Protocol, TypeVar

import anyio

from ._pending import PendingApproval
from ._progress import ProgressUpdate

logger = logging.getLogger("toolcall_tracker.runner")

_T = TypeVar("_T")
_T_co = TypeVar("_T_co", covariant=True)


class _Reader(Generic[_T]):
    __slots__ = ("closed", "items", "only", "wake")

    def __init__(self, closed: bool, maxlen: int | None, only: str | None) -> None:
        self.items: deque[_T] = deque(maxlen=maxlen)
        self.closed = closed
        self.only = only
        self.wake: anyio.Event | None = None

    def woken(self) -> None:
        if self.wake is not None:
            self.wake.set()

    def take(self) -> _T:
        return self.items.popleft()


class Feed:
    """Progress updates for the iterators subscribed when they are published."""

    def __init__(self, maxlen: int) -> None:
        self._readers: list[_Reader[ProgressUpdate]] = []
        self.closed = False
        self._maxlen = maxlen

    def publish(self, update: ProgressUpdate) -> None:
        for reader in self._readers:
            if reader.only is not None and reader.only != update.call_id:
                continue
            items = reader.items
            if len(items) == items.maxlen:
                logger.debug("a slow reader missed an update: %d were unread", len(items))
            items.append(update)
            reader.woken()

    def close(self) -> None:
        self.closed = True
        for reader in self._readers:
            reader.closed = True
            reader.woken()

    async def iterate(self, only: str | None = None) -> AsyncIterator[ProgressUpdate]:
        reader: _Reader[ProgressUpdate] = _Reader(self.closed, self._maxlen, only)
        async for update in _drain(self._readers, reader):
            yield update

    @property
    def listened(self) -> bool:
        return bool(self._readers)


class _RequestReader:
    __slots__ = ("closed", "items", "wake")

    def __init__(self, items: Iterable[PendingApproval], closed: bool) -> None:
        self.items: dict[str, PendingApproval] = {item.call_id: item for item in items}
        self.closed = closed
        self.wake: anyio.Event | None = None

    def take(self) -> PendingApproval:
        return self.items.pop(next(iter(self.items)))


class RequestFeed:
    """Approval requests, withdrawn from unread items once their call is decided."""

    def __init__(self) -> None:
        self._readers: list[_RequestReader] = []
        self.closed = False

    def publish(self, request: PendingApproval) -> None:
        for reader in self._readers:
            reader.items[request.call_id] = request
            if reader.wake is not None:
                reader.wake.set()

    def withdraw(self, call_id: str) -> None:
        for reader in self._readers:
            reader.items.pop(call_id, None)

    def close(self) -> None:
        self.closed = True
        for reader in self._readers:
            reader.closed = True
            if reader.wake is not None:
                reader.wake.set()

    def unread(self) -> int:
        """Unread requests over every iterator (for tests of the bound)."""
        return sum(len(reader.items) for reader in self._readers)

    async def iterate(
        self, initial: Callable[[], Iterable[PendingApproval]]
    ) -> AsyncIterator[PendingApproval]:
        reader = _RequestReader(initial(), self.closed)
        async for request in _drain(self._readers, reader):
            yield request


class _Readable(Protocol[_T_co]):
    closed: bool
    wake: anyio.Event | None

    @property
    def items(self) -> Sized: ...

    def take(self) -> _T_co: ...


async def _drain(readers: list[Any], reader: _Readable[_T]) -> AsyncIterator[_T]:
    """Yield what ``reader`` is given until its feed closes; it reads from its first step."""
    readers.append(reader)
    try:
        while True:
            if reader.items:
                yield reader.take()
                continue
            if reader.closed:
                return
            reader.wake = anyio.Event()
            await reader.wake.wait()
            reader.wake = None
    finally:
        readers.remove(reader)
