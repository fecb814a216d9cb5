"""Sync tools in daemon threads of their own (private).

``anyio.to_thread`` runs sync code in worker threads, which on asyncio are not daemon
threads: a sync tool abandoned on a timeout or a cancellation would keep the interpreter
alive after ``anyio.run`` returns, until it finished by itself. On asyncio :func:`run_sync`
runs each sync tool in a new daemon thread instead (on trio, worker threads are daemon
threads already), so an abandoned tool never blocks exit. Inside it
the tool may still call back into the event loop with ``anyio.from_thread.run_sync(...)``,
as in an anyio worker thread, and it sees the caller's context variables.

Marking the thread as belonging to the event loop uses anyio's thread-local token, which
anyio keeps for its own worker threads; where that is not available (another anyio
release), sync tools run in anyio's worker threads as before.
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


async def run_sync(function: Callable[[], Any]) -> Any:
    """Run ``function`` in a new daemon thread and wait for it (cancellable: abandoned)."""
    token = anyio.lowlevel.current_token()
    if _anyio_threadlocals is None or not isinstance(token.native_token, asyncio.AbstractEventLoop):
        # trio's worker threads are daemon threads already (and it marks them its own way)
        return await anyio.to_thread.run_sync(function, abandon_on_cancel=True)
    context = contextvars.copy_context()
    done = anyio.Event()
    outcome: list[tuple[bool, Any]] = []

    def target() -> None:
        _anyio_threadlocals.current_token = token
        try:
            outcome.append((True, context.run(function)))
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
