"""Round trips are exact: what a restore, a follower (``journal.follow``,
``follow_ui_stream``) and ``toolcall-tracker replay`` rebuild from a journal is what the
live turn had, on SQLite and on the real Redis server.

- A turn that forgot finished calls (``keep_finished``) to stay under ``max_calls`` is
  replayed under the same ``keep_finished``: every call comes back, none is refused as
  ``too_many_calls``.
- An application's error value comes back as the value it was, whatever its shape (a
  dict with a ``kind`` is not guessed to be a library failure); a library failure comes
  back as its class. A journal written before format 2 keeps its old meaning.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from _ui_turn import Shared, make_runner, serve_turn, shared, wire
from conftest import DEADLINE
from toolcall_tracker import Limits, Status, ToolCallTracker
from toolcall_tracker.cli import main
from toolcall_tracker.durable import (
    JournalRecord,
    SQLiteJournal,
    follow_ui_stream,
    restore,
)
from toolcall_tracker.durable._follow import FollowState
from toolcall_tracker.errors import ToolCallFailed
from toolcall_tracker.failures import CallFailure, IncompleteArguments, ToolRaised

pytestmark = pytest.mark.anyio

APP_ERROR = {"kind": "http", "status": 503, "detail": "upstream unavailable"}


@pytest.fixture(params=["sqlite", "redis"])
def servers(request: pytest.FixtureRequest, tmp_path: Path) -> Shared:
    return shared(request, tmp_path)


async def follow_all(servers: Shared, turn_id: str) -> FollowState:
    """A follower's state after following ``turn_id`` to its end (``journal.follow``)."""
    state = FollowState()
    with servers.journal() as journal:
        async for record in journal.follow(turn_id, timeout=DEADLINE):
            state.add(record)
    return state


async def followed_parts(servers: Shared, turn_id: str) -> list[dict[str, Any]]:
    with servers.journal() as journal:
        return [part async for part in follow_ui_stream(journal, turn_id, timeout=DEADLINE)]


def replay_cli(
    servers: Shared, turn_id: str, capsys: pytest.CaptureFixture[str]
) -> tuple[int, list[str]]:
    """``toolcall-tracker replay LOCATION TURN``: its exit code and printed lines."""
    capsys.readouterr()
    code = main(["replay", servers.location, turn_id, *servers.options])
    return code, capsys.readouterr().out.splitlines()


# -- keep_finished ------------------------------------------------------------------------

CALLS = 10
LIMITS = Limits(max_calls=4)
KEEP = 3  # 3 finished calls kept + the one running = max_calls: every start accepted


async def one_call_at_a_time(tracker: ToolCallTracker) -> None:
    """A model that streams 10 calls, each after the one before it finished."""
    for n in range(CALLS):
        call_id = f"c{n}"
        tracker.write_start(call_id, "lookup")
        tracker.write_delta(call_id, json.dumps({"q": f"q{n}"}))
        tracker.write_ready(call_id)
        await tracker.wait_done(call_id)
    tracker.write_end(True, "tool_calls")


async def test_followers_and_replay_use_the_turns_keep_finished(
    anyio_backend: str, servers: Shared, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[str] = []
    tracker = ToolCallTracker(limits=LIMITS, keep_finished=KEEP)
    with anyio.fail_after(DEADLINE):
        with servers.journal() as journal, servers.store() as store:
            live = await serve_turn(
                journal, store, "turn-1", make_runner(ran), one_call_at_a_time, tracker=tracker
            )
        followed = await followed_parts(servers, "turn-1")
        state = await follow_all(servers, "turn-1")
        with servers.journal() as journal:
            restored = await restore(journal, "turn-1")
        code, lines = await anyio.to_thread.run_sync(replay_cli, servers, "turn-1", capsys)

    assert len(ran) == CALLS  # the live turn ran all ten
    outputs = [p["toolCallId"] for p in live if p["type"] == "tool-output-available"]
    assert outputs == [f"c{n}" for n in range(CALLS)]
    assert wire(followed) == wire(live)  # the same ten outputs, nothing refused
    assert state.machine is not None
    assert state.machine.keep_finished == KEEP
    assert state.machine.limits == LIMITS
    assert [c.id for c in state.machine.list()] == [f"c{n}" for n in range(CALLS - KEEP, CALLS)]
    assert restored.tracker.keep_finished == KEEP
    assert code == 0
    assert f"{CALLS} calls, turn ok (tool_calls)" in lines
    listed = [line.split()[0] for line in lines if line.startswith("  c")]
    assert listed == [f"c{n}" for n in range(CALLS)]
    assert all(" lookup done: " in line for line in lines if line.startswith("  c"))


# -- error values -------------------------------------------------------------------------


async def app_and_library_errors(tracker: ToolCallTracker) -> None:
    """c1 fails in its tool (``tool_exception``), c2 awaits approval (deferred), c3 gets
    the application's own error value, c4 is cut by the end (``incomplete_arguments``)."""
    for call_id, name, args in (
        ("c1", "broken", {"q": "x"}),
        ("c2", "delete_file", {"path": "/tmp/report.txt"}),
    ):
        tracker.write_start(call_id, name)
        tracker.write_delta(call_id, json.dumps(args))
        tracker.write_ready(call_id)
    tracker.write_start("c3", "fetch")
    tracker.write_delta("c3", '{"url": "https://exa')
    tracker.write_error("c3", APP_ERROR)  # the application's, shaped like a failure
    tracker.write_start("c4", "lookup")
    tracker.write_delta("c4", '{"q": "ab')
    with pytest.raises(ToolCallFailed):
        await tracker.wait_done("c1")  # its tool raised
    tracker.write_end(False, "length")


def check_errors(calls: dict[str, Any]) -> None:
    assert isinstance(calls["c1"].error, ToolRaised)
    assert calls["c1"].error.exception == "RuntimeError"
    assert calls["c2"].status is Status.RUNNING  # awaiting its decision elsewhere
    assert calls["c3"].status is Status.ERROR
    assert type(calls["c3"].error) is dict
    assert calls["c3"].error == APP_ERROR
    assert isinstance(calls["c4"].error, IncompleteArguments)
    assert calls["c4"].error.reason == "length"


async def test_an_error_value_comes_back_as_it_was_and_a_failure_as_its_class(
    anyio_backend: str, servers: Shared, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[str] = []
    tracker = ToolCallTracker()
    with anyio.fail_after(DEADLINE):
        with servers.journal() as journal, servers.store() as store:
            live = await serve_turn(
                journal, store, "turn-1", make_runner(ran), app_and_library_errors, tracker=tracker
            )
            records = await journal.read("turn-1")
            restored = await restore(journal, "turn-1")
        followed = await followed_parts(servers, "turn-1")
        state = await follow_all(servers, "turn-1")
        code, lines = await anyio.to_thread.run_sync(replay_cli, servers, "turn-1", capsys)

    check_errors({call.id: call for call in tracker.list()})  # the live turn
    check_errors({call.id: call for call in restored.tracker.list()})
    assert state.machine is not None
    check_errors({call.id: call for call in state.machine.list()})
    assert wire(followed) == wire(live)
    errors = {p["toolCallId"]: p["errorText"] for p in followed if "errorText" in p}
    assert "503" in errors["c3"]  # the application's value, not an empty "http" failure
    assert "broken tool" in errors["c1"]
    assert code == 1  # calls failed
    c3 = next(line for line in lines if line.startswith("  c3 "))
    assert "503" in c3
    assert "upstream unavailable" in c3

    # how: the journal tags the library failure, not the application's value
    events = [item for r in records if r.kind == "events" for item in r.data]
    assert ["E", "c3", APP_ERROR] in events  # the application's value, untagged
    tagged = {item[1]: item[2]["kind"] for item in events if item[0] == "F"}
    assert tagged == {"c1": "tool_exception"}  # a library failure, tagged
    assert [item[0] for item in events if item[1] == "c4"] == ["s", "d"]  # the end abandons it
    assert records[0].data["format"] == 2


def old_format_journal(path: Path, head: dict[str, Any], items: list[Any]) -> None:
    """A journal file written by hand: its head record, then one events record."""
    SQLiteJournal(path).close()  # the table
    with sqlite3.connect(path) as conn:
        rows = [("turn-1", "limits", json.dumps(head)), ("turn-1", "events", json.dumps(items))]
        conn.executemany("INSERT INTO toolcall_journal (turn, kind, data) VALUES (?, ?, ?)", rows)
    conn.close()


FAILURE = {"kind": "tool_exception", "message": "boom", "tool": "t", "exception": "ValueError"}
EVENTS = [
    ["s", "c1", "t"],
    ["d", "c1", "{}"],
    ["r", "c1"],
    ["E", "c1", FAILURE],
    ["s", "c2", "t"],
    ["E", "c2", APP_ERROR],
    ["e", True, None],
]


@pytest.mark.parametrize("head", [{"limits": {}}, {"limits": {}, "format": 1}])
async def test_a_format_1_journal_keeps_its_meaning(
    anyio_backend: str, tmp_path: Path, head: dict[str, Any]
) -> None:
    """Before format 2 every error was ``E``, and a failure was read by its shape: a
    journal written then still restores its failures as their classes."""
    db = tmp_path / "old.db"
    old_format_journal(db, {**head, "keep_finished": None}, EVENTS)
    with anyio.fail_after(DEADLINE):
        with SQLiteJournal(db) as journal:
            restored = await restore(journal, "turn-1")
            state = FollowState()
            async for record in journal.follow("turn-1", timeout=DEADLINE):
                state.add(record)
    assert state.machine is not None
    for calls in (restored.tracker, state.machine):
        c1, c2 = calls.get("c1"), calls.get("c2")
        assert c1 is not None
        assert c2 is not None
        assert isinstance(c1.error, ToolRaised)
        assert c1.error.message == "boom"
        assert type(c2.error) is CallFailure  # what format 1 meant by that shape
        assert c2.error.kind == "http"
    assert state.journal_format == 1


async def test_format_2_restores_an_e_event_as_its_value_and_an_f_event_as_its_class(
    anyio_backend: str, tmp_path: Path
) -> None:
    db = tmp_path / "new.db"
    items = [["F" if item[:2] == ["E", "c1"] else item[0], *item[1:]] for item in EVENTS]
    old_format_journal(db, {"limits": {}, "keep_finished": None, "format": 2}, items)
    with anyio.fail_after(DEADLINE):
        with SQLiteJournal(db) as journal:
            restored = await restore(journal, "turn-1")
    c1, c2 = restored.tracker.get("c1"), restored.tracker.get("c2")
    assert c1 is not None
    assert c2 is not None
    assert isinstance(c1.error, ToolRaised)
    assert c2.error == APP_ERROR
    assert type(c2.error) is dict
    record = JournalRecord(3, "events", [["E", "c3", FAILURE]])
    state = FollowState()
    state.add(JournalRecord(1, "limits", {"limits": {}, "format": 2}))
    state.add(JournalRecord(2, "events", [["s", "c3", "t"]]))
    state.add(record)
    assert state.machine is not None
    c3 = state.machine.get("c3")
    assert c3 is not None
    assert c3.error == FAILURE  # format 2: an E event is never a failure


def test_a_failure_is_journaled_with_f_and_any_other_error_with_e() -> None:
    """The recorder's rule, on its own: a ``CallFailure`` instance is ``F``; anything else,
    a dict shaped like one included, is ``E``."""
    from toolcall_tracker.durable._journal import _Recorder

    class Appended:
        def __init__(self) -> None:
            self.items: list[list[Any]] = []

        def append_event(self, item: list[Any]) -> None:
            self.items.append(item)

    sink = Appended()
    tracker = ToolCallTracker()
    tracker.subscribe(_Recorder(sink, tracker))  # type: ignore[arg-type]
    failure = ToolRaised(tool="t", exception="ValueError", message="boom")
    for call_id, error in (("a", failure), ("b", APP_ERROR), ("c", "text"), ("d", None)):
        tracker.write_start(call_id, "t")
        tracker.write_error(call_id, error)
    errors = [item for item in sink.items if item[0] in ("E", "F")]
    assert errors == [
        ["F", "a", failure.model_dump(mode="json")],
        ["E", "b", APP_ERROR],
        ["E", "c", "text"],
        ["E", "d", None],
    ]
