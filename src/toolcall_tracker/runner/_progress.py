"""Progress from async-generator tools (private module; :class:`ProgressUpdate` is public).

A tool may be an async generator function. Each value it yields is published at once as a
:class:`ProgressUpdate` of its call (to the run's :class:`RunControl`: ``on_progress`` and
``progress()``); the *last* value it yields is the call's result (an async generator cannot
return a value), so the last update and the result are the same value. A generator that
yields nothing has the result ``None``. Progress never touches the tracker: the call stays
``running`` until its result or error, as with any tool.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any

import anyio

__all__ = ["ProgressUpdate"]


@dataclass(frozen=True)
class ProgressUpdate:
    """One value an async-generator tool yielded while its call ran.

    Attributes:
        call_id: the call.
        tool: the tool's name.
        value: the value yielded (as the tool yielded it: not copied, not validated).
        index: 0 for the first update of the call, then 1, 2...
    """

    call_id: str
    tool: str
    value: Any
    index: int


async def drive(generator: AsyncGenerator[Any, None], publish: Callable[[Any], None]) -> Any:
    """Run ``generator`` to its end, publishing each value; return the last one."""
    last: Any = None
    try:
        async for value in generator:
            last = value
            publish(value)
    finally:
        with anyio.CancelScope(shield=True):
            await generator.aclose()  # a no-op once it ended; runs its cleanup otherwise
    return last
