"""What :meth:`ToolCallTracker.consume` was given instead of a stream, and the fix (private).

``consume`` checks its argument when it is *called*, before it returns its coroutine, so a
wrong argument raises at the line that passed it (``await tracker.consume(x)``, or
``tg.start_soon(tracker.consume, x)``), before anything was read or changed, with a message
that says what to write instead. Every check is structural: nothing of the adapters, the
runner or a provider SDK is imported.

One table, checked in order; the first row whose test matches raises its ``TypeError``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ["check_source"]

SYNC_STREAMS_DOCS: Final = "docs/recipes/sync-streams.md"


def _is_adapter_class(source: Any) -> bool:
    return isinstance(source, type) and callable(getattr(source, "feed", None))


def _is_adapter(source: Any) -> bool:
    return callable(getattr(source, "feed", None)) and callable(getattr(source, "end", None))


def _is_context_manager(source: Any) -> bool:
    return hasattr(type(source), "__aenter__")


def _is_sync_iterable(source: Any) -> bool:
    return hasattr(type(source), "__iter__")


def _name(source: Any) -> str:
    return type(source).__qualname__


def _coroutine(source: Any) -> str:
    name = getattr(source, "__qualname__", None) or _name(source)
    if inspect.iscoroutine(source):
        source.close()  # it will never run: no "never awaited" warning on top of this error
    return (
        f"consume() was given an un-awaited coroutine ({name}), not a stream. Await it "
        "first: `tracker.consume(adapt(await client.chat.completions.create(..., "
        "stream=True), OpenAIChatAdapter()))`"
    )


def _adapter_class(source: Any) -> str:
    name = source.__qualname__
    return (
        f"consume() was given the adapter class {name}, not a stream. Pass the provider's "
        f"stream through an instance of it: `tracker.consume(adapt(stream, {name}()))`"
    )


def _adapter(source: Any) -> str:
    return (
        f"consume() was given an adapter ({_name(source)}), not a stream. Pass the "
        "provider's stream through it: `tracker.consume(adapt(stream, adapter))`"
    )


def _context_manager(source: Any) -> str:
    return (
        f"consume() was given {_name(source)}, an async context manager, not a stream. "
        "Enter it and pass what it gives: `async with client.messages.stream(...) as "
        "stream: await tracker.consume(adapt(stream, AnthropicAdapter()))`"
    )


def _mapping(source: Any) -> str:
    return (
        f"consume() takes a stream of events, and was given one mapping ({_name(source)}). "
        "Apply a single event with `tracker.apply(event)`"
    )


def _sync_iterable(source: Any) -> str:
    return (
        f"consume() takes an async iterable, and a {_name(source)} is a sync one: iterating "
        "it on the event loop would block every other task. Fetch its items in a worker "
        "thread (an async generator around `anyio.to_thread.run_sync(next, iterator, "
        f"done)`; see {SYNC_STREAMS_DOCS}), or without an event loop use "
        "`apply_stream(machine, items, adapter)` or `machine.apply(event)` for each event"
    )


def _other(source: Any) -> str:
    return (
        f"consume() takes an async iterable of events, or `adapt(stream, adapter)`; it was "
        f"given a {_name(source)}"
    )


_MISUSES: Final[tuple[tuple[Callable[[Any], bool], Callable[[Any], str]], ...]] = (
    (inspect.isawaitable, _coroutine),
    (_is_adapter_class, _adapter_class),
    (_is_adapter, _adapter),
    (_is_context_manager, _context_manager),
    (lambda source: isinstance(source, Mapping), _mapping),
    (_is_sync_iterable, _sync_iterable),
    (lambda source: True, _other),
)


def check_source(source: object) -> None:
    """Raise ``TypeError`` naming the fix unless ``source`` is an async iterable.

    (An :class:`~toolcall_tracker.sink.ItemSource` from ``adapt()`` is an async iterable too.)
    """
    if hasattr(type(source), "__aiter__") and not isinstance(source, type):
        return
    for matches, message in _MISUSES:
        if matches(source):
            raise TypeError(message(source))
