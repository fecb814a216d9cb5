"""A synchronous iterable read from async code, one worker thread per stream (private).

Theory of operation. boto3's ``EventStream`` and the sync clients of most SDKs are plain
iterators whose ``next()`` blocks on a socket. :class:`SyncStream` turns one into an async
iterator without blocking the event loop:

- **One owner.** A single worker thread, started at the first ``__anext__``, is the only
  code that calls the iterator's ``next()`` and ``close()``: a generator is never resumed
  from two threads at once.
- **Demand, then hand-off.** The loop asks for one item at a time; the worker calls
  ``next()`` once and hands the outcome over in a slot of one (an item, the end, or the
  exception ``next()`` raised), then waits for the next demand. Nothing is read ahead.
- **Closing.** ``aclose()`` marks the stream closing and wakes the worker. The worker,
  when its current ``next()`` returns (or at once if it was waiting), closes the iterator
  and the iterable (their ``close()``, when they have one: a generator runs its
  ``finally``; an ``EventStream`` releases its connection) and exits; ``aclose()`` waits
  for that without blocking the loop, then joins the finished thread. The caller bounds
  the wait (``close_source``: shielded, at most 5 s).
- **The limit.** A ``next()`` that never returns cannot be interrupted from Python: the
  thread is a daemon, so it does not keep the process alive, and ``aclose()`` gives up
  when its caller's bound expires.

Every state change happens under one lock; the worker wakes the loop through the loop's
token (``anyio.from_thread.run_sync``), which works on asyncio and on trio alike.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import Any, Final, Generic, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel

from .machine import logger

ItemT = TypeVar("ItemT")

THREAD_NAME: Final = "toolcall-tracker sync stream"
"""The worker threads' name (tests look for leftovers by it)."""

_ITEM: Final = 0
_END: Final = 1
_RAISED: Final = 2


class SyncStream(Generic[ItemT]):
    """An async iterator over a synchronous iterable, read in one worker thread."""

    __slots__ = (
        "_busy",
        "_closing",
        "_done",
        "_exited",
        "_held",
        "_iterable",
        "_lock",
        "_outcome",
        "_ready",
        "_thread",
        "_token",
        "_wake",
    )

    def __init__(self, iterable: Iterable[ItemT]) -> None:
        self._iterable = iterable
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._busy = False  # the worker was asked for an item and has not handed it over
        self._held = False  # an outcome sits in the slot, not yet taken by the loop
        self._closing = False
        self._done = False  # the end, an exception, or closed: no more items
        self._outcome: tuple[int, Any] = (_END, None)
        self._ready: anyio.Event | None = None
        self._exited: anyio.Event | None = None
        self._thread: threading.Thread | None = None
        self._token: Any = None

    def __aiter__(self) -> SyncStream[ItemT]:
        return self

    async def __anext__(self) -> ItemT:
        if self._done:
            raise StopAsyncIteration
        with self._lock:
            if not self._held:  # nothing handed over yet: ask (unless a next() runs)
                self._ready = ready = anyio.Event()
                if not self._busy:
                    self._busy = True
                    self._wake.notify()
                if self._thread is None:
                    self._start()
            else:
                ready = None
        if ready is not None:
            await ready.wait()  # cancelled: the outcome stays held for the next call
        with self._lock:
            kind, value = self._outcome
            self._held = False
            self._outcome = (_END, None)
        if kind == _ITEM:
            item: ItemT = value
            return item
        self._done = True
        await self._joined()  # the worker exits after the end or an error: no thread left
        if kind == _RAISED:
            raise value
        raise StopAsyncIteration

    def _start(self) -> None:
        """Start the worker (under the lock, in the loop's thread)."""
        self._token = anyio.lowlevel.current_token()
        self._exited = anyio.Event()
        self._thread = threading.Thread(target=self._work, name=THREAD_NAME, daemon=True)
        self._thread.start()

    async def aclose(self) -> None:
        """Close the iterable: through the worker if it runs, else here."""
        self._done = True
        with self._lock:
            self._closing = True
            thread = self._thread
            self._wake.notify()
        if thread is None:
            _close(self._iterable, None)
            return
        await self._joined()

    async def _joined(self) -> None:
        """Wait for the worker to exit, then join it (its last act was to say so)."""
        thread, exited = self._thread, self._exited
        if thread is None or exited is None:
            return
        await exited.wait()
        thread.join()  # it has posted its last act: this returns at once

    def _work(self) -> None:
        """The worker: one ``next()`` per demand, until the end, an error or closing."""
        iterator: Iterator[ItemT] | None = None
        exhausted = False
        try:
            iterator = iter(self._iterable)
            while True:
                with self._lock:
                    while not self._busy and not self._closing:
                        self._wake.wait()
                    if self._closing:
                        return
                try:
                    outcome: tuple[int, Any] = (_ITEM, next(iterator))
                except StopIteration:
                    outcome = (_END, None)
                    exhausted = True
                except BaseException as exc:  # handed to the loop, raised there
                    outcome = (_RAISED, exc)
                if not self._hand_over(outcome) or outcome[0] != _ITEM:
                    return
        except BaseException as exc:  # iter() raised: hand it over like next()'s
            self._hand_over((_RAISED, exc))
        finally:
            if not exhausted:
                _close(self._iterable, iterator)
            exited = self._exited
            if exited is not None:
                self._post(exited.set)

    def _hand_over(self, outcome: tuple[int, Any]) -> bool:
        """Put ``outcome`` in the slot and wake the loop; ``False`` if the loop is gone."""
        with self._lock:
            self._outcome = outcome
            self._held = True
            self._busy = False
            ready = self._ready
        return ready is None or self._post(ready.set)

    def _post(self, action: Any) -> bool:
        """Run ``action`` on the loop; ``False`` if the loop is gone."""
        try:
            anyio.from_thread.run_sync(action, token=self._token)
        except Exception:  # the loop has finished: nobody waits any more
            return False
        return True


def _close(iterable: object, iterator: object) -> None:
    """Close the iterator, then the iterable if it is another object; failures are logged."""
    for target in (iterator, iterable if iterable is not iterator else None):
        if target is None:
            continue
        closer = getattr(target, "close", None)
        if closer is None:
            continue
        try:
            closer()
        except Exception:
            logger.debug("closing a synchronous stream failed", exc_info=True)
