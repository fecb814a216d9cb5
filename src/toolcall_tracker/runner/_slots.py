"""The run queue of a turn (private): slots in ready order, under per-tool caps.

Calls join the queue in ready order (each gets a sequence number when it joins). A free
slot of the runner goes to the oldest queued call *whose tool has capacity*: with
``tool(fn, max_concurrency=N)`` (or ``sequential=True``, which is ``N = 1``) a tool at its
cap does not hold up the calls of other tools behind it, and among the calls of one tool
the order is always their ready order. One FIFO per tool, so choosing is a look at each
tool's oldest call, not a scan of the queue.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable


class RunQueue:
    """Queued call ids per tool, with how many of each tool's calls hold a slot."""

    __slots__ = ("_next", "_queues", "_running")

    def __init__(self) -> None:
        self._next = 0
        self._queues: dict[str, deque[tuple[int, str]]] = {}
        self._running: dict[str, int] = {}

    def push(self, tool: str, call_id: str) -> None:
        """Queue a call (behind every call queued before it)."""
        queue = self._queues.get(tool)
        if queue is None:
            queue = self._queues[tool] = deque()
        queue.append((self._next, call_id))
        self._next += 1

    def pop(self, cap: Callable[[str], float]) -> tuple[str, str] | None:
        """Take the oldest queued call whose tool runs fewer than ``cap(tool)`` calls.

        Returns ``(tool, call_id)``, or ``None`` if no queued call may start now. The call
        counts as running for its tool until :meth:`release`.
        """
        best: tuple[int, str] | None = None
        for tool, queue in self._queues.items():
            if self._running.get(tool, 0) < cap(tool) and (best is None or queue[0][0] < best[0]):
                best = (queue[0][0], tool)
        if best is None:
            return None
        tool = best[1]
        queue = self._queues[tool]
        _, call_id = queue.popleft()
        if not queue:
            del self._queues[tool]
        self._running[tool] = self._running.get(tool, 0) + 1
        return tool, call_id

    def release(self, tool: str) -> None:
        """A call of ``tool`` gave its slot back (finished, or never started)."""
        left = self._running[tool] - 1
        if left:
            self._running[tool] = left
        else:
            del self._running[tool]

    def __bool__(self) -> bool:
        return bool(self._queues)
