"""Slots (private): the run queue of a turn, and the runner-wide capacity it draws from.

Calls join a turn's :class:`RunQueue` in ready order (each gets a sequence number when it
joins). A free slot goes to the oldest queued call *whose tool may start*: its tool is
under its runner-wide cap (``tool(fn, max_concurrency=N)``; ``sequential=True`` is
``N = 1``) and, for a sync tool, the runner's thread pool has a thread. A tool at its cap
does not hold up the calls of other tools behind it, and among the calls of one tool the
order is always their ready order. One FIFO per tool, so choosing is a look at each tool's
oldest call, not a scan of the queue.

:class:`Capacity` is the runner's: per-tool counts and threads in use, shared by every turn
of the runner, and released only when a tool has really stopped, which for an abandoned
sync tool happens on its own thread, maybe after its turn returned. So it is guarded by a
lock, and a release wakes the turns waiting for capacity on their own event loops.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable
from typing import Any


class RunQueue:
    """Queued call ids per tool, in ready order."""

    __slots__ = ("_next", "_queues")

    def __init__(self) -> None:
        self._next = 0
        self._queues: dict[str, deque[tuple[int, str]]] = {}

    def push(self, tool: str, call_id: str) -> None:
        """Queue a call (behind every call queued before it)."""
        queue = self._queues.get(tool)
        if queue is None:
            queue = self._queues[tool] = deque()
        queue.append((self._next, call_id))
        self._next += 1

    def push_front(self, tool: str, call_id: str) -> None:
        """Put back a call :meth:`take` just took (it keeps its place among its tool's)."""
        queue = self._queues.get(tool)
        if queue is None:
            queue = self._queues[tool] = deque()
        queue.appendleft((queue[0][0] - 1 if queue else self._next, call_id))

    def peek(self, may_start: Callable[[str], bool]) -> str | None:
        """The tool of the oldest queued call whose tool ``may_start``, or ``None``."""
        best: tuple[int, str] | None = None
        for tool, queue in self._queues.items():
            if (best is None or queue[0][0] < best[0]) and may_start(tool):
                best = (queue[0][0], tool)
        return None if best is None else best[1]

    def take(self, tool: str) -> str:
        """Take the oldest queued call of ``tool``."""
        queue = self._queues[tool]
        _, call_id = queue.popleft()
        if not queue:
            del self._queues[tool]
        return call_id

    def __bool__(self) -> bool:
        return bool(self._queues)

    def __len__(self) -> int:
        return sum(len(queue) for queue in self._queues.values())


class Capacity:
    """A runner's per-tool caps and thread pool, shared by its turns (thread-safe)."""

    def __init__(self, max_threads: int) -> None:
        self.max_threads = max_threads
        self._lock = threading.Lock()
        self._running: dict[str, int] = {}
        self._threads = 0
        self._wakers: dict[object, tuple[Any, Callable[[], None]]] = {}

    def can_take(self, tool: str, cap: float, sync: bool) -> bool:
        """Whether :meth:`take` would succeed now."""
        with self._lock:
            return self._running.get(tool, 0) < cap and (
                not sync or self._threads < self.max_threads
            )

    def take(self, tool: str, cap: float, sync: bool) -> bool:
        """Take a slot of ``tool`` (and a thread if ``sync``) if both are free."""
        with self._lock:
            if self._running.get(tool, 0) >= cap:
                return False
            if sync and self._threads >= self.max_threads:
                return False
            self._running[tool] = self._running.get(tool, 0) + 1
            if sync:
                self._threads += 1
            return True

    def release(self, tool: str, sync: bool) -> None:
        """Give back what :meth:`take` took (from any thread), and wake the waiting turns."""
        with self._lock:
            left = self._running[tool] - 1
            if left:
                self._running[tool] = left
            else:
                del self._running[tool]
            if sync:
                self._threads -= 1
            wakers = list(self._wakers.values())
        for native_token, wake in wakers:
            call_soon(native_token, wake)

    def running(self, tool: str) -> int:
        with self._lock:
            return self._running.get(tool, 0)

    @property
    def threads(self) -> int:
        """Threads in use (abandoned ones included)."""
        with self._lock:
            return self._threads

    def subscribe(self, key: object, native_token: Any, wake: Callable[[], None]) -> None:
        with self._lock:
            self._wakers[key] = (native_token, wake)

    def unsubscribe(self, key: object) -> None:
        with self._lock:
            self._wakers.pop(key, None)


def call_soon(native_token: Any, function: Callable[[], None]) -> None:
    """Schedule ``function`` on the event loop of ``native_token`` (from any thread);
    nothing happens if that loop has finished."""
    with contextlib.suppress(Exception):
        if isinstance(native_token, asyncio.AbstractEventLoop):
            native_token.call_soon_threadsafe(function)
        else:
            native_token.run_sync_soon(function)  # a trio token


class TurnSlots:
    """A turn's slots: its queue, its own ``max_concurrency``, its runner's capacity.

    ``free``: the tools that draw nothing from the runner's capacity (no cap, not sync);
    their slots are the turn's own only, so no lock is taken for them."""

    __slots__ = ("_cap", "_capacity", "_free", "_free_tools", "_listening", "_sync", "queue")

    def __init__(
        self,
        capacity: Capacity,
        max_concurrency: float,
        cap: Callable[[str], float],
        sync: Callable[[str], bool],
        free: frozenset[str] = frozenset(),
    ) -> None:
        self.queue = RunQueue()
        self._capacity = capacity
        self._free = max_concurrency
        self._cap = cap
        self._sync = sync
        self._free_tools = free
        self._listening = False

    def _may_take(self, tool: str) -> bool:
        if tool in self._free_tools:
            return True
        return self._capacity.can_take(tool, self._cap(tool), self._sync(tool))

    def take_now(self, tool: str, live: bool, scope: Any) -> bool:
        """Take a slot at once for a call of a ``free`` tool when nobody is queued (the
        oldest queued call would be this one): what :meth:`grant` would give it, if the
        turn is ``live`` and its ``scope`` not cancelled (as the turn's dispatch checks)."""
        if not live or scope is None or scope.cancel_called:
            return False
        if self._free > 0 and tool in self._free_tools and not self.queue:
            self._free -= 1
            return True
        return False

    def grant(self) -> tuple[str, str] | None:
        """Take a slot for the oldest queued call that may start: ``(tool, call_id)``, or
        ``None`` when none may (the turn's slots are all taken, or every queued call's
        tool is at its cap or waits for a thread). Give it back with :meth:`give_back`."""
        queue = self.queue
        if not queue or self._free <= 0:
            return None
        tool = queue.peek(self._may_take)
        if tool is None:
            return None
        call_id = queue.take(tool)
        if tool not in self._free_tools and not self._capacity.take(
            tool, self._cap(tool), self._sync(tool)
        ):
            queue.push_front(tool, call_id)  # pragma: no cover (another event loop took it)
            return None
        self._free -= 1
        return tool, call_id

    def listen(self, live: bool, token: Any, wake: Callable[[], None]) -> None:
        """While ``live`` and calls are queued, have capacity given back anywhere in the
        runner call ``wake`` on the loop of ``token`` (no wake-ups when nobody waits)."""
        waiting = live and bool(self.queue)
        if waiting is not self._listening:
            self._listening = waiting
            if waiting:
                self._capacity.subscribe(self, token, wake)
            else:
                self._capacity.unsubscribe(self)

    def give_back(self, tool: str, *, runner_wide: bool = True) -> None:
        """A granted call's tool stopped (``runner_wide=False``: its thread gave the
        runner's capacity back already)."""
        self._free += 1
        if runner_wide and tool not in self._free_tools:
            self._capacity.release(tool, self._sync(tool))
