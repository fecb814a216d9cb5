"""Closing an event source that was stopped early, and naming why (private; uses anyio)."""

from __future__ import annotations

import inspect
from typing import Any, Final

import anyio

from .errors import InvalidEvent
from .machine import logger

CLOSE_TIMEOUT: Final = 5.0
"""Seconds a source gets to close itself."""


async def close_source(source: object) -> None:
    """Close a source we stopped reading early (an async generator, an SDK stream).

    Uses its ``aclose()`` (or a ``close()``, awaited if it returns an awaitable). Runs
    shielded from cancellation but bounded, so a stubborn source cannot hang us; a failure
    to close is logged, since the exception that stopped us matters more.
    """
    closer: Any = getattr(source, "aclose", None) or getattr(source, "close", None)
    if closer is None:
        return
    with anyio.move_on_after(CLOSE_TIMEOUT, shield=True):
        try:
            result = closer()
            if inspect.isawaitable(result):
                await result
        except Exception:
            logger.debug("closing the event source failed", exc_info=True)


def why_stopped(exc: BaseException) -> str:
    """The reason an ``End`` gives when ``exc`` stopped the stream."""
    if isinstance(exc, anyio.get_cancelled_exc_class()):
        return "cancelled"
    if isinstance(exc, InvalidEvent):
        return f"invalid event: {exc}"
    return f"source raised {type(exc).__name__}: {exc}"
