"""``run_turn``: consume a turn's stream and run its tools together, raising plain errors.

The task-group pattern (``tg.start_soon(tracker.consume, source)`` beside
``await runner.run(tracker)``) reports whatever fails inside it as an ``ExceptionGroup``,
which ``except SomeError`` does not catch. ``run_turn`` runs the same two tasks and, when
they fail, raises the first real error itself: an interrupt (``KeyboardInterrupt``,
``SystemExit``) if there is one, else the first exception that is not a cancellation, in the
order the group holds them (the order the tasks failed). The group stays reachable as the
raised exception's ``__context__``.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Iterator
from typing import TYPE_CHECKING, Any

import anyio

from .._consume_misuse import check_source
from ..calls import ToolCall
from ..events import EventInput
from ..sink import ItemSource
from ..tracker import ToolCallTracker

if TYPE_CHECKING:
    from . import ToolRunner
    from ._control import RunControl

__all__ = ["run_turn"]


async def run_turn(
    tracker: ToolCallTracker,
    source: AsyncIterable[EventInput] | ItemSource,
    runner: ToolRunner[Any],
    *,
    control: RunControl | None = None,
    deps: Any = None,
) -> list[ToolCall]:
    """Consume ``source`` into ``tracker`` and run the turn's tools with ``runner``.

    The same as::

        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, source)
            calls = await runner.run(tracker, control=control)

    except for errors: ``source`` is checked before anything starts (a sync iterable, an
    un-awaited coroutine or an adapter raises ``TypeError`` naming the fix), and an error of
    the stream (a source that raised, an ``InvalidEvent``) is raised as it is, not inside an
    ``ExceptionGroup``. A tool's failure is never an exception here: it is its call's
    ``error`` value, as with :meth:`ToolRunner.run`.

    Args:
        tracker: the turn's tracker, open (``async with ToolCallTracker() as tracker``).
        source: the model's stream: an async iterable of events, or
            ``adapt(stream, adapter)``.
        runner: the tool runner.
        control: the run's :class:`RunControl` (approvals, cancelling one call, progress).
        deps: the dependencies tools receive through their ``ToolContext``.

    Returns:
        What ``runner.run`` returns: the turn's calls, finished.

    Raises:
        TypeError: ``source`` is not a stream (before anything ran).
        Exception: the first real error of the stream or the runner (see the module doc).
    """
    check_source(source)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, source)
            calls = await runner.run(tracker, control=control, deps=deps)
    except BaseException as exc:
        first = _first_real(exc)
        if first is None or first is exc:
            raise
        raise first  # noqa: B904 -- the group is kept as its __context__
    return calls


def _is_group(exc: BaseException) -> bool:
    # Structural, for the builtin (3.11+) and the ``exceptiongroup`` backport alike.
    return any(kind.__name__ == "BaseExceptionGroup" for kind in type(exc).__mro__)


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if _is_group(exc):
        for inner in getattr(exc, "exceptions", ()):
            yield from _leaves(inner)
    else:
        yield exc


def _first_real(exc: BaseException) -> BaseException | None:
    """The exception to raise for ``exc``: see the module doc; ``None`` if only cancelled."""
    leaves = list(_leaves(exc))
    for leaf in leaves:
        if isinstance(leaf, (KeyboardInterrupt, SystemExit)):
            return leaf
    cancelled = anyio.get_cancelled_exc_class()
    return next((leaf for leaf in leaves if not isinstance(leaf, cancelled)), None)
