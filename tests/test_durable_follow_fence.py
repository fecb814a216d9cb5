"""Following a restored turn: a ``fence`` after ``run_end`` re-opens the turn, so a follower
started after the restore (or replaying the finished journal) shows the restore's records,
on SQLite, the in-memory journal and Redis; a plain turn's follower still stops at its
``run_end``. And a ``run_end`` whose signed state is malformed is refused by every reader.

The restore's records are written by hand with the journal's own ``take_over`` log, in the
order a restoring writer commits them (claim, start, outcome, then the result's event and
its ``run_end``), so each test controls exactly what comes after the fence.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from _ui_turn import make_runner, serve_turn, turn_events
from conftest import DEADLINE
from toolcall_tracker import Status, ToolCallTracker
from toolcall_tracker.durable import (
    DurableError,
    FollowableJournal,
    InMemoryJournal,
    JournalRecord,
    RedisJournal,
    RedisOutcomeStore,
    SQLiteJournal,
    SQLiteOutcomeStore,
    follow_ui_stream,
    restore,
)
from toolcall_tracker.durable._follow import FollowState, follow_batch
from toolcall_tracker.durable._restore import check_record
from toolcall_tracker.runner import InMemoryOutcomeStore, OutcomeStore

pytestmark = pytest.mark.anyio

OUTPUT = "deleted /tmp/report.txt"


class Backend:
    """One journal and store for the whole test (each opened once, shared by the writer,
    the restore and the followers)."""

    def __init__(self, journal: FollowableJournal, store: OutcomeStore) -> None:
        self.journal = journal
        self.store = store


@contextmanager
def _open(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Backend]:
    if kind == "sqlite":
        db = tmp_path / "turns.db"
        with SQLiteJournal(db) as journal, SQLiteOutcomeStore(db) as store:
            yield Backend(journal, store)
    elif kind == "memory":
        memory = InMemoryJournal()
        assert isinstance(memory, FollowableJournal)
        yield Backend(memory, InMemoryOutcomeStore())
    else:
        url = request.getfixturevalue("redis_url")
        prefix = request.getfixturevalue("redis_prefix")
        with (
            RedisJournal(url, prefix=prefix) as redis_journal,
            RedisOutcomeStore(url, prefix=prefix) as redis_store,
        ):
            yield Backend(redis_journal, redis_store)


@pytest.fixture(params=["sqlite", "memory", "redis"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    with _open(request.param, tmp_path, request) as opened:
        yield opened


async def at_once(tracker: ToolCallTracker) -> None:
    for event in turn_events():
        tracker.apply(event)


async def write_turn(backend: Backend) -> list[JournalRecord]:
    """The original writer: c1 and c2 finished, c3 handed out for approval (its run_end)."""
    await serve_turn(backend.journal, backend.store, "turn-1", make_runner([]), at_once)
    records = await backend.journal.read("turn-1")
    assert records[-1].kind == "run_end"
    assert records[-1].data["awaiting"] == ["c3"]
    return records


async def restore_ending_c3(backend: Backend, *, commit_fence_first: bool = False) -> None:
    """A restore that took the turn over and ended c3 (its outcome, then its result)."""
    log = await backend.journal.take_over("turn-1")
    if commit_fence_first:
        await log.commit()
    log.append("claim", {"id": "c3", "tool": "delete_file", "fenced": True})
    log.append("start", {"id": "c3"})
    log.append("outcome", {"id": "c3", "kind": "result", "result": OUTPUT, "failure": None})
    log.append_event(["R", "c3", OUTPUT])
    log.append("run_end", {"awaiting": [], "nonce": None})
    await log.commit()


async def follow_all(journal: FollowableJournal, after: int = 0) -> list[JournalRecord]:
    return [r async for r in journal.follow("turn-1", after=after, timeout=DEADLINE / 4)]


def replayed(records: list[JournalRecord]) -> FollowState:
    state = FollowState()
    for record in records:
        state.add(record)
    return state


async def test_a_replayed_restored_turn_shows_the_restores_outcome(
    anyio_backend: str, backend: Backend
) -> None:
    with anyio.fail_after(DEADLINE):
        before = await write_turn(backend)
        await restore_ending_c3(backend)
        whole = await backend.journal.read("turn-1")
        followed = await follow_all(backend.journal)
        later = await follow_all(backend.journal, after=before[-1].seq)
        parts = [p async for p in follow_ui_stream(backend.journal, "turn-1", timeout=DEADLINE)]
    fence = whole[len(before)]
    assert fence.kind == "fence"
    assert fence.data["epoch"] == 2
    # everything up to the restore's result, which ends the turn (its run_end, read in
    # the same finished state, is not yielded: the follower stops at the same record
    # however the records came in batches)
    assert followed == whole[:-1]
    assert [r.kind for r in followed[len(before) :]] == [
        "fence",
        "claim",
        "start",
        "outcome",
        "events",
    ]
    assert later == whole[len(before) : -1]
    state = replayed(followed)
    assert state.finished
    assert state.run_end is None  # the writer's run_end was forgotten at the fence
    machine = state.machine
    assert machine is not None
    c3 = machine.get("c3")
    assert c3.status is Status.DONE
    assert c3.result == OUTPUT
    whole_state = replayed(whole)
    assert whole_state.run_end == {"awaiting": [], "nonce": None}  # the restore's
    outputs = [p for p in parts if p["type"] == "tool-output-available"]
    assert [p["toolCallId"] for p in outputs] == ["c1", "c3"]
    assert outputs[-1]["output"] == OUTPUT
    assert not [p for p in parts if p["type"] == "tool-approval-request"]  # c3 ended
    assert parts[-1]["type"] == "finish"
    assert [p["type"] for p in parts].count("finish") == 1
    # restore agrees: c3 finished, nothing handed out any more
    restored = await restore(backend.journal, "turn-1")
    assert restored.handed_out is None
    assert restored.tracker.get("c3").result == OUTPUT


async def test_the_approval_requests_are_those_of_the_last_run_end(
    anyio_backend: str, backend: Backend
) -> None:
    with anyio.fail_after(DEADLINE):
        before = await write_turn(backend)
        log = await backend.journal.take_over("turn-1")
        log.append("run_end", {"awaiting": ["c3"], "nonce": "second"})
        await log.commit()
        followed = await follow_all(backend.journal)
        parts = [p async for p in follow_ui_stream(backend.journal, "turn-1", timeout=DEADLINE)]
    assert [r.kind for r in followed[len(before) :]] == ["fence", "run_end"]
    assert followed == await backend.journal.read("turn-1")
    requests = [p for p in parts if p["type"] == "tool-approval-request"]
    assert requests == [
        {"type": "tool-approval-request", "toolCallId": "c3", "approvalId": "second:c3"}
    ]
    assert parts[-1]["type"] == "finish"


async def test_a_follower_started_after_the_fence_waits_for_the_restore(
    anyio_backend: str, backend: Backend
) -> None:
    seen: list[JournalRecord] = []
    with anyio.fail_after(DEADLINE):
        await write_turn(backend)
        log = await backend.journal.take_over("turn-1")
        await log.commit()
        fenced = anyio.Event()

        async def follower() -> None:
            async for record in backend.journal.follow("turn-1", timeout=DEADLINE):
                seen.append(record)
                if record.kind == "fence":
                    fenced.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(follower)
            await fenced.wait()  # it read past the writer's run_end, and waits on
            log.append("outcome", {"id": "c3", "kind": "result", "result": OUTPUT, "failure": None})
            log.append_event(["R", "c3", OUTPUT])
            log.append("run_end", {"awaiting": [], "nonce": None})
            await log.commit()
    assert [r.kind for r in seen[-3:]] == ["fence", "outcome", "events"]
    machine = replayed(seen).machine
    assert machine is not None
    assert machine.get("c3").result == OUTPUT


async def test_a_plain_turns_follower_still_stops_at_its_run_end(
    anyio_backend: str, backend: Backend
) -> None:
    with anyio.fail_after(DEADLINE):
        before = await write_turn(backend)
        followed = await follow_all(backend.journal)
        later = await follow_all(backend.journal, after=before[-1].seq)
    assert followed == before
    assert followed[-1].kind == "run_end"
    assert later == []


def _record(seq: int, kind: str, data: Any) -> JournalRecord:
    return JournalRecord(seq, kind, data, 1)


def test_a_batch_is_replayed_whole_and_stops_at_the_record_that_finished_it() -> None:
    head = _record(1, "limits", {"limits": {}, "keep_finished": None, "format": 2})
    events = _record(
        2, "events", [["s", "c1", "t"], ["d", "c1", "{}"], ["r", "c1"], ["e", True, "tool_calls"]]
    )
    run_end = _record(3, "run_end", {"awaiting": ["c1"], "nonce": "n"})
    fence = _record(4, "fence", {"epoch": 2})
    result = _record(5, "events", [["R", "c1", 1]])
    outcome = _record(6, "outcome", {"id": "c1", "kind": "result", "result": 1, "failure": None})
    second = _record(7, "run_end", {"awaiting": [], "nonce": None})
    # a plain turn: the records after its run_end in the same batch are not yielded
    state = FollowState()
    assert follow_batch(state, [head, events, run_end, outcome], 0) == [head, events, run_end]
    assert state.finished
    # a fence re-opens: everything up to the record that finished the last state
    state = FollowState()
    got = follow_batch(state, [head, events, run_end, fence, result, outcome, second], 0)
    assert got == [head, events, run_end, fence, result]
    assert state.finished
    assert state.run_end == second.data
    # read in two batches: the same records, stopping at the same one
    state = FollowState()
    assert follow_batch(state, [head, events, run_end, fence], 1) == [events, run_end, fence]
    assert not state.finished
    assert follow_batch(state, [result, outcome, second], 1) == [result]
    assert state.finished


@pytest.mark.parametrize(
    ("state", "problem"),
    [
        ("a string", "its state is a string, not an object"),
        ([1], "its state is a list, not an object"),
        ({"nonce": "n"}, "its state is not a signed state"),
    ],
)
def test_a_run_end_with_a_malformed_state_is_refused_by_every_reader(
    state: Any, problem: str
) -> None:
    record = _record(3, "run_end", {"awaiting": ["c1"], "nonce": "n", "state": state})
    with pytest.raises(DurableError, match=r"journal record 3 \('run_end'\) is malformed") as info:
        check_record(record, 2)
    assert problem in str(info.value)
    follower = FollowState()
    follower.add(_record(1, "limits", {"limits": {}, "keep_finished": None, "format": 2}))
    with pytest.raises(DurableError, match=r"journal record 3 \('run_end'\)"):
        follower.add(record)
    check_record(_record(3, "run_end", {"awaiting": [], "nonce": None, "state": None}), 2)
    check_record(_record(3, "run_end", {"awaiting": [], "nonce": None}), 2)
