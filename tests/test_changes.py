"""The machine's change feed: order, the end of the turn, fragments, forgetting, a raising
listener, and the EventSink write path being the same as applying event models."""

from __future__ import annotations

from typing import Any

import pytest

from toolcall_tracker import End, IgnoreReason, InvalidEvent, Limits, Status, ToolCallStateMachine
from toolcall_tracker.changes import ChangeListener
from toolcall_tracker.sink import EventCollector

P, R, D, E = Status.PENDING, Status.RUNNING, Status.DONE, Status.ERROR


class Log(ChangeListener):
    def __init__(self, log: list[Any] | None = None, name: str = "") -> None:
        self.log: list[Any] = [] if log is None else log
        self.name = name

    def call_changed(self, call_id: str, before: Status | None, after: Status) -> None:
        self.log.append((self.name, "changed", call_id, before, after))

    def args_appended(self, call_id: str, text: str) -> None:
        self.log.append((self.name, "appended", call_id, text))

    def turn_ended(self, end: End) -> None:
        self.log.append((self.name, "ended", end.ok, end.reason))

    def call_forgotten(self, call_id: str) -> None:
        self.log.append((self.name, "forgotten", call_id))

    def event_ignored(self, event: object, reason: IgnoreReason) -> None:
        self.log.append((self.name, "ignored", reason))


def turn(machine: ToolCallStateMachine) -> None:
    machine.apply({"type": "start", "id": "a", "name": "f"})
    machine.apply({"type": "delta", "id": "a", "argsTextDelta": '{"x":'})
    machine.apply({"type": "start", "id": "b", "name": "g"})
    machine.apply({"type": "delta", "id": "a", "argsTextDelta": "1}"})
    machine.apply({"type": "ready", "id": "a"})
    machine.apply({"type": "ready", "id": "a"})  # duplicate: ignored
    machine.apply({"type": "result", "id": "a", "result": 1})
    machine.apply({"type": "end", "ok": False, "reason": "length"})


def test_every_transition_in_order_then_the_end() -> None:
    machine = ToolCallStateMachine()
    listener = Log()
    machine.subscribe(listener)
    turn(machine)
    assert listener.log == [
        ("", "changed", "a", None, P),
        ("", "changed", "b", None, P),
        ("", "changed", "a", P, R),
        ("", "ignored", IgnoreReason.NOT_PENDING),
        ("", "changed", "a", R, D),
        ("", "changed", "b", P, E),  # abandoned by the end, published before it
        ("", "ended", False, "length"),
    ]


def test_fragments_only_when_asked_for() -> None:
    machine = ToolCallStateMachine()
    plain, fragments = Log(name="plain"), Log(name="fragments")
    machine.subscribe(plain)
    machine.subscribe(fragments, fragments=True)
    turn(machine)
    assert not [entry for entry in plain.log if entry[1] == "appended"]
    assert [entry for entry in fragments.log if entry[1] == "appended"] == [
        ("fragments", "appended", "a", '{"x":'),
        ("fragments", "appended", "a", "1}"),
    ]


def test_listeners_are_told_in_subscription_order_and_unsubscribe_stops_them() -> None:
    machine = ToolCallStateMachine()
    log: list[Any] = []
    first, second = Log(log, "first"), Log(log, "second")
    machine.subscribe(first)
    machine.subscribe(second)
    machine.subscribe(first)  # twice: still once
    machine.apply({"type": "start", "id": "a", "name": "f"})
    machine.unsubscribe(first)
    machine.apply({"type": "ready", "id": "a"})
    assert log == [
        ("first", "changed", "a", None, P),
        ("second", "changed", "a", None, P),
        ("second", "changed", "a", P, E),  # empty text is not JSON
    ]


def test_forgetting_is_published_after_the_last_change() -> None:
    machine = ToolCallStateMachine(keep_finished=0)
    listener = Log()
    machine.subscribe(listener)
    machine.apply({"type": "start", "id": "a", "name": "f"})
    machine.apply({"type": "error", "id": "a", "error": "no"})
    assert listener.log[-2:] == [("", "changed", "a", P, E), ("", "forgotten", "a")]
    assert machine.get("a") is None


class Boom(Exception):
    pass


class Raising(ChangeListener):
    def call_changed(self, call_id: str, before: Status | None, after: Status) -> None:
        raise Boom(call_id)

    def turn_ended(self, end: End) -> None:
        raise Boom("end")


def test_a_raising_listener_does_not_stop_the_machine_or_the_others() -> None:
    machine = ToolCallStateMachine()
    after = Log()
    machine.apply({"type": "start", "id": "a", "name": "f"})
    machine.apply({"type": "start", "id": "b", "name": "f"})
    machine.subscribe(Raising())
    machine.subscribe(after)
    with pytest.raises(Boom, match="a"):  # the first exception, after everybody was told
        machine.apply({"type": "end", "ok": False})
    assert machine.end == End(ok=False)
    assert [call.status for call in machine.list()] == [E, E]  # both abandoned
    assert after.log[-3:] == [
        ("", "changed", "a", P, E),
        ("", "changed", "b", P, E),
        ("", "ended", False, None),
    ]
    machine.apply({"type": "result", "id": "zz", "result": 1})  # nothing left over


def test_writing_is_applying() -> None:
    """The EventSink methods change the machine exactly as the event models do."""
    written, applied = ToolCallStateMachine(), ToolCallStateMachine()
    logs = Log(name="x"), Log(name="x")
    written.subscribe(logs[0], fragments=True)
    applied.subscribe(logs[1], fragments=True)
    collector = EventCollector()
    for sink in (written, collector):
        sink.write_start("a", "f")
        sink.write_delta("a", "[1")
        sink.write_delta("a", "]")
        sink.write_ready("a")
        sink.write_start("b", "g")
        sink.write_error("b", "bad")
        sink.write_result("a", "ok")
        sink.write_delta("a", "late")
        sink.write_end(True, "done")
    for event in collector.take():
        applied.apply(event)
    assert written.list() == applied.list()
    assert written.end == applied.end == End(ok=True, reason="done")
    assert logs[0].log == logs[1].log
    assert collector.take() == []


@pytest.mark.parametrize(
    ("write", "message"),
    [
        (lambda m: m.write_start("", "f"), "id"),
        (lambda m: m.write_start("a" * 9, "f"), "max_id_chars"),
        (lambda m: m.write_start("a", "n" * 9), "max_name_chars"),
        (lambda m: m.write_start("a", 3), "name"),
        (lambda m: m.write_delta("a", 3), "args"),
        (lambda m: m.write_ready(None), "id"),
        (lambda m: m.write_end("yes", None), "ok"),
    ],
)
def test_writing_a_malformed_event_raises_invalid_event(write: Any, message: str) -> None:
    machine = ToolCallStateMachine(limits=Limits(max_id_chars=8, max_name_chars=8))
    with pytest.raises(InvalidEvent, match=message):
        write(machine)
    assert machine.list() == []
    assert machine.end is None


def test_a_tracker_is_a_sink_and_refuses_writes_once_closed() -> None:
    import anyio

    from toolcall_tracker import ToolCallTracker, TrackerClosed
    from toolcall_tracker.adapters import AnthropicAdapter, apply_stream

    async def main() -> None:
        with anyio.fail_after(10):
            tracker = ToolCallTracker()
            start = {"type": "tool_use", "id": "t1", "name": "f", "input": {}}
            apply_stream(
                tracker,
                [
                    {"type": "content_block_start", "index": 0, "content_block": start},
                    {"type": "content_block_stop", "index": 0},
                    {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
                ],
                AnthropicAdapter(),
            )
            call = await tracker.wait_ready("t1")
            assert call.args == {}
            assert tracker.machine.get("t1") == call
            await tracker.aclose()
            for write in (
                lambda: tracker.write_result("t1", 1),
                lambda: tracker.write_start("t2", "f"),
                lambda: tracker.apply({"type": "error", "id": "t1", "error": "x"}),
            ):
                with pytest.raises(TrackerClosed):
                    write()
            assert tracker.status("t1") is R

    for backend in ("asyncio", "trio"):
        anyio.run(main, backend=backend)


class RaisingOnIgnored(ChangeListener):
    def event_ignored(self, event: object, reason: object) -> None:
        raise Boom(str(reason))


@pytest.mark.parametrize(
    "event",
    [
        {"type": "some_future_event", "id": "a"},  # unknown type: ignored before any call
        {"type": "ready", "id": "nobody"},  # unknown id: ignored by the table
        {"type": "result", "id": "a", "result": 1},  # out of order: ignored by the table
    ],
)
def test_a_listener_error_on_an_ignored_event_is_raised_by_that_apply(
    event: dict[str, object],
) -> None:
    """Never later, by an unrelated write: the apply that caused it raises it."""
    machine = ToolCallStateMachine()
    machine.apply({"type": "start", "id": "a", "name": "f"})
    machine.subscribe(RaisingOnIgnored())
    with pytest.raises(Boom):
        machine.apply(event)
    machine.apply({"type": "delta", "id": "a", "argsTextDelta": "{}"})  # nothing left over
    machine.apply({"type": "ready", "id": "a"})
    call = machine.get("a")
    assert call is not None
    assert call.status is Status.RUNNING
