"""Replaying a stream: items through the adapter (or protocol events as they are) into a machine.

:func:`replay` reads the input as it goes and tells an :class:`Observer` about every ignored
event and (with the timeline on) every applied event, as it happens; it keeps only counts
and the machine, so its memory is the machine's plus a constant.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from .._registry import get
from ..calls import Status, ToolCall
from ..errors import InvalidEvent
from ..events import End, parse_event
from ..machine import ToolCallStateMachine, tool_call_streaming_state_machine
from ..reducer import IgnoreReason
from ._detect import detect, item_format, mismatch
from ._eventstream import PRELUDE_BYTES, looks_eventstream, read_messages
from ._input import InputError, Item, TextReader, open_input, read_items
from ._text import clean
from ._timeline import Step, Timeline


class Observer(Protocol):
    """What a report is told while a stream is replayed."""

    def ignored(self, item: int | None, event: Any, reason: IgnoreReason) -> None:
        """The machine ignored ``event`` (from ``item``; ``None``: the end) for ``reason``."""

    def step(self, step: Step) -> None:
        """One applied event's timeline row (only when the timeline is on)."""


class Watch(Protocol):
    """What follows a replay as it goes (the live view, the SVG's call log)."""

    def attach(self, machine: ToolCallStateMachine, reader: TextReader) -> None:
        """The replay starts: subscribe to ``machine``; ``reader`` tells the bytes read."""

    def item(self, item: Item) -> None:
        """``item`` is about to be applied (a watch may pace the replay here)."""

    def ending(self) -> None:
        """The stream is exhausted; the end-of-stream events are about to be applied."""


@dataclass
class Replay:
    """What one replay produced: where it came from, counts, and the machine."""

    path: str
    container: str
    format: str
    detected: bool
    machine: ToolCallStateMachine
    items: int = 0
    events: int = 0
    ignored: int = 0
    columns: tuple[str, ...] = ()  # the timeline's call columns (ids)

    @property
    def calls(self) -> list[ToolCall]:
        """The calls, in the order their ``start`` arrived."""
        return self.machine.list()

    @property
    def end(self) -> End:
        """How the turn ended (every replay ends it)."""
        end = self.machine.end
        return End(ok=False, reason="the turn never ended") if end is None else end

    @property
    def failed(self) -> list[ToolCall]:
        """The calls that ended in ``error``."""
        return [call for call in self.calls if call.status == Status.ERROR]

    @property
    def ok(self) -> bool:
        """No call failed and the turn ended ok."""
        return self.end.ok and not self.failed


def replay(
    path: str, fmt: str, observer: Observer, *, timeline: bool, watch: Watch | None = None
) -> Replay:
    """Read ``path`` (``-``: standard input) and replay it through a fresh machine.

    Args:
        path: the file.
        fmt: one of :data:`~._detect.FORMATS`, or ``"auto"`` to recognise it.
        observer: told about ignored events and (``timeline``) every applied event.
        timeline: whether to follow the calls' statuses for ``observer.step``.
        watch: told when the replay starts, before each item and before the end.

    Raises:
        InputError: the input cannot be read or replayed (nothing else, for bad input), or
            no item of it is an item of the format (the message names one that fits).
    """
    with open_input(path) as reader:
        detected = fmt == "auto"
        if looks_eventstream(reader.head(PRELUDE_BYTES)):  # binary: before the text checks
            if fmt not in ("auto", "bedrock"):
                raise InputError(
                    f"an AWS event-stream body (Bedrock ConverseStream), not {fmt} items; "
                    "pass --format bedrock"
                )
            items = read_messages(reader.read_bytes)
            return _run(
                path, "eventstream", "bedrock", detected, items, observer, timeline, watch, reader
            )
        container, items = read_items(reader)
        if detected:
            fmt, window = detect(items)
            items = _chain(window, items)
        return _run(path, container, fmt, detected, items, observer, timeline, watch, reader)


def _chain(window: list[Item], rest: Iterator[Item]) -> Iterator[Item]:
    """The items of ``window``, dropped as they are yielded, then those of ``rest``."""
    window.reverse()
    while window:
        yield window.pop()
    yield from rest


def _run(
    path: str,
    container: str,
    fmt: str,
    detected: bool,
    items: Iterator[Item],
    observer: Observer,
    timeline: bool,
    watch: Watch | None,
    reader: TextReader,
) -> Replay:
    """Apply every item's events, telling ``observer``; returns the counts and the machine."""
    just_ignored: list[tuple[Any, IgnoreReason]] = []

    def on_ignored(event: Any, reason: IgnoreReason) -> None:
        just_ignored.append((event, reason))

    machine = tool_call_streaming_state_machine(on_ignored=on_ignored)
    result = Replay(path, container, fmt, detected, machine)
    follower = Timeline(machine) if timeline else None
    if watch is not None:
        watch.attach(machine, reader)
    votes: dict[str, int] = {}  # per format, the items distinctive of it
    provider = get(fmt)
    readable = {fmt, *provider.accepts}  # the formats the adapter reads
    read = False  # an item of those came: the votes are no longer needed

    def take(item: Item) -> None:
        """Count the item and (until one the adapter reads came) its format; tell the watch."""
        nonlocal read
        result.items += 1
        if not read:
            found = item_format(item.value)
            if found is not None:
                votes[found] = votes.get(found, 0) + 1
                read = found in readable
        if watch is not None:
            watch.item(item)

    def check() -> None:
        """No call, and no item of the format: the wrong format (say which one fits)."""
        if result.items and not read and not machine.list():
            raise InputError(mismatch(fmt, result.items, votes))

    def apply(item: Item | None, event: Any) -> None:
        """Apply one event (a model, or a protocol event as it was read) and report it."""
        number = None if item is None else item.number
        try:
            machine.apply(event)
        except InvalidEvent as exc:
            where = "at the end of the stream" if item is None else item.where()
            hint = ""
            if not votes.get(fmt) and votes:  # not an events stream at all: say which it is
                hint = f"; {mismatch(fmt, result.items, votes)}"
            raise InputError(f"{where}: {clean(str(exc))}{hint}") from None
        result.events += 1
        ignored: IgnoreReason | None = None
        if just_ignored:
            event, ignored = just_ignored[-1]  # the machine hands over the parsed model
            just_ignored.clear()
            result.ignored += 1
            observer.ignored(number, event, ignored)
        if follower is not None:
            if isinstance(event, dict):  # a protocol event that applied: show it as a model
                event = parse_event(event) or event
            observer.step(follower.record(number, event, ignored))
            result.columns = follower.columns

    if fmt == "events":
        for item in items:
            if is_truncation(item.value):
                return _truncated(item, apply, watch, result)
            take(item)
            apply(item, item.value)
        check()
        if watch is not None:
            watch.ending()
        if machine.end is None:
            apply(None, End(ok=True, reason="source exhausted"))
        return result

    adapter = provider.load("adapter")()
    for item in items:
        if is_truncation(item.value):
            return _truncated(item, apply, watch, result)
        take(item)
        try:
            events = adapter.feed(item.value)
        except Exception as exc:  # adapters never raise on JSON objects; be safe anyway
            raise InputError(
                f"{item.where()}: the {fmt} adapter could not read it "
                f"({type(exc).__name__}: {clean(str(exc))})"
            ) from None
        for event in events:
            apply(item, event)
    check()
    if watch is not None:
        watch.ending()
    for event in adapter.end():
        apply(None, event)
    return result


TRUNCATED_REASON = "the recording was truncated at its size cap"
"""The end reason of a replay that reached a recorder's ``truncated`` line."""


def is_truncation(value: object) -> bool:
    """Whether an item is the last line of a recording that hit its size cap: the
    recorder's (``toolcall_tracker.recording``) ``{"truncated": true, ...}``."""
    return (
        isinstance(value, dict)
        and value.get("truncated") is True
        and value.keys() <= {"truncated", "t", "items", "max_bytes"}
    )


def _truncated(item: Item, apply: Any, watch: Watch | None, result: Replay) -> Replay:
    """The recording stops here: the turn ends not ok (its calls were cut off too)."""
    if watch is not None:
        watch.ending()
    if result.machine.end is None:
        apply(item, End(ok=False, reason=TRUNCATED_REASON))
    return result
