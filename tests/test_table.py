"""Every cell of the transition table, driven from tables a reader can check at a glance.

Each case builds its starting state by applying real events, applies one event, and checks
the resulting snapshot and the reason reported to the ``on_ignored`` hook. Ignored events
must change nothing. A README-style copy of the table is compared with
``reducer.TRANSITIONS`` / ``reducer.STREAM`` so editing the table breaks a test.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from toolcall_tracker import (
    Delta,
    End,
    Error,
    IgnoreReason,
    IncompleteArguments,
    InvalidArguments,
    Ready,
    Result,
    Start,
    Status,
    ToolCallStateMachine,
    reducer,
    tool_call_streaming_state_machine,
)

# --------------------------------------------------------------------------------------
# The tables, README style. Upper case: an action; lower case: the ignore reason.
# --------------------------------------------------------------------------------------

README_TRANSITIONS = """
| current | start           | delta       | ready       | result      | error       | end     |
|---------|-----------------|-------------|-------------|-------------|-------------|---------|
| none    | CREATE          | unknown_id  | unknown_id  | unknown_id  | unknown_id  | KEEP    |
| pending | duplicate_start | APPEND      | PARSE       | not_running | FAIL        | ABANDON |
| running | duplicate_start | not_pending | not_pending | FINISH      | FAIL        | KEEP    |
| done    | duplicate_start | already_finished | already_finished | already_finished | already_finished | KEEP |
| error   | duplicate_start | already_finished | already_finished | already_finished | already_finished | KEEP |
"""  # noqa: E501

README_STREAM = """
| phase | start      | delta      | ready      | result   | error    | end        |
|-------|------------|------------|------------|----------|----------|------------|
| open  | PER_CALL   | PER_CALL   | PER_CALL   | PER_CALL | PER_CALL | END_TURN   |
| ended | turn_ended | turn_ended | turn_ended | PER_CALL | PER_CALL | turn_ended |
"""

# The table exactly as issue 2 states it (five event columns, reasons not named).
ISSUE_TABLE = """
| current | start | delta | ready | result | error |
|---|---|---|---|---|---|
| (no call with that id) | new call, `pending`, `args_text` "" | ignored | ignored | ignored | ignored |
| pending | ignored | append fragment | parse `args_text`: `running` with `args`, or `error` if it is not valid JSON | ignored | `error` |
| running | ignored | ignored | ignored | `done` with `result` | `error` |
| done | ignored | ignored | ignored | ignored | ignored |
| error | ignored | ignored | ignored | ignored | ignored |
"""  # noqa: E501

KINDS = ("start", "delta", "ready", "result", "error")
STATES = ("none", "pending", "running", "done", "error")
STATE_KEY: dict[str, Status | None] = {
    "none": None,
    "pending": Status.PENDING,
    "running": Status.RUNNING,
    "done": Status.DONE,
    "error": Status.ERROR,
}


def parse_markdown(table: str) -> tuple[list[str], list[list[str]]]:
    lines = [line.strip() for line in table.strip().splitlines()]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]
    header, _rule, *body = rows
    return header, body


def cell_value(text: str) -> Any:
    if text.isupper():
        return text
    return IgnoreReason(text)


def table_as_dict(table: str) -> dict[str, dict[str, Any]]:
    header, body = parse_markdown(table)
    return {row[0]: dict(zip(header[1:], map(cell_value, row[1:]), strict=True)) for row in body}


def normalise(table: dict[Any, dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    return {
        state: {kind: step.name if not isinstance(step, IgnoreReason) else step
                for kind, step in row.items()}
        for state, row in table.items()
    }  # fmt: skip


# Rows and phases of issue 2. Rows added by later features (limits, forgetting) are theirs
# to test; every cell of these rows must match exactly.


def test_readme_table_matches_reducer_transitions() -> None:
    readme = table_as_dict(README_TRANSITIONS)
    expected = {STATE_KEY[state]: row for state, row in readme.items()}
    actual = normalise({key: reducer.TRANSITIONS[key] for key in STATE_KEY.values()})
    assert actual == expected
    # Ignore reasons must be the real enum members, not just equal strings.
    for row in reducer.TRANSITIONS.values():
        for step in row.values():
            assert isinstance(step, reducer.Action | IgnoreReason)


def test_readme_stream_table_matches_reducer_stream() -> None:
    readme = table_as_dict(README_STREAM)
    assert normalise({phase: reducer.STREAM[phase] for phase in readme}) == readme


def test_issue_table_agrees_with_transitions() -> None:
    header, body = parse_markdown(ISSUE_TABLE)
    assert header[1:] == list(KINDS)
    assert [row[0] for row in body][1:] == list(STATES[1:])
    wording = {
        "CREATE": "new call",
        "APPEND": "append fragment",
        "PARSE": "parse `args_text`",
        "FINISH": "`done` with `result`",
        "FAIL": "`error`",
    }
    for state, row in zip(STATES, body, strict=True):
        for kind, text in zip(KINDS, row[1:], strict=True):
            step = reducer.TRANSITIONS[STATE_KEY[state]][kind]
            if isinstance(step, IgnoreReason):
                assert text == "ignored", (state, kind)
            else:
                assert text.startswith(wording[step.name]), (state, kind, text)


def test_every_table_cell_is_exercised_below() -> None:
    assert set(EXPECTED) == {(s, k) for s in STATES for k in KINDS}
    assert set(EXPECTED_END) == set(STATES)


# --------------------------------------------------------------------------------------
# Building states and applying events.
# --------------------------------------------------------------------------------------

ARGS_TEXT = '{"a": 1}'


def build(state: str, *, hook: list[tuple[Any, IgnoreReason]]) -> ToolCallStateMachine:
    """A machine where call ``t1`` is in ``state`` and bystander ``b`` is pending."""

    machine = tool_call_streaming_state_machine(on_ignored=lambda e, r: hook.append((e, r)))
    machine.apply({"type": "start", "id": "b", "name": "bystander"})
    machine.apply({"type": "delta", "id": "b", "argsTextDelta": "[1"})
    if state == "none":
        return machine
    machine.apply({"type": "start", "id": "t1", "name": "search"})
    machine.apply({"type": "delta", "id": "t1", "argsTextDelta": ARGS_TEXT[:3]})
    machine.apply({"type": "delta", "id": "t1", "argsTextDelta": ARGS_TEXT[3:]})
    if state == "pending":
        return machine
    if state == "error":
        machine.apply({"type": "error", "id": "t1", "error": "first failure"})
        return machine
    machine.apply({"type": "ready", "id": "t1"})
    if state == "done":
        machine.apply({"type": "result", "id": "t1", "result": "first result"})
    return machine


EVENTS: dict[str, tuple[dict[str, Any], Any]] = {
    "start": ({"type": "start", "id": "t1", "name": "other"}, Start(id="t1", name="other")),
    "delta": (
        {"type": "delta", "id": "t1", "argsTextDelta": " "},
        Delta(id="t1", argsTextDelta=" "),
    ),
    "ready": ({"type": "ready", "id": "t1"}, Ready(id="t1")),
    "result": (
        {"type": "result", "id": "t1", "result": {"ok": True}},
        Result(id="t1", result={"ok": True}),
    ),
    "error": ({"type": "error", "id": "t1", "error": "boom"}, Error(id="t1", error="boom")),
}

PENDING = {"name": "search", "args_text": ARGS_TEXT, "args": None, "status": "pending",
           "result": None, "error": None}  # fmt: skip
RUNNING = {**PENDING, "args": {"a": 1}, "status": "running"}
DONE = {**RUNNING, "status": "done", "result": "first result"}
ERRORED = {**PENDING, "status": "error", "error": "first failure"}
BEFORE = {"none": None, "pending": PENDING, "running": RUNNING, "done": DONE, "error": ERRORED}

R = IgnoreReason
EXPECTED: dict[tuple[str, str], dict[str, Any] | IgnoreReason] = {
    ("none", "start"): {"name": "other", "args_text": "", "args": None, "status": "pending",
                        "result": None, "error": None},
    ("none", "delta"): R.UNKNOWN_ID,
    ("none", "ready"): R.UNKNOWN_ID,
    ("none", "result"): R.UNKNOWN_ID,
    ("none", "error"): R.UNKNOWN_ID,
    ("pending", "start"): R.DUPLICATE_START,
    ("pending", "delta"): {**PENDING, "args_text": ARGS_TEXT + " "},
    ("pending", "ready"): RUNNING,
    ("pending", "result"): R.NOT_RUNNING,
    ("pending", "error"): {**PENDING, "status": "error", "error": "boom"},
    ("running", "start"): R.DUPLICATE_START,
    ("running", "delta"): R.NOT_PENDING,
    ("running", "ready"): R.NOT_PENDING,
    ("running", "result"): {**RUNNING, "status": "done", "result": {"ok": True}},
    ("running", "error"): {**RUNNING, "status": "error", "error": "boom"},
    ("done", "start"): R.DUPLICATE_START,
    ("done", "delta"): R.ALREADY_FINISHED,
    ("done", "ready"): R.ALREADY_FINISHED,
    ("done", "result"): R.ALREADY_FINISHED,
    ("done", "error"): R.ALREADY_FINISHED,
    ("error", "start"): R.DUPLICATE_START,
    ("error", "delta"): R.ALREADY_FINISHED,
    ("error", "ready"): R.ALREADY_FINISHED,
    ("error", "result"): R.ALREADY_FINISHED,
    ("error", "error"): R.ALREADY_FINISHED,
}  # fmt: skip


def fields(machine: ToolCallStateMachine, call_id: str = "t1") -> dict[str, Any] | None:
    call = machine.get(call_id)
    if call is None:
        return None
    dumped = call.model_dump()
    assert dumped.pop("id") == call_id
    return dumped


def bystander_unchanged(machine: ToolCallStateMachine) -> None:
    assert fields(machine, "b") == {"name": "bystander", "args_text": "[1", "args": None,
                                    "status": "pending", "result": None, "error": None}  # fmt: skip


CELLS = [(s, k) for s in STATES for k in KINDS]


@pytest.mark.parametrize("form", [0, 1], ids=["mapping", "model"])
@pytest.mark.parametrize(("state", "kind"), CELLS, ids=[f"{s}-{k}" for s, k in CELLS])
def test_transition_cell(state: str, kind: str, form: int) -> None:
    hook: list[tuple[Any, IgnoreReason]] = []
    machine = build(state, hook=hook)
    assert hook == []
    assert fields(machine) == BEFORE[state]
    before_list = machine.list()

    event = EVENTS[kind][form]
    machine.apply(event)
    expected = EXPECTED[(state, kind)]

    if isinstance(expected, IgnoreReason):
        assert len(hook) == 1
        reported, reason = hook[0]
        assert reason is expected
        assert reported == EVENTS[kind][1]  # the hook sees the event as a model
        assert machine.list() == before_list
        assert fields(machine) == BEFORE[state]
    else:
        assert hook == []
        assert fields(machine) == expected
        assert [c.id for c in machine.list()] == ["b", "t1"]
    bystander_unchanged(machine)
    assert machine.end is None


@pytest.mark.parametrize(
    ("text", "status", "args"),
    [
        ('{"a": 1}', "running", {"a": 1}),
        ('[1, "x", null]', "running", [1, "x", None]),
        ('{"a": ', "error", None),
        ("", "error", None),
    ],
)
def test_parse_cell_both_outcomes(text: str, status: str, args: Any) -> None:
    machine = tool_call_streaming_state_machine()
    machine.apply({"type": "start", "id": "t1", "name": "search"})
    if text:
        machine.apply({"type": "delta", "id": "t1", "argsTextDelta": text})
    machine.apply({"type": "ready", "id": "t1"})
    call = machine.get("t1")
    assert call is not None
    assert call.status == status
    assert call.args == args
    assert call.args_text == text
    if status == "error":
        assert isinstance(call.error, InvalidArguments)
    else:
        assert call.error is None


# --------------------------------------------------------------------------------------
# The stream level: end, and what happens after it.
# --------------------------------------------------------------------------------------

INCOMPLETE = "incomplete"
EXPECTED_END: dict[str, dict[str, Any] | str | None] = {
    "none": None,
    "pending": INCOMPLETE,
    "running": RUNNING,
    "done": DONE,
    "error": ERRORED,
}
AFTER_END_STATE = {"none": "none", "pending": "abandoned", "running": "running",
                   "done": "done", "error": "error"}  # fmt: skip


@pytest.mark.parametrize("form", ["mapping", "model"])
@pytest.mark.parametrize("state", STATES)
def test_end_cell(state: str, form: str) -> None:
    hook: list[tuple[Any, IgnoreReason]] = []
    machine = build(state, hook=hook)
    end_event: Any = (
        {"type": "end", "ok": False, "reason": "length"}
        if form == "mapping"
        else End(ok=False, reason="length")
    )
    machine.apply(end_event)
    assert hook == []
    assert machine.end == End(ok=False, reason="length")
    expected = EXPECTED_END[state]
    if expected == INCOMPLETE:
        call = machine.get("t1")
        assert call is not None
        assert call.status == "error"
        assert call.args_text == ARGS_TEXT
        assert call.args is None
        assert isinstance(call.error, IncompleteArguments)
        assert call.error.kind == "incomplete_arguments"
        assert call.error.reason == "length"
        assert "t1" in call.error.message
        assert "length" in call.error.message
    else:
        assert fields(machine) == expected
    # The pending bystander is abandoned too.
    bystander = machine.get("b")
    assert bystander is not None
    assert bystander.status == "error"
    assert isinstance(bystander.error, IncompleteArguments)
    assert bystander.args_text == "[1"


def test_end_defaults_and_reason_none_message() -> None:
    machine = tool_call_streaming_state_machine()
    machine.apply({"type": "start", "id": "t1", "name": "search"})
    machine.apply({"type": "end"})
    assert machine.end == End(ok=True, reason=None)
    assert machine.end is not None
    assert machine.end.ok is True
    call = machine.get("t1")
    assert call is not None
    assert isinstance(call.error, IncompleteArguments)
    assert call.error.reason is None


# After the end, by the state t1 reached when the end was broadcast.
EXPECTED_AFTER_END: dict[tuple[str, str], dict[str, Any] | IgnoreReason] = {
    **{(s, k): R.TURN_ENDED for s in STATES for k in ("start", "delta", "ready")},
    ("none", "result"): R.UNKNOWN_ID,
    ("none", "error"): R.UNKNOWN_ID,
    ("pending", "result"): R.ALREADY_FINISHED,  # abandoned at the end: now error
    ("pending", "error"): R.ALREADY_FINISHED,
    ("running", "result"): {**RUNNING, "status": "done", "result": {"ok": True}},
    ("running", "error"): {**RUNNING, "status": "error", "error": "boom"},
    ("done", "result"): R.ALREADY_FINISHED,
    ("done", "error"): R.ALREADY_FINISHED,
    ("error", "result"): R.ALREADY_FINISHED,
    ("error", "error"): R.ALREADY_FINISHED,
}


@pytest.mark.parametrize("form", [0, 1], ids=["mapping", "model"])
@pytest.mark.parametrize(("state", "kind"), CELLS, ids=[f"{s}-{k}" for s, k in CELLS])
def test_stream_table_after_end(state: str, kind: str, form: int) -> None:
    hook: list[tuple[Any, IgnoreReason]] = []
    machine = build(state, hook=hook)
    machine.apply({"type": "end", "reason": "stop"})
    assert hook == []
    before_list = machine.list()
    before_t1 = fields(machine)

    machine.apply(EVENTS[kind][form])
    expected = EXPECTED_AFTER_END[(state, kind)]
    if isinstance(expected, IgnoreReason):
        assert [(e, r) for e, r in hook] == [(EVENTS[kind][1], expected)]
        assert hook[0][1] is expected
        assert machine.list() == before_list
        assert fields(machine) == before_t1
    else:
        assert hook == []
        assert fields(machine) == expected
    assert machine.end == End(ok=True, reason="stop")


def test_second_end_is_ignored_turn_ended() -> None:
    hook: list[tuple[Any, IgnoreReason]] = []
    machine = build("running", hook=hook)
    machine.apply({"type": "end", "ok": True, "reason": "stop"})
    before = machine.list()
    machine.apply({"type": "end", "ok": False, "reason": "length"})
    assert hook == [(End(ok=False, reason="length"), IgnoreReason.TURN_ENDED)]
    assert machine.end == End(ok=True, reason="stop")
    assert machine.list() == before


def test_start_after_end_does_not_create_a_call() -> None:
    hook: list[tuple[Any, IgnoreReason]] = []
    machine = tool_call_streaming_state_machine(on_ignored=lambda e, r: hook.append((e, r)))
    machine.apply(End())
    machine.apply(Start(id="late", name="x"))
    assert machine.get("late") is None
    assert machine.list() == []
    assert hook == [(Start(id="late", name="x"), IgnoreReason.TURN_ENDED)]


# --------------------------------------------------------------------------------------
# Reporting: the hook and the DEBUG log.
# --------------------------------------------------------------------------------------


def test_ignored_events_are_logged_at_debug_and_nothing_printed(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    machine = tool_call_streaming_state_machine()
    with caplog.at_level(logging.DEBUG, logger="toolcall_tracker"):
        machine.apply({"type": "delta", "id": "ghost", "argsTextDelta": "x"})
        machine.apply({"type": "start", "id": "t1", "name": "s"})
        machine.apply({"type": "start", "id": "t1", "name": "s"})
    records = [r for r in caplog.records if r.name == "toolcall_tracker"]
    assert [r.levelno for r in records] == [logging.DEBUG, logging.DEBUG]
    assert "unknown_id" in records[0].getMessage()
    assert "ghost" in records[0].getMessage()
    assert "duplicate_start" in records[1].getMessage()
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == ""


def test_applied_events_are_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    machine = tool_call_streaming_state_machine()
    with caplog.at_level(logging.DEBUG, logger="toolcall_tracker"):
        machine.apply({"type": "start", "id": "t1", "name": "s"})
        machine.apply({"type": "delta", "id": "t1", "argsTextDelta": "1"})
        machine.apply({"type": "ready", "id": "t1"})
    assert [r for r in caplog.records if r.name == "toolcall_tracker"] == []


def test_ignore_reason_vocabulary_is_small_and_fixed() -> None:
    # Later features may add reasons; these are the ones issue 2 defines.
    assert {r.value for r in IgnoreReason} >= {
        "unknown_id",
        "duplicate_start",
        "not_pending",
        "not_running",
        "already_finished",
        "unknown_type",
        "turn_ended",
        "invalid_event",
    }
    assert IgnoreReason.UNKNOWN_ID == "unknown_id"
    assert str(IgnoreReason.TURN_ENDED) == "turn_ended"


# --------------------------------------------------------------------------------------
# The table in the docs (concepts/state-machine.md) says the same as reducer.TRANSITIONS.
# --------------------------------------------------------------------------------------

README_PATH = Path(__file__).resolve().parent.parent / "docs" / "concepts" / "state-machine.md"
README_ROWS: dict[str, Any] = {
    "(no call with that id)": None,
    "`pending`": Status.PENDING,
    "`running`": Status.RUNNING,
    "`done`": Status.DONE,
    "`error`": Status.ERROR,
}
README_ACTIONS = {
    "new call, `pending`": "CREATE",
    "append fragment": "APPEND",
    "parse `args_text`": "PARSE",
    "`done` with `result`": "FINISH",
    "`error`": "FAIL",
}


def readme_transition_table() -> list[list[str]]:
    lines = README_PATH.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| current | start"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def test_readme_md_transition_table_matches_reducer() -> None:
    header, _rule, *body = readme_transition_table()
    assert header == ["current", *KINDS]
    seen = set()
    for row in body:
        label, cells = row[0], row[1:]
        if label.startswith("(forgotten"):
            key: Any = "forgotten"  # the retention feature's row
        else:
            key = README_ROWS[label]
        seen.add(key)
        for kind, text in zip(KINDS, cells, strict=True):
            step = reducer.TRANSITIONS[key][kind]
            if isinstance(step, IgnoreReason):
                assert text == f"ignored: `{step.value}`", (label, kind, text)
            else:
                wording = [w for w, name in README_ACTIONS.items() if text.startswith(w)]
                assert wording, (label, kind, text)
                assert README_ACTIONS[wording[0]] == step.name, (label, kind, text)
    assert set(README_ROWS.values()) <= seen
    assert seen == set(reducer.TRANSITIONS)  # every row of the table is documented
