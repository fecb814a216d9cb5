"""Sync tools in daemon threads, counted by the runner (private).

A sync tool cannot be interrupted: on a timeout or a cancellation its call ends and its
thread is abandoned to finish on its own. So each sync tool's thread is a :class:`ThreadJob`
that knows whether its function is still running. The runner counts threads in its
:class:`~toolcall_tracker.runner._slots.Capacity` (``max_threads``) and gives one back only
when the function really returned: :meth:`ThreadJob.detach` hands the release to the thread
itself when the call ends first.

No thread is taken from anyio's process-wide default thread limiter, so the application's
own ``to_thread`` calls never starve behind abandoned tools:

- on asyncio, each sync tool runs in a new daemon thread (``to_thread``'s workers are not
  daemon threads, and an abandoned tool would keep the interpreter alive), marked as
  belonging to the event loop with anyio's thread-local token, so the tool may call back
  with ``anyio.from_thread.run_sync(...)``; it sees the caller's context variables;
- on trio, in trio's own (daemon) worker threads, each under a limiter of its own, so the
  default limiter is never used (the count is the runner's).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Callable
from typing import Any, Final

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

_anyio_threadlocals: Any
try:  # anyio's marker for "this thread belongs to that event loop"
    from anyio._core._eventloop import threadlocals as _anyio_threadlocals
except ImportError:  # pragma: no cover (another anyio release)
    _anyio_threadlocals = None

_NAME: Final = "toolcall-tracker tool"


class ThreadJob:
    """One sync tool's run in a thread: alive until its function returned."""

    __slots__ = ("_lock", "_on_stop", "alive")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.alive = True
        self._on_stop: Callable[[], None] | None = None

    def detach(self, on_stop: Callable[[], None]) -> bool:
        """The call ended first: if the function still runs, have its thread call
        ``on_stop`` when it returns and return ``True``; else ``False`` (it stopped)."""
        with self._lock:
            if not self.alive:
                return False
            self._on_stop = on_stop
            return True

    def stopped(self) -> None:
        """Called on the tool's thread when its function returned."""
        with self._lock:
            self.alive = False
            on_stop = self._on_stop
        if on_stop is not None:
            on_stop()


async def run_sync(function: Callable[[], Any], job: ThreadJob) -> Any:
    """Run ``function`` in a daemon thread and wait for it (cancellable: abandoned)."""

    def body() -> Any:
        try:
            return function()
        finally:
            job.stopped()

    token = anyio.lowlevel.current_token()
    if _anyio_threadlocals is None or not isinstance(token.native_token, asyncio.AbstractEventLoop):
        # trio: its worker threads are daemon threads; a limiter of this call's own
        return await anyio.to_thread.run_sync(
            body, abandon_on_cancel=True, limiter=anyio.CapacityLimiter(1)
        )
    context = contextvars.copy_context()
    done = anyio.Event()
    outcome: list[tuple[bool, Any]] = []

    def target() -> None:
        _anyio_threadlocals.current_token = token
        try:
            outcome.append((True, context.run(body)))
        except BaseException as exc:  # re-raised on the event loop's side
            outcome.append((False, exc))
        finally:
            with contextlib.suppress(BaseException):  # the loop is gone: abandoned, fine
                anyio.from_thread.run_sync(done.set, token=token)

    threading.Thread(target=target, name=_NAME, daemon=True).start()
    await done.wait()
    ok, value = outcome[0]
    if not ok:
        raise value
    return value
