"""The drivers: an adapter over a whole stream, and the check that it is the right one.

:func:`adapt` drives an adapter over an async iterable, so that
``await tracker.consume(adapt(sdk_stream, SomeAdapter()))`` is all a user writes (the
tracker recognises the result as an :class:`~toolcall_tracker.ItemSource` and writes each
item straight into its machine); :func:`apply_stream` is the synchronous driver. Both
watch the first items with a probe of the provider registry (``_recognise``): items of
another format through an adapter fail with a message naming the adapter that reads them.
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Mapping,
)
from typing import TYPE_CHECKING, Any, Generic, NoReturn

from ..events import End
from ..machine import ToolCallStateMachine
from ..sink import EventSink
from ._sinkguard import SinkRaised, unwrap

if TYPE_CHECKING:
    from .._recognise import Probe

from ._protocol import Adapter, AdapterEvent, ItemT, SinkAdapter

__all__ = ["AdaptedStream", "adapt", "apply_stream"]


class AdaptedStream(Generic[ItemT]):
    """What :func:`adapt` returns: an adapted stream, in two shapes.

    - An async iterator of event models (``async for event in adapt(...)``), for code that
      wants the events themselves.
    - An :class:`~toolcall_tracker.ItemSource` (``receive`` / ``write`` / ``finish``), which
      :meth:`ToolCallTracker.consume` uses to write each item straight into its machine.

    ``aclose()`` closes the underlying source if it can be closed; ``consume`` calls it
    when it stops reading early (cancelled, or a malformed event).
    """

    __slots__ = (
        "_adapter",
        "_done",
        "_pending",
        "_probe",
        "_source",
        "_source_iter",
        "_watching",
    )

    def __init__(self, source: AsyncIterable[ItemT], adapter: Adapter[ItemT]) -> None:
        self._source = source
        self._source_iter: AsyncIterator[ItemT] | None = None
        self._adapter = adapter
        self._pending: deque[AdapterEvent] = deque()
        self._done = False
        self._probe = _probe_for(adapter)  # the wrong-adapter check of the first items
        self._watching = self._probe is not None

    @property
    def adapter(self) -> Adapter[ItemT]:
        """The adapter this stream drives."""
        return self._adapter

    def __aiter__(self) -> AdaptedStream[ItemT]:
        return self

    async def __anext__(self) -> AdapterEvent:
        pending = self._pending
        while not pending:
            if self._done:
                raise StopAsyncIteration
            try:
                item = await self.receive()
            except StopAsyncIteration:
                self._done = True
                pending.extend(_with_verdict(self._probe, self._adapter.end()))
            else:
                probe = self._probe
                if self._watching and probe is not None:
                    self._watching = probe.see(item)
                    try:
                        pending.extend(self._adapter.feed(item))
                    except TypeError as exc:
                        _name_the_fit(probe, exc, item)
                else:
                    pending.extend(self._adapter.feed(item))
        return pending.popleft()

    def receive(self) -> Awaitable[ItemT]:
        """The next provider item of the source (``await stream.receive()``); it raises
        ``StopAsyncIteration`` at the source's end. (The source's own ``anext`` awaitable:
        no coroutine of ours per item.)"""
        iterator = self._source_iter
        if iterator is None:
            iterator = self._source_iter = aiter(self._source)
        return anext(iterator)

    def write(self, item: ItemT, sink: EventSink) -> None:
        """Write the events ``item`` implies into ``sink``, through the adapter."""
        if self._watching:  # the first items only: the wrong-adapter check
            self._write_watched(item, sink)
            return
        adapter: Any = self._adapter
        if isinstance(adapter, SinkAdapter):
            adapter.write(item, sink)
        else:
            for event in adapter.feed(item):
                sink.apply(event)

    def _write_watched(self, item: ItemT, sink: EventSink) -> None:
        probe = self._probe
        assert probe is not None  # watching implies a probe
        self._watching = probe.see(item)
        _write_watched(self._adapter, item, sink, probe)

    def finish(self, sink: EventSink) -> None:
        """Write what the end of the source implies into ``sink`` (the turn's end)."""
        self._done = True
        _finish(self._adapter, sink, self._probe)

    async def aclose(self) -> None:
        """Stop: close the source (its ``aclose()`` or ``close()``) if it has one."""
        from .._sources import close_source  # anyio is loaded only when a stream is closed

        self._done = True
        self._pending.clear()
        for target in (self._source_iter, self._source):
            if target is not None:
                await close_source(target)


def adapt(
    source: AsyncIterable[ItemT] | Iterable[ItemT], adapter: Adapter[ItemT]
) -> AdaptedStream[ItemT]:
    """Translate a stream of provider items into tracker events.

    ``await tracker.consume(adapt(stream, OpenAIChatAdapter()))`` writes the events each
    item implies straight into the tracker, then what the end of the source implies (which
    includes the turn's ``End``). Iterated directly, the result yields the event models.

    ``source`` is an async iterable (an SDK's async stream) or a synchronous one (boto3's
    ``EventStream``, a sync client's stream, a list). A synchronous source is read in one
    worker thread of its own, one item at a time, so the event loop never blocks on it;
    when reading stops early (cancelled, an error) the worker closes it (its ``close()``)
    and exits (``consume`` does this; iterating the result yourself, call ``aclose()`` if
    you stop before its end). A ``next()`` that never returns cannot be interrupted: that
    thread then stays blocked (it is a daemon thread), and closing gives up after 5 s.

    Raises:
        TypeError: at once, for an adapter class instead of an instance, an un-awaited
            coroutine (``client...create(...)`` without ``await``), or a source that is
            not iterable; the message names the fix.
    """
    _check_adapter(adapter)
    if not hasattr(source, "__aiter__"):
        source = _sync_source(source)
    return AdaptedStream(source, adapter)  # type: ignore[arg-type]


def _check_adapter(adapter: object) -> None:
    """Raise the error that names the fix for an adapter that is not an adapter instance."""
    if isinstance(adapter, type):
        raise TypeError(
            f"adapt() takes an adapter instance, not the class {adapter.__name__}: "
            f"write adapt(stream, {adapter.__name__}())"
        )
    if not callable(getattr(adapter, "feed", None)) or not callable(getattr(adapter, "end", None)):
        raise TypeError(
            f"adapt() takes an adapter (an object with feed() and end(), such as "
            f"OpenAIChatAdapter()), not {type(adapter).__name__}"
        )


def _sync_source(source: object) -> Any:
    """A synchronous iterable as an async one read in a worker thread, or the fix's error."""
    if inspect.iscoroutine(source):
        name = getattr(source, "__qualname__", "the call")
        source.close()  # no "never awaited" warning on top of this error
        raise TypeError(
            f"adapt() got a coroutine ({name}) instead of a stream: await it first, "
            "adapt(await client.chat.completions.create(..., stream=True), adapter)"
        )
    if inspect.isawaitable(source):
        raise TypeError(
            f"adapt() got an awaitable {type(source).__name__} instead of a stream: "
            "await it first, adapt(await ..., adapter)"
        )
    if inspect.isasyncgenfunction(source) or inspect.isgeneratorfunction(source):
        name = getattr(source, "__name__", "stream")
        raise TypeError(
            f"adapt() got the generator function {name} instead of a stream: call it, "
            f"adapt({name}(), adapter)"
        )
    if isinstance(source, str | bytes | bytearray | Mapping) or not hasattr(source, "__iter__"):
        raise TypeError(
            f"adapt() takes a stream of provider items (an async or sync iterable), "
            f"not {type(source).__name__}"
        )
    from .._syncstream import SyncStream  # anyio is loaded only for a synchronous source

    return SyncStream(source)


def apply_stream(sink: EventSink, items: Iterable[Any], adapter: Adapter[Any]) -> None:
    """Synchronously write every item through ``adapter`` into ``sink``, then its end.

    ``sink`` is a :class:`~toolcall_tracker.ToolCallStateMachine`, a
    :class:`~toolcall_tracker.ToolCallTracker` or any :class:`~toolcall_tracker.EventSink`.
    The synchronous counterpart of ``await tracker.consume(adapt(stream, adapter))``, for
    recorded streams, tests and sync code; it uses the same path, and the same
    wrong-adapter check.

    Raises:
        InvalidEvent: an adapter produced a malformed event (a bug in the adapter).
    """
    _check_adapter(adapter)
    sink = _machine_of(sink)
    probe = _probe_for(adapter)
    iterator = iter(items)
    if probe is not None:
        for item in iterator:
            watching = probe.see(item)
            _write_watched(adapter, item, sink, probe)
            if not watching:
                break
    if isinstance(adapter, SinkAdapter):  # the rest (or all, unchecked): the fast path
        # ``write`` for each item, with the binding checked once: nothing else binds the
        # adapter while this loop runs.
        if sink is not adapter._sink:
            adapter._bind(sink)
        try:
            adapter._translate_all(iterator)
        except SinkRaised as wrapped:  # what the sink raised, never a malformed item
            unwrap(wrapped)
    else:
        apply = sink.apply
        feed = adapter.feed
        for item in iterator:
            for event in feed(item):
                apply(event)
    _finish(adapter, sink, probe)


def _machine_of(sink: EventSink) -> EventSink:
    """Where ``apply_stream`` writes: the open machine behind ``sink`` if it offers one
    (``open_machine()``: a machine, an open tracker, as ``consume`` does), else ``sink``.
    (A tracker only adds its closed check to the machine's writes, and nothing can close
    it while this synchronous loop runs; a closed one refuses the first write.)"""
    open_machine: Callable[[], object] | None = getattr(sink, "open_machine", None)
    if open_machine is not None:
        machine = open_machine()
        if isinstance(machine, ToolCallStateMachine):
            return machine
    return sink


def _write(adapter: Adapter[Any], item: Any, sink: EventSink) -> None:
    """Write one item's events into ``sink``."""
    if isinstance(adapter, SinkAdapter):
        adapter.write(item, sink)
    else:
        for event in adapter.feed(item):
            sink.apply(event)


def _write_watched(adapter: Adapter[Any], item: Any, sink: EventSink, probe: Probe) -> None:
    """Write one item of the checked window: a ``TypeError`` names the adapter that fits."""
    try:
        _write(adapter, item, sink)
    except TypeError as exc:
        _name_the_fit(probe, exc, item)


def _name_the_fit(probe: Probe, exc: TypeError, item: Any) -> NoReturn:
    """Raise an adapter's ``TypeError`` for ``item`` (not an item of its kind at all), naming
    the adapter that reads it when the item is recognisably another format's."""
    refused = probe.refused(exc, item)
    if refused is exc:
        raise exc
    raise refused from exc


def _finish(adapter: Adapter[Any], sink: EventSink, probe: Probe | None) -> None:
    """Write the end of the stream; with the wrong-adapter check's reason, if it has one."""
    reason = None if probe is None else probe.verdict()
    if reason is not None:
        sink = _EndWithReason(sink, reason)
    if isinstance(adapter, SinkAdapter):
        adapter.finish(sink)
    else:
        for event in adapter.end():
            sink.apply(event)


def _probe_for(adapter: object) -> Probe | None:
    """The wrong-adapter check for a registered adapter (``None`` for others)."""
    if not _probe_maker:  # the registry is read on the first adapt()
        from .._recognise import probe_for

        _probe_maker.append(probe_for)
    return _probe_maker[0](adapter)


_probe_maker: list[Callable[[object], Probe | None]] = []  # _recognise.probe_for, once loaded


def _with_verdict(probe: Probe | None, events: list[AdapterEvent]) -> list[AdapterEvent]:
    """The end-of-stream events, the ``End`` carrying the wrong-adapter reason, if any."""
    reason = None if probe is None else probe.verdict()
    if reason is None:
        return events
    return [End(ok=False, reason=reason) if isinstance(event, End) else event for event in events]


class _EndWithReason:
    """A sink that passes everything on, but ends the turn not ok with ``reason``."""

    def __init__(self, sink: EventSink, reason: str) -> None:
        self._sink = sink
        self._reason = reason
        self.limits = sink.limits
        self.write_start = sink.write_start
        self.write_delta = sink.write_delta
        self.write_ready = sink.write_ready
        self.write_result = sink.write_result
        self.write_error = sink.write_error

    def apply(self, event: Any) -> None:
        if isinstance(event, End) or (isinstance(event, Mapping) and event.get("type") == "end"):
            event = End(ok=False, reason=self._reason)
        self._sink.apply(event)

    def write_end(self, ok: bool = True, reason: str | None = None) -> None:
        self._sink.write_end(False, self._reason)
