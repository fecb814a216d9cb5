"""The bad-input catalogue: one table of hostile or malformed inputs, each with its outcome.

Every row is run against the synchronous machine and the async tracker (asyncio and trio),
each holding two other calls: a running bystander ``by`` and a pending target ``t``. A row
is a list of inputs; its outcome concerns the last one:

- ``Invalid("substring")``: the last input raises :class:`InvalidEvent` whose message
  contains the substring, and nothing changed;
- ``Ignored(reason)``: the last input is reported to ``on_ignored`` with that reason, and
  nothing changed;
- ``Failed(id, kind)``: after the inputs, call ``id`` is in ``error`` with that error kind;
- ``State(id, status, check)``: after the inputs, call ``id`` has that status and ``check``
  holds (an accepted input, shown to be stored faithfully);
- ``AfterClose``: the inputs come after the turn ended (machine: ``turn_ended`` or applied,
  as the stream table says) or after the tracker was closed (:class:`TrackerClosed`).

Each time the bystander must be untouched, its waiter still waiting, and once the turn is
closed every waiter must return (bounded by ``anyio.fail_after``): never a crash, never a
hang, never corruption of another call. Rows that reveal a core bug are marked
``xfail(strict=True)`` with the reason. (The raw lone surrogate crash, the raising Mapping,
the unvalidated ``model_construct`` start and the surrogate id rejected by non-dict mappings
this table found are fixed in the core; their rows stay as regression tests.)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import anyio
import pytest

from toolcall_tracker import (
    DEFAULT_LIMITS,
    Delta,
    End,
    IgnoreReason,
    InvalidEvent,
    Result,
    Start,
    Status,
    ToolCall,
    ToolCallFailed,
    ToolCallStateMachine,
    ToolCallTracker,
    TrackerClosed,
    UnknownToolCall,
    tool_call_streaming_state_machine,
)

DEADLINE = 10.0
"""Seconds a row may take on one backend (as ``tests/conftest.py``)."""

MB = 1024 * 1024

# --------------------------------------------------------------------------------------
# outcomes
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Invalid:
    message: str


@dataclass(frozen=True)
class Ignored:
    reason: IgnoreReason


@dataclass(frozen=True)
class Failed:
    call_id: str
    kind: str


@dataclass(frozen=True)
class State:
    call_id: str
    status: Status
    check: Callable[[ToolCall], bool] = lambda call: True


@dataclass(frozen=True)
class AfterClose:
    """Machine: the last input is ignored with ``turn_ended`` (``reason``) or applied
    (``reason=None``); tracker (closed): it raises TrackerClosed."""

    reason: IgnoreReason | None = IgnoreReason.TURN_ENDED


Outcome = Invalid | Ignored | Failed | State | AfterClose


@dataclass(frozen=True)
class Row:
    name: str
    inputs: Callable[[], list[Any]]  # built lazily: some rows hold megabytes
    outcome: Outcome
    running_target: bool = False  # make the target ``t`` running ({"x": 1}) first
    xfail: str | None = None
    marks: tuple[Any, ...] = field(default=())


# --------------------------------------------------------------------------------------
# hostile helpers
# --------------------------------------------------------------------------------------


def start(call_id: Any = "n", name: Any = "tool") -> dict[str, Any]:
    return {"type": "start", "id": call_id, "name": name}


def delta(text: Any, call_id: Any = "t") -> dict[str, Any]:
    return {"type": "delta", "id": call_id, "argsTextDelta": text}


def ready(call_id: Any = "t") -> dict[str, Any]:
    return {"type": "ready", "id": call_id}


def args(text: str) -> Callable[[], list[Any]]:
    """The target's whole argument text, then ``ready``."""
    return lambda: [delta(text), ready()]


class PlainMapping(Mapping[str, Any]):
    """A well-behaved Mapping that is not a dict."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


class DictSubclass(dict):  # type: ignore[type-arg]
    pass


class RaisingGetItem(PlainMapping):
    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("hostile __getitem__")


class MissingGetItem(PlainMapping):
    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)


class RaisingIter(PlainMapping):
    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("hostile __iter__")


class StrSubclass(str):
    __slots__ = ()


def deep_list(depth: int) -> list[Any]:
    root: list[Any] = []
    node = root
    for _ in range(depth):
        child: list[Any] = []
        node.append(child)
        node = child
    return root


def is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


LONG_ID = "i" * (DEFAULT_LIMITS.max_id_chars + 1)
LONG_NAME = "n" * (DEFAULT_LIMITS.max_name_chars + 1)
TOO_BIG = DEFAULT_LIMITS.max_args_chars + 1
TYPE_MSG = "needs a string 'type'"
NOT_MAPPING = "must be an event model or a mapping"
UNKNOWN_TYPE = Ignored(IgnoreReason.UNKNOWN_TYPE)

# --------------------------------------------------------------------------------------
# the catalogue
# --------------------------------------------------------------------------------------

CATALOGUE: list[Row] = [
    # -- not an event at all ---------------------------------------------------------
    Row("None", lambda: [None], Invalid(NOT_MAPPING)),
    Row("a string", lambda: ["start"], Invalid("not str")),
    Row("bytes of JSON", lambda: [b'{"type": "start", "id": "n"}'], Invalid("not bytes")),
    Row("a list of pairs", lambda: [[("type", "start"), ("id", "n")]], Invalid("not list")),
    Row("an int", lambda: [42], Invalid("not int")),
    Row("a ToolCall snapshot", lambda: [ToolCall(id="n", name="x")], Invalid("not ToolCall")),
    # -- the type field --------------------------------------------------------------
    Row("empty mapping", lambda: [{}], Invalid(TYPE_MSG)),
    Row("type None", lambda: [{"type": None, "id": "n"}], Invalid(TYPE_MSG)),
    Row("type int", lambda: [{"type": 1, "id": "n"}], Invalid(TYPE_MSG)),
    Row("type bytes", lambda: [{"type": b"start", "id": "n", "name": "x"}], Invalid(TYPE_MSG)),
    Row("type upper case", lambda: [{"type": "START", "id": "n", "name": "x"}], UNKNOWN_TYPE),
    Row("type with a space", lambda: [{"type": "start ", "id": "n", "name": "x"}], UNKNOWN_TYPE),
    Row("type empty string", lambda: [{"type": "", "id": "n"}], UNKNOWN_TYPE),
    Row("unknown type", lambda: [{"type": "tool_call_chunk", "id": "t"}], UNKNOWN_TYPE),
    # -- ids -------------------------------------------------------------------------
    Row("id missing", lambda: [{"type": "start", "name": "x"}], Invalid("field 'id'")),
    Row("id int", lambda: [start(5)], Invalid("'id': Input should be a valid string")),
    Row("id float NaN", lambda: [start(math.nan)], Invalid("'id'")),
    Row("id None", lambda: [ready(None)], Invalid("'id'")),
    Row("id bool", lambda: [start(True)], Invalid("'id'")),
    Row("id bytes", lambda: [delta("{}", b"t")], Invalid("'id'")),
    Row("id nested mapping", lambda: [start({"id": "n"})], Invalid("'id'")),
    Row("id empty", lambda: [start("")], Invalid("at least 1 character")),
    Row("id one over the limit", lambda: [start(LONG_ID)], Invalid("max_id_chars")),
    Row("id of 10 MB", lambda: [delta("{}", "i" * (10 * MB))], Invalid("max_id_chars")),
    Row(
        "id with control characters",
        lambda: [start("n\x00\x1b[2J\n\r")],
        State("n\x00\x1b[2J\n\r", Status.PENDING),
    ),
    Row("id lone surrogate", lambda: [start("\ud800")], State("\ud800", Status.PENDING)),
    Row(
        "id lone surrogate in a Mapping that is not a dict",
        lambda: [PlainMapping(start("\ud800"))],
        State("\ud800", Status.PENDING),
    ),
    Row("id str subclass", lambda: [start(StrSubclass("n"))], State("n", Status.PENDING)),
    Row(
        "id differing by whitespace is another call",
        lambda: [start(" t")],
        State(" t", Status.PENDING),
    ),
    # -- names -----------------------------------------------------------------------
    Row("name missing", lambda: [{"type": "start", "id": "n"}], Invalid("field 'name'")),
    Row("name int", lambda: [start("n", 7)], Invalid("'name'")),
    Row("name one over the limit", lambda: [start("n", LONG_NAME)], Invalid("max_name_chars")),
    Row(
        "name with control characters and a lone surrogate",
        lambda: [start("n", "\x07\udfff\u202e")],
        State("n", Status.PENDING, lambda c: c.name == "\x07\udfff\u202e"),
    ),
    # -- fragments -------------------------------------------------------------------
    Row("fragment missing", lambda: [{"type": "delta", "id": "t"}], Invalid("argsTextDelta")),
    Row("fragment None", lambda: [delta(None)], Invalid("argsTextDelta")),
    Row("fragment int", lambda: [delta(12)], Invalid("argsTextDelta")),
    Row("fragment list", lambda: [delta(["{", "}"])], Invalid("argsTextDelta")),
    Row("fragment non-UTF-8 bytes", lambda: [delta(b"\xff\xfe{}")], Invalid("argsTextDelta")),
    Row(
        "conflicting camel and snake fragment: camelCase wins",
        lambda: [{"type": "delta", "id": "t", "argsTextDelta": "1", "args_text_delta": "2"}],
        State("t", Status.PENDING, lambda c: c.args_text == "1"),
    ),
    Row(
        "camelCase fragment None beside a snake_case one",
        lambda: [{"type": "delta", "id": "t", "argsTextDelta": None, "args_text_delta": "2"}],
        Invalid("argsTextDelta"),
    ),
    Row(
        "fragment of 9 MB (over the default limit)",
        lambda: [delta("x" * TOO_BIG)],
        Failed("t", "arguments_too_large"),
    ),
    Row(
        "fragments of megabytes under the limit",
        lambda: [
            delta('{"blob": "'),
            *[delta("y" * MB) for _ in range(4)],
            delta('"}'),
            ready(),
        ],
        State("t", Status.RUNNING, lambda c: len(c.args["blob"]) == 4 * MB),
    ),
    Row(
        "raw control character inside a JSON string",
        args('{"a": "\x01"}'),
        Failed("t", "invalid_arguments"),
    ),
    Row("NUL byte after the JSON", args('{"a": 1}\x00'), Failed("t", "invalid_arguments")),
    Row(
        "escaped lone surrogate in a JSON string",
        args('{"a": "\\ud800"}'),
        State("t", Status.RUNNING, lambda c: c.args == {"a": "\ud800"}),
    ),
    Row(
        "raw lone surrogate inside a JSON string",
        args('{"a": "\ud800"}'),
        State("t", Status.RUNNING, lambda c: c.args == {"a": "\ud800"}),
    ),
    Row(
        "raw lone surrogate outside a JSON string",
        args("\udfff"),
        Failed("t", "invalid_arguments"),
    ),
    # -- argument JSON ---------------------------------------------------------------
    Row("NaN in the arguments", args('{"a": NaN}'), Failed("t", "invalid_arguments")),
    Row("-Infinity arguments", args("-Infinity"), Failed("t", "invalid_arguments")),
    Row(
        "1e400 overflows to inf, as JSON.parse",
        args("1e400"),
        State("t", Status.RUNNING, lambda c: c.args == math.inf),
    ),
    Row("integer of 5,000 digits", args("9" * 5000), Failed("t", "invalid_arguments")),
    Row("empty argument text", args(""), Failed("t", "invalid_arguments")),
    Row("byte-order mark", args("\ufeff{}"), Failed("t", "invalid_arguments")),
    Row("non-breaking space around JSON", args("\xa0{}"), Failed("t", "invalid_arguments")),
    Row("trailing data", args("{} {}"), Failed("t", "invalid_arguments")),
    Row(
        "nesting 100,000 deep",
        args("[" * 100_000 + "]" * 100_000),
        Failed("t", "invalid_arguments"),
    ),
    Row(
        "nesting 300 deep (valid)",
        args("[" * 300 + "]" * 300),
        State("t", Status.RUNNING, lambda c: isinstance(c.args, list)),
    ),
    Row(
        "duplicate keys: the last wins",
        args('{"k": 1, "k": 2, "k": {"deep": 3}}'),
        State("t", Status.RUNNING, lambda c: c.args == {"k": {"deep": 3}}),
    ),
    # -- end events ------------------------------------------------------------------
    Row("end ok int", lambda: [{"type": "end", "ok": 1}], Invalid("'ok'")),
    Row("end ok string", lambda: [{"type": "end", "ok": "true"}], Invalid("'ok'")),
    Row("end ok None", lambda: [{"type": "end", "ok": None}], Invalid("'ok'")),
    Row("end reason NaN", lambda: [{"type": "end", "reason": math.nan}], Invalid("'reason'")),
    Row(
        "end with a stray id abandons pending calls only",
        lambda: [{"type": "end", "id": "by", "reason": "length"}],
        Failed("t", "incomplete_arguments"),
    ),
    # -- results and errors ----------------------------------------------------------
    Row(
        "result missing",
        lambda: [{"type": "result", "id": "t"}],
        Invalid("'result'"),
        running_target=True,
    ),
    Row(
        "result NaN is stored as is",
        lambda: [{"type": "result", "id": "t", "result": math.nan}],
        State("t", Status.DONE, lambda c: is_nan(c.result)),
        running_target=True,
    ),
    Row(
        "result nested 100,000 deep",
        lambda: [{"type": "result", "id": "t", "result": deep_list(100_000)}],
        State("t", Status.DONE, lambda c: isinstance(c.result, list)),
        running_target=True,
    ),
    Row(
        "error value is an exception object",
        lambda: [{"type": "error", "id": "t", "error": OSError("disk")}],
        State("t", Status.ERROR, lambda c: isinstance(c.error, OSError)),
    ),
    Row(
        "result before the arguments are complete",
        lambda: [{"type": "result", "id": "t", "result": 1}],
        Ignored(IgnoreReason.NOT_RUNNING),
    ),
    Row(
        "delta for an unknown id", lambda: [delta("{}", "ghost")], Ignored(IgnoreReason.UNKNOWN_ID)
    ),
    Row(
        "duplicate start with another name",
        lambda: [start("t", "other")],
        Ignored(IgnoreReason.DUPLICATE_START),
    ),
    Row("ready twice", lambda: [ready()], Ignored(IgnoreReason.NOT_PENDING), running_target=True),
    # -- mapping oddities ------------------------------------------------------------
    Row(
        "a Mapping that is not a dict",
        lambda: [PlainMapping(start())],
        State("n", Status.PENDING),
    ),
    Row("a dict subclass", lambda: [DictSubclass(start())], State("n", Status.PENDING)),
    Row("a MappingProxyType", lambda: [MappingProxyType(start())], State("n", Status.PENDING)),
    Row(
        "non-string keys beside the fields",
        lambda: [{1: "x", None: "y", **start()}],
        State("n", Status.PENDING),
    ),
    Row(
        "a mapping whose __getitem__ raises KeyError",
        lambda: [MissingGetItem({})],
        Invalid(TYPE_MSG),
    ),
    Row(
        "a mapping whose __getitem__ raises RuntimeError",
        lambda: [RaisingGetItem(start())],
        Invalid("could not be read (RuntimeError"),
    ),
    Row(
        "a mapping whose __iter__ raises",
        lambda: [RaisingIter(start())],
        Invalid("could not be read (RuntimeError"),
    ),
    Row(
        "a model built with model_construct and an int id",
        lambda: [Start.model_construct(id=5, name="x")],
        Invalid("'id'"),
    ),
    Row(
        "a model built with model_construct and a bytes fragment",
        lambda: [Delta.model_construct(id="t", args_text_delta=b"{}")],
        Invalid("args_text_delta"),
    ),
    Row(
        "an End built with model_construct and a string ok",
        lambda: [End.model_construct(ok="yes")],
        Invalid("'ok'"),
    ),
    Row(
        "a Result built with model_construct and no result",
        lambda: [Result.model_construct(id="t")],
        Invalid("result"),
        running_target=True,
    ),
    # -- after the end / after close -------------------------------------------------
    Row("start after the end", lambda: [start()], AfterClose()),
    Row("delta after the end", lambda: [delta("{}")], AfterClose()),
    Row("second end", lambda: [{"type": "end"}], AfterClose()),
    Row(
        "result after the end still applies (machine)",
        lambda: [{"type": "result", "id": "by", "result": 1}],
        AfterClose(reason=None),
    ),
]

# --------------------------------------------------------------------------------------
# the runner
# --------------------------------------------------------------------------------------


class Hook:
    def __init__(self) -> None:
        self.reasons: list[IgnoreReason] = []

    def __call__(self, event: Any, reason: IgnoreReason) -> None:
        self.reasons.append(reason)


def prepare(target: ToolCallStateMachine, row: Row) -> None:
    """The bystander ``by`` (running) and the target ``t`` (pending, or running)."""
    for event in (
        start("by", "bystander"),
        delta('{"keep": [1, 2, 3]}', "by"),
        ready("by"),
        start("t", "target"),
    ):
        target.apply(event)
    if row.running_target:
        target.apply(delta('{"x": 1}'))
        target.apply(ready())


def snapshot(target: ToolCallStateMachine) -> list[ToolCall]:
    return target.list()


def apply_row(target: ToolCallStateMachine, hook: Hook, row: Row, *, closed: bool) -> None:
    """Apply the row's inputs and check its outcome (``closed``: the tracker is closed)."""
    inputs = row.inputs()
    *head, last = inputs
    for event in head:
        target.apply(event)
    before = snapshot(target)
    hook.reasons.clear()
    outcome = row.outcome

    if isinstance(outcome, Invalid):
        with pytest.raises(InvalidEvent) as info:
            target.apply(last)
        assert outcome.message in str(info.value)
        assert info.value.event is last
        assert snapshot(target) == before
        assert hook.reasons == []
    elif isinstance(outcome, Ignored):
        target.apply(last)
        assert hook.reasons == [outcome.reason]
        assert snapshot(target) == before
    elif isinstance(outcome, AfterClose):
        if closed:
            with pytest.raises(TrackerClosed):
                target.apply(last)
            assert snapshot(target) == before
        else:
            target.apply(last)
            if outcome.reason is not None:
                assert hook.reasons == [outcome.reason]
                assert snapshot(target) == before
            else:
                assert hook.reasons == []
    else:
        target.apply(last)
        call = target.get(outcome.call_id)
        assert call is not None
        if isinstance(outcome, Failed):
            assert call.status is Status.ERROR
            assert call.error.kind == outcome.kind
            if outcome.kind == "arguments_too_large":
                assert call.args_text == ""  # released
        else:
            assert call.status is outcome.status
            assert outcome.check(call)


BYSTANDER = ToolCall(
    id="by", name="bystander", args_text='{"keep": [1, 2, 3]}', args={"keep": [1, 2, 3]}
).model_copy(update={"status": Status.RUNNING})


def check_bystander(target: ToolCallStateMachine, row: Row, *, closed: bool) -> None:
    by = target.get("by")
    if isinstance(row.outcome, AfterClose) and row.outcome.reason is None and not closed:
        assert by is not None
        assert by.status is Status.DONE  # the row's own effect, allowed after the end
        return
    assert by == BYSTANDER


def params() -> list[Any]:
    out = []
    for row in CATALOGUE:
        marks = list(row.marks)
        if row.xfail:
            marks.append(pytest.mark.xfail(strict=True, reason=row.xfail))
        out.append(pytest.param(row, id=row.name, marks=marks))
    return out


def test_catalogue_is_big_enough() -> None:
    assert len(CATALOGUE) >= 40
    assert len({row.name for row in CATALOGUE}) == len(CATALOGUE)


@pytest.mark.anyio
@pytest.mark.parametrize("row", params())
async def test_hostile_input(anyio_backend: str, row: Row) -> None:
    after_close = isinstance(row.outcome, AfterClose)

    # the synchronous machine (for "after close": after the end event)
    hook = Hook()
    machine = tool_call_streaming_state_machine(on_ignored=hook)
    prepare(machine, row)
    if after_close:
        machine.apply(End(ok=True, reason="stop"))
    apply_row(machine, hook, row, closed=False)
    check_bystander(machine, row, closed=False)

    # the async tracker, with waiters on the bystander, the target and an unknown id
    with anyio.fail_after(DEADLINE):
        hook = Hook()
        tracker = ToolCallTracker(on_ignored=hook)
        prepare(tracker, row)
        outcomes: dict[str, Any] = {}

        async def wait(call_id: str) -> None:
            try:
                outcomes[call_id] = await tracker.wait_done(call_id)
            except (ToolCallFailed, UnknownToolCall, TrackerClosed) as exc:
                outcomes[call_id] = exc

        async with anyio.create_task_group() as tg:
            for call_id in ("by", "t", "ghost"):
                tg.start_soon(wait, call_id)
            await anyio.wait_all_tasks_blocked()
            if after_close:
                await tracker.aclose()
                await anyio.wait_all_tasks_blocked()
                outcomes.clear()  # closing released them all; that is checked below
            apply_row(tracker, hook, row, closed=after_close)
            check_bystander(tracker, row, closed=after_close)
            await anyio.wait_all_tasks_blocked()
            if not after_close:
                assert "by" not in outcomes  # its waiter is still waiting, undisturbed
                tracker.apply({"type": "result", "id": "by", "result": "fine"})
                await tracker.aclose()
        # every waiter returned
        if not after_close:
            assert outcomes["by"].result == "fine"
            assert set(outcomes) == {"by", "t", "ghost"}
        assert tracker.closed
