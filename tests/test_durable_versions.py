"""Readers fail closed: a journal this version cannot read is a :class:`DurableError`
naming the version (a newer format, record kind, stream event tag or ``Limits`` field) or
the record (malformed data), from ``restore``, ``FollowState``, ``journal.follow``,
``follow_ui_stream`` and ``toolcall-tracker replay`` (one line, exit code 2); never
another exception, never a skip. A ``fence`` record is read and changes no call.

The journals are SQLite files written by hand (rows inserted with ``sqlite3``), and a
test's keys on the real Redis server; the last test feeds random mutations of a real
journal's records to the readers (hypothesis).
"""

from __future__ import annotations

import functools
import io
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _json_values import JSON_VALUES
from _ui_turn import Shared, make_runner, serve_turn
from conftest import DEADLINE
from toolcall_tracker import ToolCallTracker
from toolcall_tracker.adapters.ai_sdk import AISDKListener
from toolcall_tracker.changes import ChangeListener
from toolcall_tracker.cli import main
from toolcall_tracker.cli._journal import _show
from toolcall_tracker.durable import (
    DurableError,
    JournalRecord,
    RedisJournal,
    SQLiteJournal,
    follow_ui_stream,
    restore,
)
from toolcall_tracker.durable._follow import FollowState
from toolcall_tracker.machine import ToolCallStateMachine

HEAD: dict[str, Any] = {"limits": {}, "keep_finished": None, "format": 2}
CALL = [["s", "c1", "lookup"], ["d", "c1", '{"q": "a"}'], ["r", "c1"]]
END = [["R", "c1", "A"], ["e", True, "stop"]]


def newer(journal_format: int) -> str:
    return (
        r"written by a newer version of toolcall-tracker "
        rf"\(journal format {journal_format}; this version reads up to 2\)"
    )


def write_journal(path: Path, rows: list[tuple[str, Any]]) -> None:
    """A journal file holding turn ``turn-1``'s ``rows`` (kind, JSON data), by hand."""
    SQLiteJournal(path).close()  # the table
    conn = sqlite3.connect(path)
    with conn:
        conn.executemany(
            "INSERT INTO toolcall_journal (turn, kind, data) VALUES ('turn-1', ?, ?)",
            [(kind, json.dumps(data)) for kind, data in rows],
        )
    conn.close()


# (the turn's rows, what the error says)
UNREADABLE: dict[str, tuple[list[tuple[str, Any]], str]] = {
    "a newer format": ([("limits", {**HEAD, "format": 3}), ("events", CALL)], newer(3)),
    "an unknown record kind": (
        [("limits", HEAD), ("events", CALL), ("lease", {"id": "c1"}), ("events", END)],
        r"journal record 3 has the kind 'lease', unknown here: " + newer(2),
    ),
    "an unknown record kind in a format 1 journal": (
        [("limits", {"limits": {}}), ("events", CALL), ("lease", {"id": "c1"})],
        r"journal record 3 has the kind 'lease', unknown here: " + newer(1),
    ),
    "an unknown event tag": (
        [("limits", HEAD), ("events", [*CALL, ["P", "c1", 0.5]])],
        r"journal record 2 \('events'\): event 3: a stream event 'P' .*" + newer(2),
    ),
    "an unknown Limits field": (
        [("limits", {**HEAD, "limits": {"max_calls": 4, "max_tool_seconds": 9}}), ("events", CALL)],
        r"journal record 1 \('limits'\): Limits field 'max_tool_seconds' unknown here: " + newer(2),
    ),
    # malformed: the record's position and kind
    "claim data not an object": (
        [("limits", HEAD), ("events", CALL), ("claim", "c1")],
        r"journal record 3 \('claim'\) is malformed: its data is a string, not an object",
    ),
    "events data not a list": (
        [("limits", HEAD), ("events", {"s": "c1"})],
        r"journal record 2 \('events'\) is malformed: its data is an object",
    ),
    "an event too short": (
        [("limits", HEAD), ("events", [["s", "c1"]])],
        r"journal record 2 \('events'\): event 0: the 's' event \['s', 'c1'\] has not its shape",
    ),
    "an event of the wrong types": (
        [("limits", HEAD), ("events", [*CALL, ["R", 7, "A"]])],
        r"journal record 2 \('events'\): event 3: the 'R' event",
    ),
    "an event the machine refuses": (
        [("limits", HEAD), ("events", [["s", "", "lookup"]])],
        r"journal record 2 \('events'\): event 0: invalid 'start' event",
    ),
    "an outcome of no known kind": (
        [("limits", HEAD), ("events", CALL), ("outcome", {"id": "c1", "kind": "maybe"})],
        r"journal record 3 \('outcome'\) is malformed",
    ),
    "a run_end without its awaiting list": (
        [("limits", HEAD), ("events", CALL), ("run_end", {"awaiting": "c1", "nonce": None})],
        r"journal record 3 \('run_end'\) is malformed: its awaiting",
    ),
    "a fence with no epoch": (
        [("limits", HEAD), ("fence", {"epoch": 0})],
        r"journal record 2 \('fence'\) is malformed: epoch 0",
    ),
    "a second head": (
        [("limits", HEAD), ("limits", HEAD)],
        r"journal record 2 \('limits'\) is malformed: a second limits record",
    ),
    "a bad limit": (
        [("limits", {**HEAD, "limits": {"max_calls": -1}})],
        r"journal record 1 \('limits'\): Limits.max_calls must be a non-negative int",
    ),
    "a bad keep_finished": (
        [("limits", {**HEAD, "keep_finished": "all"})],
        r"journal record 1 \('limits'\): keep_finished 'all' is not null or a number",
    ),
    "a bad format": (
        [("limits", {**HEAD, "format": "2"})],
        r"journal record 1 \('limits'\): the format '2' is not a number >= 1",
    ),
}


@pytest.fixture(params=sorted(UNREADABLE))
def unreadable(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str]:
    rows, message = UNREADABLE[request.param]
    db = tmp_path / "turns.db"
    write_journal(db, rows)
    return db, message


async def drain(records: Any) -> None:
    """Read an async iterator to its end."""
    async for _ in records:
        pass


def replay_all(records: list[JournalRecord]) -> FollowState:
    state = FollowState()
    for record in records:
        state.add(record)
    return state


@pytest.mark.anyio
async def test_restore_and_every_follower_refuse_a_journal_they_cannot_read(
    anyio_backend: str, unreadable: tuple[Path, str]
) -> None:
    db, message = unreadable
    with anyio.fail_after(DEADLINE), SQLiteJournal(db) as journal:
        with pytest.raises(DurableError, match=message):
            await restore(journal, "turn-1")
        records = await journal.read("turn-1")
        with pytest.raises(DurableError, match=message):
            replay_all(records)
        with pytest.raises(DurableError, match=message):
            await drain(journal.follow("turn-1", timeout=DEADLINE))
        with pytest.raises(DurableError, match=message):
            await drain(follow_ui_stream(journal, "turn-1", timeout=DEADLINE))


@pytest.mark.parametrize("options", [[], ["--json"], ["--follow", "--timeout", "5"]])
def test_replay_prints_one_line_and_exits_2_on_a_journal_it_cannot_read(
    unreadable: tuple[Path, str], options: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    db, message = unreadable
    assert main(["replay", f"sqlite:///{db}", "turn-1", *options]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("toolcall-tracker: error: journal record ")
    assert "Traceback" not in err
    assert re.search(message, err), (message, err)


def test_replay_of_a_record_that_is_not_json_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "turns.db"
    write_journal(db, [("limits", HEAD)])
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO toolcall_journal (turn, kind, data) VALUES ('turn-1', 'x', '{')")
    conn.close()
    assert main(["replay", f"sqlite:///{db}", "turn-1"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("toolcall-tracker: error: ")


@pytest.mark.anyio
async def test_restore_of_a_record_that_is_not_json_is_a_durable_error(
    tmp_path: Path, anyio_backend: str
) -> None:
    db = tmp_path / "turns.db"
    write_journal(db, [("limits", HEAD)])
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO toolcall_journal (turn, kind, data) VALUES ('turn-1', 'claim', '{')"
        )
    conn.close()
    with anyio.fail_after(DEADLINE):
        async with SQLiteJournal(db) as journal:
            with pytest.raises(DurableError, match=r"journal record 2 \('claim'\) is not JSON"):
                await restore(journal, "turn-1")


@pytest.mark.anyio
async def test_a_redis_entry_without_its_fields_is_a_durable_error(
    anyio_backend: str, redis_url: str, redis_prefix: str
) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        key = f"{redis_prefix}turn:turn-1"
        client.xadd(key, {"k": "limits", "d": json.dumps(HEAD)}, id="0-*")  # type: ignore[arg-type]
        client.xadd(key, {"x": "y"}, id="0-*")  # type: ignore[arg-type]
    finally:
        client.close()
    with anyio.fail_after(DEADLINE):
        async with RedisJournal(redis_url, prefix=redis_prefix) as journal:
            with pytest.raises(DurableError, match="malformed"):
                await restore(journal, "turn-1")


@pytest.mark.anyio
async def test_a_fence_is_read_and_changes_no_call(
    anyio_backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "turns.db"
    write_journal(
        db, [("limits", HEAD), ("events", CALL), ("fence", {"epoch": 2}), ("events", END)]
    )
    with anyio.fail_after(DEADLINE), SQLiteJournal(db) as journal:
        restored = await restore(journal, "turn-1")
        followed = [record async for record in journal.follow("turn-1", timeout=DEADLINE)]
    call = restored.tracker.get("c1")
    assert call is not None
    assert call.result == "A"
    assert not restored.cut
    assert restored.records == 4
    assert [record.kind for record in followed] == ["limits", "events", "fence", "events"]
    code = await anyio.to_thread.run_sync(main, ["replay", f"sqlite:///{db}", "turn-1"])
    assert code == 0
    assert '[3] fence {"epoch":2}' in capsys.readouterr().out


@pytest.mark.anyio
async def test_a_redis_journal_of_a_newer_version_is_refused(
    anyio_backend: str, redis_url: str, redis_prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with anyio.fail_after(DEADLINE):
        import redis

        client = redis.Redis.from_url(redis_url)  # records written by hand, as on SQLite
        try:
            for turn, kind, data in (
                ("turn-1", "limits", HEAD),
                ("turn-1", "events", list(CALL)),
                ("turn-1", "lease", {"id": "c1", "until": 5}),
                ("turn-2", "limits", HEAD),
                ("turn-2", "claim", ["c1"]),
            ):
                fields = {"k": kind, "d": json.dumps(data)}
                client.xadd(f"{redis_prefix}turn:{turn}", fields, id="0-*")  # type: ignore[arg-type]
        finally:
            client.close()
        with RedisJournal(redis_url, prefix=redis_prefix) as journal:
            for turn, message in (("turn-1", newer(2)), ("turn-2", r"\('claim'\) is malformed")):
                with pytest.raises(DurableError, match=message):
                    await restore(journal, turn)
                with pytest.raises(DurableError, match=message):
                    await drain(journal.follow(turn, timeout=DEADLINE))
                with pytest.raises(DurableError, match=message):
                    await drain(follow_ui_stream(journal, turn, timeout=DEADLINE))
        for options in ([], ["--follow", "--timeout", "5"]):
            command = ["replay", redis_url, "turn-1", "--prefix", redis_prefix, *options]
            assert await anyio.to_thread.run_sync(main, command) == 2
            err = capsys.readouterr().err
            assert len(err.splitlines()) == 1, err
            assert "newer version" in err


# -- hostile records: random mutations of a real journal -------------------------------


@functools.cache
def real_records() -> tuple[JournalRecord, ...]:
    """The records of a real turn: a result, a tool's failure, an application's error
    value, a call cut by the end, a deferred approval, claims, outcomes and run_end."""

    async def model(tracker: ToolCallTracker) -> None:
        for call_id, name, args in (
            ("c1", "lookup", '{"q": "a"}'),
            ("c2", "broken", '{"q": "b"}'),
            ("c3", "delete_file", '{"path": "/x"}'),
        ):
            tracker.write_start(call_id, name)
            tracker.write_delta(call_id, args)
            tracker.write_ready(call_id)
        tracker.write_start("c4", "fetch")
        tracker.write_error("c4", {"kind": "http", "status": 503})
        tracker.write_start("c5", "lookup")
        tracker.write_delta("c5", '{"q')
        tracker.write_end(False, "length")

    async def go(path: Path) -> tuple[JournalRecord, ...]:
        shared = Shared(path, None)
        with shared.journal() as journal, shared.store() as store:
            await serve_turn(journal, store, "turn-1", make_runner([]), model)
            return tuple(await journal.read("turn-1"))

    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return anyio.run(go, Path(tmp))


class Records:
    """A journal that reads a fixed list of records (restore reads nothing else)."""

    def __init__(self, records: list[JournalRecord]) -> None:
        self.records = records

    async def read(self, turn_id: str, after: int = 0) -> list[JournalRecord]:
        return [record for record in self.records if record.seq > after]


KNOWN = ["limits", "events", "claim", "start", "outcome", "runner", "run_end", "fence"]
ODD_KINDS = st.sampled_from(KNOWN) | st.sampled_from(["lease", "", "LIMITS", "Events"])


@st.composite
def mutated(draw: st.DrawFn) -> list[JournalRecord]:
    records = list(real_records())
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(records) - 1))
        seq, kind, data = records[at][:3]
        data = json.loads(json.dumps(data))  # a copy
        how = draw(st.sampled_from(["data", "kind", "drop", "dup", "item", "key", "limits"]))
        if how == "data":
            data = draw(JSON_VALUES)
        elif how == "kind":
            kind = draw(ODD_KINDS)
        elif how == "drop" and len(records) > 1:
            del records[at]
            continue
        elif how == "dup":
            records.insert(at, JournalRecord(seq, kind, data))
            continue
        elif how == "item" and isinstance(data, list) and data:
            index = draw(st.integers(0, len(data) - 1))
            item = data[index]
            if isinstance(item, list) and item and draw(st.booleans()):
                item = item[: draw(st.integers(0, len(item)))]  # cut short, or emptied
                if item and draw(st.booleans()):
                    item[draw(st.integers(0, len(item) - 1))] = draw(JSON_VALUES)
                data[index] = item
            else:
                data[index] = draw(JSON_VALUES)
        elif how == "key" and isinstance(data, dict):
            key = draw(st.sampled_from([*data, "x"]))
            if key in data and draw(st.booleans()):
                del data[key]
            else:
                data[key] = draw(JSON_VALUES)
        elif how == "limits" and isinstance(data, dict) and isinstance(data.get("limits"), dict):
            limits = data["limits"]
            key = draw(st.sampled_from([*limits, "max_tool_seconds"]))
            limits[key] = draw(JSON_VALUES | st.integers(-2, 3))
        records[at] = JournalRecord(seq, kind, data)
    return records


READ: dict[str, int] = {"restored": 0, "refused": 0}  # how the examples went


def only_durable_errors(records: list[JournalRecord]) -> None:
    """Restore and follow ``records`` (with the AI SDK listener, and what ``replay``
    prints): each reads them or raises :class:`DurableError`, nothing else."""
    try:
        anyio.run(restore, Records(records), "turn-1")  # type: ignore[arg-type]
        READ["restored"] += 1
    except DurableError:
        READ["refused"] += 1
    parts: list[dict[str, Any]] = []

    def listen(machine: ToolCallStateMachine) -> ChangeListener:
        return AISDKListener(machine, on_part=parts.append)

    state = FollowState(listen)
    out = io.StringIO()
    try:
        for record in records:
            state.add(record)
            _show(record, state.machine, out, False)  # what replay prints of it
            _show(record, state.machine, out, True)
    except DurableError:
        pass


def test_the_real_journal_reads_back() -> None:
    records = list(real_records())
    assert {"limits", "events", "claim", "start", "outcome", "runner", "run_end"} <= {
        record.kind for record in records
    }
    only_durable_errors(records)
    restored = anyio.run(restore, Records(records), "turn-1")  # type: ignore[arg-type]
    assert restored.tracker.get("c4").error == {"kind": "http", "status": 503}  # type: ignore[union-attr]


@settings(max_examples=300, deadline=None)
@given(mutated())
def test_a_mutated_journal_reads_back_or_raises_durable_error(records: list[JournalRecord]) -> None:
    only_durable_errors(records)
