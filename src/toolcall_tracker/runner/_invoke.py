"""Calling one tool and containing whatever it does (private).

:func:`invoke` runs a tool's function: async tools on the event loop, sync tools in a daemon
thread the runner counts (:mod:`._threads`: they may call back with ``anyio.from_thread``, and
an abandoned one never blocks interpreter exit). Every
fault of the tool comes back as a :class:`Raised` value instead of an exception, except the
two that must propagate: a real cancellation of the caller's scope, and
``KeyboardInterrupt`` (the user asked the process to stop).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import anyio

from ..tools import Tool
from ._progress import drive
from ._threads import ThreadJob, run_sync


class Raised:
    """A tool's fault, caught: the exception and a printable description of it."""

    __slots__ = ("exception", "text")

    def __init__(self, exception: BaseException) -> None:
        self.exception = exception
        self.text = describe(exception)


def describe(exc: BaseException) -> str:
    """``"TypeName: message"`` for any exception, even one whose ``__str__`` raises."""
    name = type(exc).__name__
    try:
        text = str(exc)
    except BaseException:  # an exception that cannot be printed is still a tool's fault
        text = "<the exception could not be printed>"
    return f"{name}: {text}" if text else name


async def invoke(
    spec: Tool[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    scopes: tuple[Any, ...],
    progress: Callable[[Any], None] | None = None,
    job: ThreadJob | None = None,
) -> Any:
    """Run the tool; return its value or a :class:`Raised`.

    An async-generator tool is driven to its end: each value it yields goes to
    ``progress`` and the last one is the value (see :mod:`._progress`).

    ``scopes`` are the cancel scopes whose cancellation is real for this call (the
    per-call timeout, the call's own scope, the run's scope): a cancellation exception
    raised while none of them (nor the task itself) was cancelled was raised by the tool,
    and is its fault like any other exception.

    A sync tool runs in a thread whose life ``job`` follows (see :mod:`._threads`).
    """
    try:
        if spec.is_generator:
            return await drive(spec.function(*args, **kwargs), progress or _ignore)
        if spec.is_async:
            return await spec.function(*args, **kwargs)
        result = await run_sync(
            functools.partial(_contained, functools.partial(spec.function, *args, **kwargs)),
            ThreadJob() if job is None else job,
        )
        if inspect.isawaitable(result):  # a sync wrapper around an async function
            result = await result
        return result
    except anyio.get_cancelled_exc_class() as exc:
        if _really_cancelled(scopes):
            raise
        return Raised(exc)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # SystemExit, GeneratorExit, Exception...: contained
        return Raised(exc)


def _ignore(value: Any) -> None:
    pass


def _contained(function: Any) -> Any:
    """Run ``function`` (in a worker thread), catching its faults there, so that nothing
    but its value or a :class:`Raised` crosses back to the event loop (a ``GeneratorExit``
    thrown into a waiting coroutine is not an ordinary exception)."""
    try:
        return function()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        return Raised(exc)


def _really_cancelled(scopes: tuple[Any, ...]) -> bool:
    """Whether a cancellation exception comes from a scope (or the task), not the tool."""
    if any(scope.cancel_called for scope in scopes):
        return True
    try:
        import asyncio

        task = asyncio.current_task()
    except RuntimeError:  # not on asyncio: trio's Cancelled cannot be raised by hand
        return True
    cancelling = getattr(task, "cancelling", None)  # Python 3.11+
    return task is None or cancelling is None or cancelling() > 0
