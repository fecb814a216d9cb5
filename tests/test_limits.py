"""Limits and forgetting: every bound with its default and a custom value, ``forget``,
``keep_finished`` retention, and flat memory in long sessions.

Memory is asserted in bytes with ``tracemalloc`` (never with a clock). Async tests run on
asyncio and trio and are bounded by ``anyio.fail_after``; they synchronise with
``anyio.wait_all_tasks_blocked`` (every other task is parked), never with a sleep.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

import anyio
import pytest

from toolcall_tracker import (
    DEFAULT_LIMITS,
    ArgumentsTooLarge,
    End,
    IgnoreReason,
    InvalidEvent,
    Limits,
    Status,
    ToolCall,
    ToolCallFailed,
    ToolCallStateMachine,
    ToolCallTracker,
    UnknownToolCall,
    tool_call_streaming_state_machine,
)

DEADLINE = 10.0
"""Seconds an async test may take (as ``tests/conftest.py``)."""

# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def start(call_id: str, name: str = "tool") -> dict[str, Any]:
    return {"type": "start", "id": call_id, "name": name}


def delta(call_id: str, text: str) -> dict[str, Any]:
    return {"type": "delta", "id": call_id, "argsTextDelta": text}


def ready(call_id: str) -> dict[str, Any]:
    return {"type": "ready", "id": call_id}


def result(call_id: str, value: Any = "ok") -> dict[str, Any]:
    return {"type": "result", "id": call_id, "result": value}


def error(call_id: str, value: Any = "boom") -> dict[str, Any]:
    return {"type": "error", "id": call_id, "error": value}


def whole_call(call_id: str, args: str = '{"q": 1}', value: Any = "ok") -> list[dict[str, Any]]:
    return [start(call_id), delta(call_id, args), ready(call_id), result(call_id, value)]


class Recorder:
    """An ``on_ignored`` hook that keeps ``(event, reason)`` pairs."""

    def __init__(self) -> None:
        self.seen: list[tuple[Any, IgnoreReason]] = []

    def __call__(self, event: Any, reason: IgnoreReason) -> None:
        self.seen.append((event, reason))

    @property
    def reasons(self) -> list[IgnoreReason]:
        return [reason for _, reason in self.seen]

    def clear(self) -> None:
        self.seen.clear()


def machine(**kwargs: Any) -> tuple[ToolCallStateMachine, Recorder]:
    hook = Recorder()
    return tool_call_streaming_state_machine(on_ignored=hook, **kwargs), hook


def feed(target: ToolCallStateMachine, events: Iterable[Any]) -> None:
    for event in events:
        target.apply(event)


def with_bystander(target: ToolCallStateMachine) -> ToolCall:
    """Put a running bystander call ``by`` in the machine and return its snapshot."""
    feed(target, [start("by", "by"), delta("by", '{"x": '), delta("by", "[1, 2]}")])
    feed(target, [ready("by")])
    snap = target.get("by")
    assert snap is not None
    assert snap.status is Status.RUNNING
    return snap


# --------------------------------------------------------------------------------------
# Limits itself
# --------------------------------------------------------------------------------------


def test_defaults_are_documented_values() -> None:
    limits = Limits()
    assert limits == DEFAULT_LIMITS
    assert limits.max_args_chars == 8 * 1024 * 1024
    assert limits.max_calls == 10_000
    assert limits.max_id_chars == 256
    assert limits.max_name_chars == 256
    assert limits.remember_forgotten == 4096
    assert tool_call_streaming_state_machine().limits == DEFAULT_LIMITS
    assert ToolCallTracker().limits == DEFAULT_LIMITS


def test_custom_limits_are_kept() -> None:
    limits = Limits(max_args_chars=1, max_calls=2, max_id_chars=3, max_name_chars=4)
    assert tool_call_streaming_state_machine(limits=limits).limits is limits
    assert ToolCallTracker(limits=limits).limits is limits


FIELDS = ("max_args_chars", "max_calls", "max_id_chars", "max_name_chars", "remember_forgotten")


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("value", [-1, -(10**20), 1.5, "10", True, None])
def test_limits_reject_bad_values(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=field):
        Limits(**{field: value})


def test_zero_id_length_is_rejected() -> None:
    with pytest.raises(ValueError, match="max_id_chars"):
        Limits(max_id_chars=0)


@pytest.mark.parametrize("field", [f for f in FIELDS if f != "max_id_chars"])
def test_zero_is_accepted_where_meaningful(field: str) -> None:
    assert getattr(Limits(**{field: 0}), field) == 0


def test_limits_are_frozen() -> None:
    with pytest.raises(AttributeError):
        Limits().max_calls = 3  # type: ignore[misc]


@pytest.mark.parametrize("keep", [-1, -100])
def test_keep_finished_must_not_be_negative(keep: int) -> None:
    with pytest.raises(ValueError, match="keep_finished"):
        tool_call_streaming_state_machine(keep_finished=keep)
    with pytest.raises(ValueError, match="keep_finished"):
        ToolCallTracker(keep_finished=keep)


# --------------------------------------------------------------------------------------
# max_args_chars
# --------------------------------------------------------------------------------------


def check_too_large(
    target: ToolCallStateMachine, hook: Recorder, call_id: str, limit: int, received: int
) -> None:
    call = target.get(call_id)
    assert call is not None
    assert call.status is Status.ERROR
    assert call.args_text == ""  # the buffered text was released
    assert call.args is None
    assert isinstance(call.error, ArgumentsTooLarge)
    assert call.error.kind == "arguments_too_large"
    assert call.error.limit == limit
    assert call.error.received == received
    assert "max_args_chars" in call.error.message
    # later events for the call are ignored and change nothing
    hook.clear()
    feed(target, [delta(call_id, "x"), ready(call_id), result(call_id), error(call_id)])
    assert hook.reasons == [IgnoreReason.ALREADY_FINISHED] * 4
    assert target.get(call_id) == call


def test_args_limit_default_exact_fit_then_one_more() -> None:
    limit = DEFAULT_LIMITS.max_args_chars
    m, hook = machine()
    by = with_bystander(m)
    feed(m, [start("fits"), delta("fits", '"' + "a" * (limit - 2)), delta("fits", '"')])
    feed(m, [ready("fits")])
    fits = m.get("fits")
    assert fits is not None
    assert fits.status is Status.RUNNING
    assert len(fits.args) == limit - 2

    feed(m, [start("big"), delta("big", "a" * (limit - 1)), delta("big", "bc")])
    check_too_large(m, hook, "big", limit, limit + 1)
    assert m.get("by") == by


@pytest.mark.parametrize("limit", [0, 1, 10, 1000])
def test_args_limit_custom(limit: int) -> None:
    m, hook = machine(limits=Limits(max_args_chars=limit))
    feed(m, [start("by"), delta("by", "1" * limit)])  # exactly at the limit: accepted
    assert m.get("by") == ToolCall(id="by", name="tool", args_text="1" * limit)
    by = m.get("by")

    feed(m, [start("a"), delta("a", "x" * (limit // 2)), delta("a", "")])
    assert m.get("a").status is Status.PENDING  # type: ignore[union-attr]
    feed(m, [delta("a", "y" * (limit - limit // 2 + 1))])
    check_too_large(m, hook, "a", limit, limit + 1)

    feed(m, [start("one"), delta("one", "z" * (limit + 5))])  # one fragment, far too big
    check_too_large(m, hook, "one", limit, limit + 5)
    assert m.get("by") == by
    feed(m, [ready("by")])
    assert m.get("by").status is (Status.RUNNING if limit else Status.ERROR)  # type: ignore[union-attr]


def test_args_limit_is_counted_in_characters() -> None:
    m, hook = machine(limits=Limits(max_args_chars=4))
    feed(m, [start("a"), delta("a", '"éü"')])  # 4 code points, 6 UTF-8 bytes
    feed(m, [ready("a")])
    assert m.get("a").args == "éü"  # type: ignore[union-attr]
    feed(m, [start("b"), delta("b", '"\U0001f600\U0001f600'), delta("b", '"'), ready("b")])
    assert m.get("b").args == "\U0001f600\U0001f600"  # type: ignore[union-attr]  # 16 bytes
    feed(m, [start("c"), delta("c", '"\U0001f600\U0001f600"'), delta("c", " ")])
    check_too_large(m, hook, "c", 4, 5)


def test_args_limit_releases_memory() -> None:
    limit = 2_000_000
    m, hook = machine(limits=Limits(max_args_chars=limit))
    feed(m, [start("a")])
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(limit // 10_000):
            m.apply(delta("a", "x" * 10_000))
        full = tracemalloc.get_traced_memory()[0]
        m.apply(delta("a", "y"))
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert full - before > limit  # the text was really buffered
    assert after - before < 64 * 1024  # and really released
    check_too_large(m, hook, "a", limit, limit + 1)


def test_args_limit_error_reaches_waiters_and_only_that_call() -> None:
    async def main() -> None:
        with anyio.fail_after(DEADLINE):
            tracker = ToolCallTracker(limits=Limits(max_args_chars=8))
            outcome: dict[str, Any] = {}

            async def wait(call_id: str) -> None:
                try:
                    outcome[call_id] = await tracker.wait_done(call_id)
                except ToolCallFailed as exc:
                    outcome[call_id] = exc

            async with anyio.create_task_group() as tg:
                tg.start_soon(wait, "a")
                tg.start_soon(wait, "b")
                await anyio.wait_all_tasks_blocked()
                feed(tracker, [start("a"), start("b"), delta("a", "[1,2,3,4,5]")])
                feed(tracker, [delta("b", "[1]"), ready("b"), result("b", 7)])
            assert isinstance(outcome["a"], ToolCallFailed)
            assert isinstance(outcome["a"].error, ArgumentsTooLarge)
            assert outcome["a"].call.args_text == ""
            assert outcome["b"].status is Status.DONE
            assert outcome["b"].args == [1]

    for backend in ("asyncio", "trio"):
        anyio.run(main, backend=backend)


# --------------------------------------------------------------------------------------
# max_calls
# --------------------------------------------------------------------------------------


def test_max_calls_default() -> None:
    m, hook = machine()
    limit = DEFAULT_LIMITS.max_calls
    for i in range(limit):
        m.apply(start(f"c{i}"))
    assert hook.reasons == []
    m.apply(start("one-too-many"))
    assert hook.reasons == [IgnoreReason.TOO_MANY_CALLS]
    assert m.get("one-too-many") is None
    assert len(m.list()) == limit


@pytest.mark.parametrize("limit", [1, 2, 5])
def test_max_calls_custom_ignores_then_makes_room(limit: int) -> None:
    m, hook = machine(limits=Limits(max_calls=limit))
    ids = [f"c{i}" for i in range(limit)]
    feed(m, [start(i) for i in ids])
    assert hook.reasons == []
    before = m.list()

    m.apply(start("extra"))
    assert hook.reasons == [IgnoreReason.TOO_MANY_CALLS]
    ignored_event = hook.seen[0][0]
    assert ignored_event.id == "extra"
    assert m.get("extra") is None
    assert m.list() == before

    # events for the refused id are then unknown_id; the stream goes on for the others
    hook.clear()
    feed(m, [delta("extra", "{}"), ready("extra"), result("extra")])
    assert hook.reasons == [IgnoreReason.UNKNOWN_ID] * 3
    # while full, even a start for a tracked id is refused at the stream level
    hook.clear()
    m.apply(start(ids[0]))
    assert hook.reasons == [IgnoreReason.TOO_MANY_CALLS]
    feed(m, whole_call(ids[0])[1:])
    assert m.get(ids[0]).status is Status.DONE  # type: ignore[union-attr]

    # forgetting a finished call makes room again, for exactly one more call
    assert m.forget(ids[0]) is not None
    hook.clear()
    m.apply(start("extra"))
    assert hook.reasons == []
    assert m.get("extra") == ToolCall(id="extra", name="tool")
    m.apply(start("extra2"))
    assert hook.reasons == [IgnoreReason.TOO_MANY_CALLS]


def test_max_calls_retention_makes_room() -> None:
    m, hook = machine(limits=Limits(max_calls=2), keep_finished=0)
    for i in range(50):  # far more calls than max_calls, one after the other
        feed(m, whole_call(f"c{i}"))
    assert hook.reasons == []
    assert m.list() == []


def test_max_calls_counts_finished_calls_that_are_kept() -> None:
    m, hook = machine(limits=Limits(max_calls=2))
    feed(m, whole_call("a") + whole_call("b"))
    m.apply(start("c"))
    assert hook.reasons == [IgnoreReason.TOO_MANY_CALLS]


def test_max_calls_full_then_end() -> None:
    m, hook = machine(limits=Limits(max_calls=1))
    feed(m, [start("a"), delta("a", "{}"), ready("a"), start("b")])
    assert hook.reasons == [IgnoreReason.TOO_MANY_CALLS]
    hook.clear()
    feed(m, [{"type": "end", "ok": True}, start("c"), result("a", 1)])
    assert hook.reasons == [IgnoreReason.TURN_ENDED]
    assert m.get("a").status is Status.DONE  # type: ignore[union-attr]
    m.forget("a")
    hook.clear()
    m.apply(start("d"))  # room again, but the turn is over
    assert hook.reasons == [IgnoreReason.TURN_ENDED]


def test_max_calls_zero_tracks_nothing() -> None:
    # Found by this file: the first start used to be tracked (fixed in the core).
    m, hook = machine(limits=Limits(max_calls=0))
    m.apply(start("a"))
    assert hook.reasons == [IgnoreReason.TOO_MANY_CALLS]
    assert m.list() == []


# --------------------------------------------------------------------------------------
# max_id_chars / max_name_chars
# --------------------------------------------------------------------------------------


def events_for(call_id: str) -> list[dict[str, Any]]:
    return [start(call_id), delta(call_id, "{}"), ready(call_id), result(call_id), error(call_id)]


@pytest.mark.parametrize(("limit", "explicit"), [(DEFAULT_LIMITS.max_id_chars, False), (3, True)])
def test_id_length(limit: int, explicit: bool) -> None:
    m, hook = machine(limits=Limits(max_id_chars=limit) if explicit else None)
    by = with_bystander(m)
    longest = "i" * limit
    feed(m, whole_call(longest))
    assert m.get(longest).status is Status.DONE  # type: ignore[union-attr]
    snapshot = m.list()
    for event in events_for("j" * (limit + 1)) + events_for(longest + "x"):
        with pytest.raises(InvalidEvent, match="max_id_chars") as info:
            m.apply(event)
        assert info.value.event is event
        assert f"({limit})" in str(info.value)
    assert m.list() == snapshot
    assert m.get("by") == by
    assert hook.reasons == []


@pytest.mark.parametrize(
    ("limit", "explicit"), [(DEFAULT_LIMITS.max_name_chars, False), (4, True), (0, True)]
)
def test_name_length(limit: int, explicit: bool) -> None:
    m, hook = machine(limits=Limits(max_name_chars=limit) if explicit else None)
    by = with_bystander(m) if limit else None
    m.apply(start("ok", "n" * limit))
    assert m.get("ok").name == "n" * limit  # type: ignore[union-attr]
    snapshot = m.list()
    with pytest.raises(InvalidEvent, match="max_name_chars"):
        m.apply(start("long", "n" * (limit + 1)))
    assert m.list() == snapshot
    assert m.get("long") is None
    if by is not None:
        assert m.get("by") == by
    # the refused start left no trace: the id can start later with a fitting name
    m.apply(start("long", "n" * limit))
    assert m.get("long") is not None
    assert hook.reasons == []


def test_id_limit_is_checked_in_characters() -> None:
    m, _ = machine(limits=Limits(max_id_chars=2))
    m.apply(start("\U0001f600\U0001f600"))  # 2 code points, 8 UTF-8 bytes
    with pytest.raises(InvalidEvent, match="max_id_chars"):
        m.apply(start("\U0001f600" * 3))


def test_invalid_id_in_tracker_consume_with_and_without_skip() -> None:
    async def source() -> AsyncIterator[dict[str, Any]]:
        yield start("a")
        yield start("x" * 300)
        yield delta("a", "{}")
        yield ready("a")

    async def main() -> None:
        with anyio.fail_after(DEADLINE):
            hook = Recorder()
            tracker = ToolCallTracker(on_ignored=hook, skip_invalid=True)
            await tracker.consume(source())
            assert hook.reasons == [IgnoreReason.INVALID_EVENT]
            assert tracker.get("a").status is Status.RUNNING  # type: ignore[union-attr]
            assert tracker.end is not None
            assert tracker.end.ok

            strict = ToolCallTracker()
            with pytest.raises(InvalidEvent, match="max_id_chars"):
                await strict.consume(source())
            assert strict.end is not None
            assert not strict.end.ok
            assert strict.get("a").status is Status.ERROR  # type: ignore[union-attr]

    for backend in ("asyncio", "trio"):
        anyio.run(main, backend=backend)


# --------------------------------------------------------------------------------------
# forget()
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("events", "status"),
    [
        ([start("a")], "pending"),
        ([start("a"), delta("a", "{")], "pending"),
        ([start("a"), delta("a", "{}"), ready("a")], "running"),
    ],
)
def test_forget_refuses_unfinished_calls(events: list[dict[str, Any]], status: str) -> None:
    m, _ = machine()
    feed(m, events)
    before = m.list()
    with pytest.raises(ValueError, match=status):
        m.forget("a")
    assert m.list() == before


def test_forget_unknown_id_returns_none() -> None:
    m, hook = machine()
    assert m.forget("nope") is None
    m.apply(start("nope"))  # not a tombstone: it may start
    assert m.get("nope") is not None
    assert hook.reasons == []


@pytest.mark.parametrize(
    "finish",
    [
        whole_call("a", value={"r": 1}),
        [start("a"), error("a", "bad")],
        [start("a"), delta("a", "{"), ready("a")],  # invalid JSON -> error
        [start("a"), delta("a", "{}"), ready("a"), error("a", "tool failed")],
    ],
)
def test_forget_finished_call(finish: list[dict[str, Any]]) -> None:
    m, hook = machine()
    by = with_bystander(m)
    feed(m, finish)
    last = m.get("a")
    assert last is not None
    assert last.status in (Status.DONE, Status.ERROR)
    assert m.forget("a") == last
    assert m.get("a") is None
    assert [c.id for c in m.list()] == ["by"]
    assert m.forget("a") is None  # twice: nothing left to forget

    hook.clear()
    feed(m, [*events_for("a"), start("a", "other")])
    assert hook.reasons == [IgnoreReason.FORGOTTEN] * 6
    assert m.get("a") is None
    m.apply({"type": "end", "ok": True})  # the end broadcast does not resurrect it
    assert m.get("a") is None
    assert m.get("by") == by


@pytest.mark.parametrize("remember", [0, 1, 3])
def test_tombstones_are_bounded(remember: int) -> None:
    m, hook = machine(limits=Limits(remember_forgotten=remember))
    ids = [f"c{i}" for i in range(remember + 2)]
    for call_id in ids:
        feed(m, whole_call(call_id))
        m.forget(call_id)
    remembered = ids[len(ids) - remember :] if remember else []
    hook.clear()
    for call_id in ids:
        m.apply(start(call_id))
    assert hook.reasons == [IgnoreReason.FORGOTTEN] * len(remembered)
    # the oldest ids were dropped from memory: they start afresh, as new calls
    assert [c.id for c in m.list()] == [i for i in ids if i not in remembered]
    assert all(c.status is Status.PENDING for c in m.list())


def test_tombstones_default_bound() -> None:
    m, hook = machine(keep_finished=0)
    total = DEFAULT_LIMITS.remember_forgotten + 10
    for i in range(total):
        feed(m, whole_call(f"c{i}"))
    hook.clear()
    feed(m, [start(f"c{i}") for i in range(total)])
    assert hook.reasons == [IgnoreReason.FORGOTTEN] * DEFAULT_LIMITS.remember_forgotten
    assert [c.id for c in m.list()] == [f"c{i}" for i in range(10)]


def test_waiting_for_a_forgotten_call() -> None:
    async def main() -> None:
        with anyio.fail_after(DEADLINE):
            tracker = ToolCallTracker()
            feed(tracker, whole_call("a"))
            tracker.forget("a")
            with pytest.raises(UnknownToolCall, match="forgotten"):
                await tracker.wait_done("a")
            with pytest.raises(UnknownToolCall, match="forgotten"):
                await tracker.wait_ready("a")
            assert tracker.timeline("a") is None

    for backend in ("asyncio", "trio"):
        anyio.run(main, backend=backend)


# --------------------------------------------------------------------------------------
# keep_finished retention
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("keep", [0, 1, 3, 10])
def test_keep_finished_keeps_at_most_n(keep: int) -> None:
    m, hook = machine(keep_finished=keep)
    feed(m, [start("p"), start("r"), delta("r", "1"), ready("r")])  # never finished
    finished: list[str] = []
    for i in range(25):
        call_id = f"c{i}"
        if i % 3:
            feed(m, whole_call(call_id))
        else:
            feed(m, [start(call_id), error(call_id)])
        finished.append(call_id)
        done = [c for c in m.list() if c.status in (Status.DONE, Status.ERROR)]
        assert len(done) <= keep
        assert [c.id for c in done] == finished[len(finished) - len(done) :]
        # unfinished calls are never dropped
        assert m.get("p") is not None
        assert m.get("r") is not None
    assert len([c for c in m.list() if c.status in (Status.DONE, Status.ERROR)]) == min(keep, 25)
    assert hook.reasons == []
    if keep < 25:
        m.apply(result("c1"))
        assert hook.reasons == [IgnoreReason.FORGOTTEN]


def test_keep_finished_applies_to_abandoned_calls_at_end() -> None:
    m, _hook = machine(keep_finished=1)
    feed(m, [start("a"), start("b"), start("c"), delta("c", "{}"), ready("c")])
    m.apply({"type": "end", "ok": False, "reason": "length"})
    calls = m.list()
    # a and b were abandoned (error); only the latest finished one is kept
    assert [(c.id, c.status) for c in calls] == [("b", Status.ERROR), ("c", Status.RUNNING)]
    m.apply(result("c", 1))
    assert [(c.id, c.status) for c in m.list()] == [("c", Status.DONE)]


def test_keep_finished_none_keeps_everything() -> None:
    m, _ = machine()
    for i in range(100):
        feed(m, whole_call(f"c{i}"))
    assert len(m.list()) == 100


def test_explicit_forget_combined_with_retention() -> None:
    m, hook = machine(keep_finished=2)
    feed(m, whole_call("a") + whole_call("b"))
    m.forget("a")
    feed(m, whole_call("c") + whole_call("d"))
    assert [c.id for c in m.list()] == ["c", "d"]
    feed(m, [start("a"), start("b")])
    assert hook.reasons == [IgnoreReason.FORGOTTEN] * 2


# --------------------------------------------------------------------------------------
# the tracker under retention: waiters and ready_calls keep their guarantees
# --------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("keep", [0, 1])
async def test_waiters_get_result_of_call_forgotten_by_retention(
    anyio_backend: str, keep: int
) -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker(keep_finished=keep)
        got: dict[str, Any] = {}

        async def wait(key: str, call_id: str, how: Callable[[str], Any]) -> None:
            try:
                got[key] = await how(call_id)
            except Exception as exc:
                got[key] = exc

        async with anyio.create_task_group() as tg:
            for call_id in ("a", "b", "c"):
                tg.start_soon(wait, f"done-{call_id}", call_id, tracker.wait_done)
                tg.start_soon(wait, f"ready-{call_id}", call_id, tracker.wait_ready)
            await anyio.wait_all_tasks_blocked()
            steps = [
                [start("a"), start("b"), start("c")],
                [delta("a", "[1]"), ready("a")],
                [result("a", "A")],
                [delta("b", "{"), ready("b")],  # invalid JSON: error at ready
                [delta("c", "2"), ready("c")],
                [error("c", "tool broke")],
            ]
            for step in steps:
                feed(tracker, step)
                await anyio.wait_all_tasks_blocked()  # every waiter saw this step

        assert [c.id for c in tracker.list()] == ["c"][:keep]
        a = got["done-a"]
        assert isinstance(a, ToolCall)
        assert a.status is Status.DONE
        assert a.result == "A"
        assert a.args == [1]
        assert isinstance(got["ready-a"], ToolCall)
        assert got["ready-a"].args == [1]
        for key in ("done-b", "ready-b"):
            assert isinstance(got[key], ToolCallFailed)
            assert got[key].call.id == "b"
            assert got[key].error.kind == "invalid_arguments"
        assert isinstance(got["ready-c"], ToolCall)
        assert got["ready-c"].args == 2
        assert isinstance(got["done-c"], ToolCallFailed)
        assert got["done-c"].error == "tool broke"
        assert tracker.get("a") is None  # forgotten by retention in both cases


@pytest.mark.anyio
async def test_waiter_on_call_finished_in_same_step_as_end(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker(keep_finished=0)
        got: list[Any] = []

        async def wait() -> None:
            try:
                got.append(await tracker.wait_done("a"))
            except ToolCallFailed as exc:
                got.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(wait)
            await anyio.wait_all_tasks_blocked()
            feed(tracker, [start("a"), delta("a", "{")])
            tracker.apply(End(ok=False, reason="length"))  # abandons and forgets "a" at once
        assert isinstance(got[0], ToolCallFailed)
        assert got[0].error.kind == "incomplete_arguments"
        assert tracker.get("a") is None


def interleaved(count: int, width: int) -> list[dict[str, Any]]:
    """``count`` calls, ``width`` at a time, their events interleaved round-robin."""
    events: list[dict[str, Any]] = []
    for base in range(0, count, width):
        ids = [f"c{i}" for i in range(base, min(base + width, count))]
        for make in (start, lambda i: delta(i, '{"n": '), lambda i: delta(i, i[1:] + "}"), ready):
            events.extend(make(i) for i in ids)
    return events


@pytest.mark.anyio
@pytest.mark.parametrize("keep", [0, 3])
async def test_ready_calls_yields_every_call_once_under_retention(
    anyio_backend: str, keep: int
) -> None:
    with anyio.fail_after(DEADLINE):
        count = 600
        tracker = ToolCallTracker(keep_finished=keep)
        first: list[str] = []
        second: list[str] = []

        async def source() -> AsyncIterator[dict[str, Any]]:
            for event in interleaved(count, 7):
                yield event

        async def runner(into: list[str], finish: bool) -> None:
            async for call in tracker.ready_calls():
                assert call.status is Status.RUNNING
                assert call.args == {"n": int(call.id[1:])}
                into.append(call.id)
                if finish:  # finish it: retention then forgets it
                    tracker.apply(result(call.id, call.args["n"]))

        async with anyio.create_task_group() as tg:
            tg.start_soon(runner, first, True)
            tg.start_soon(runner, second, False)
            await anyio.wait_all_tasks_blocked()
            await tracker.consume(source())
        expected = [f"c{i}" for i in range(count)]
        assert first == expected
        assert second == expected
        assert len(tracker.list()) == min(keep, count)


# --------------------------------------------------------------------------------------
# memory stays flat
# --------------------------------------------------------------------------------------

FLAT_BOUND = 96 * 1024
"""Bytes a long session may grow by between the first 1,000 calls and the last."""


def traced_after(step: Callable[[], None]) -> int:
    step()
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


@pytest.mark.parametrize("factory", [ToolCallStateMachine, ToolCallTracker])
def test_memory_flat_with_keep_finished_zero(factory: type[ToolCallStateMachine]) -> None:
    m = factory(keep_finished=0, limits=Limits(remember_forgotten=500))

    def calls(lo: int, hi: int) -> Callable[[], None]:
        def run() -> None:
            for i in range(lo, hi):
                feed(m, whole_call(f"call-{i}", '{"payload": "' + "x" * 200 + '"}', [i]))

        return run

    tracemalloc.start()
    try:
        early = traced_after(calls(0, 1000))
        late = traced_after(calls(1000, 20_000))
    finally:
        tracemalloc.stop()
    assert m.list() == []
    assert late - early < FLAT_BOUND, (early, late)


TRACKER_CALLS = 8_000
"""Calls through consume and ready_calls (fewer than the machine's 20,000: it is slower)."""


@pytest.mark.anyio
async def test_tracker_memory_flat_with_keep_finished_zero(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE * 3):
        tracker = ToolCallTracker(keep_finished=0, limits=Limits(remember_forgotten=500))
        measured: list[int] = []

        async def source() -> AsyncIterator[dict[str, Any]]:
            for base in range(0, TRACKER_CALLS, 10):
                for event in interleaved(10, 10):
                    if "id" in event:
                        event["id"] = f"{base}-{event['id']}"
                    yield event
                # let the runner catch up, so that the number of calls in flight (and so
                # the size of the tracker's tables) does not depend on the scheduler
                await anyio.wait_all_tasks_blocked()
                if base + 10 in (1000, TRACKER_CALLS):
                    gc.collect()
                    measured.append(tracemalloc.get_traced_memory()[0])

        async def runner() -> None:
            async for call in tracker.ready_calls():
                tracker.apply(result(call.id, call.args))

        tracemalloc.start()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(runner)
                await anyio.wait_all_tasks_blocked()
                await tracker.consume(source())
        finally:
            tracemalloc.stop()
        early, late = measured
        assert tracker.list() == []
        assert late - early < FLAT_BOUND, (early, late)


def test_tracker_memory_flat_with_one_call_that_never_finishes() -> None:
    # Found by this file: one running call used to pin every later ready snapshot.
    tracker = ToolCallTracker(keep_finished=0, limits=Limits(remember_forgotten=500))
    feed(tracker, [start("stuck"), delta("stuck", "{}"), ready("stuck")])

    def calls(lo: int, hi: int) -> Callable[[], None]:
        def run() -> None:
            for i in range(lo, hi):
                feed(tracker, whole_call(f"c{i}", '{"p": "' + "x" * 200 + '"}'))

        return run

    tracemalloc.start()
    try:
        early = traced_after(calls(0, 1000))
        late = traced_after(calls(1000, 6000))
    finally:
        tracemalloc.stop()
    assert late - early < FLAT_BOUND, (early, late)


@pytest.mark.anyio
async def test_cancelled_waiters_do_not_accumulate(anyio_backend: str) -> None:
    # Found by this file: cancelled waiters used to stay in the tracker until the end.
    with anyio.fail_after(DEADLINE * 3):
        tracker = ToolCallTracker()

        async def waits(lo: int, hi: int) -> None:
            for i in range(lo, hi):
                with anyio.CancelScope() as scope:
                    scope.cancel()
                    await tracker.wait_done(f"never-{i}")

        tracemalloc.start()
        try:
            await waits(0, 1000)
            gc.collect()
            early = tracemalloc.get_traced_memory()[0]
            await waits(1000, 6000)
            gc.collect()
            late = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        assert late - early < FLAT_BOUND, (early, late)
