"""One truth per turn in the journal: a turn id is taken atomically (a second
``DurableTurn`` of it gets ``TurnExists``), a take-over fences the writer before (its
rows are refused, its log raises ``TurnSuperseded``, its ``run`` ends with it), one
turn's failure never fails another sharing the journal, the writer's bounds are per call
and per writer, and journals written by the previous version are read, restored and
taken over.

Every async test runs on asyncio and trio, bounded by ``anyio.fail_after``; SQLite is a
real file in ``tmp_path``, Redis the real server (``redis_url``), and the tests taking
``journals`` run on the in-memory journal too.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from _backends import Durable
from _runner_helpers import call_events, from_list
from conftest import DEADLINE
from toolcall_tracker import Limits, Status, ToolCallTracker, ToolRunner, tool
from toolcall_tracker.durable import (
    JOURNAL_FORMAT,
    RECORD_KINDS,
    DurableError,
    DurableTurn,
    InMemoryJournal,
    Journal,
    JournalRecord,
    RedisJournal,
    SQLiteJournal,
    SQLiteOutcomeStore,
    TurnExists,
    TurnLog,
    TurnSuperseded,
    restore,
    resume_turn,
)
from toolcall_tracker.runner import InMemoryOutcomeStore, OutcomeStore

pytestmark = pytest.mark.anyio

MiB = 1024 * 1024


def leaves_of(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups."""
    inner = getattr(exc, "exceptions", None)
    if inner is None:
        return [exc]
    return [leaf for sub in inner for leaf in leaves_of(sub)]


class Journals:
    """Journals that all see the same turns (two objects: two processes), and a store."""

    def __init__(self, durable: Durable | None) -> None:
        self._durable = durable
        self._memory = InMemoryJournal() if durable is None else None
        self._store: OutcomeStore | None = None

    def journal(self, **options: Any) -> Journal:
        if self._memory is not None:
            return self._memory
        assert self._durable is not None
        return self._durable.journal(**options)

    def store(self) -> OutcomeStore:
        if self._durable is not None:
            return self._durable.store()
        if self._store is None:
            self._store = InMemoryOutcomeStore()
        return self._store


@pytest.fixture(params=["sqlite", "redis", "memory"])
async def journals(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Journals]:
    """SQLite, Redis (as the ``durable`` fixture) and the in-memory journal."""
    if request.param == "memory":
        yield Journals(None)
        return
    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
        made = Durable("redis", tmp_path, url, request.getfixturevalue("redis_prefix"))
    else:
        made = Durable("sqlite", tmp_path)
    yield Journals(made)
    await made.aclose()


def close(journal: Journal) -> None:
    if isinstance(journal, (SQLiteJournal, InMemoryJournal)):
        journal.close()  # a Redis journal is closed by the ``durable`` fixture


# -- atomic creation (issue 37, case 3) ----------------------------------------------------


@pytest.mark.parametrize("objects", [1, 2])
async def test_two_turns_entered_at_once_with_one_id_one_wins(
    journals: Journals, anyio_backend: str, objects: int
) -> None:
    ran: list[str] = []

    def transfer(to: str) -> str:
        ran.append(to)
        return f"sent to {to}"

    runner = ToolRunner([tool(transfer, eager=True)])
    first = journals.journal()
    pair = [first, journals.journal() if objects == 2 else first]  # two processes, or one
    store = journals.store()
    outcomes: dict[str, Any] = {}

    async def turn(journal: Journal, to: str) -> None:
        tracker = ToolCallTracker()
        items = [*call_events("ollama-call-0", "transfer", {"to": to}), {"type": "end"}]
        try:
            async with (
                DurableTurn(journal, "turn-1", tracker, store=store) as durable_turn,
                anyio.create_task_group() as tg,
            ):
                tg.start_soon(tracker.consume, from_list(items))
                outcomes[to] = await durable_turn.run(runner)
        except TurnExists as exc:
            outcomes[to] = exc

    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:  # both entered at once
            tg.start_soon(turn, pair[0], "alice")
            tg.start_soon(turn, pair[1], "bob")
        records = await first.read("turn-1")
    for journal in {id(j): j for j in pair}.values():
        close(journal)
    lost = [to for to, got in outcomes.items() if isinstance(got, TurnExists)]
    won = [to for to in outcomes if to not in lost]
    assert len(lost) == 1
    assert len(won) == 1
    assert "use a new turn id, or restore() it" in str(outcomes[lost[0]])
    assert ran == won  # the loser's tool never ran, and it got no one else's outcome
    assert [r.kind for r in records].count("limits") == 1
    assert records[0].data["format"] == JOURNAL_FORMAT
    assert all(r.epoch == 1 for r in records)


async def test_a_turn_id_is_created_once_and_a_take_over_needs_the_turn(
    journals: Journals, anyio_backend: str
) -> None:
    journal = journals.journal()
    with anyio.fail_after(DEADLINE):
        log = await journal.create("t", {"limits": {}})
        assert isinstance(log, TurnLog)
        assert (log.turn_id, log.epoch, log.superseded) == ("t", 1, False)
        with pytest.raises(TurnExists, match="'t' is already in the journal"):
            await journal.create("t", {"limits": {}})
        with pytest.raises(DurableError, match="no turn 'nobody'"):
            await journal.take_over("nobody")
        with pytest.raises(ValueError, match="cannot append a record of kind 'fence'"):
            log.append("fence", {"epoch": 9})
        with pytest.raises(ValueError, match="kind 'limits'"):
            log.append("limits", {})
        with pytest.raises(ValueError, match="kind 'events'"):
            log.append("events", [])
        assert {"claim", "start", "outcome", "runner", "run_end"} < RECORD_KINDS
    close(journal)


# -- fencing (issue 37, case 2) ------------------------------------------------------------


async def test_a_log_whose_turn_was_taken_over_is_fenced_and_other_turns_are_not(
    journals: Journals, anyio_backend: str
) -> None:
    mine = journals.journal(batch_ms=60_000)  # the stale writer: nothing written unasked
    elsewhere = journals.journal()  # the restoring process
    with anyio.fail_after(DEADLINE):
        old = await mine.create("turn-1", {"limits": {}})
        other = await mine.create("turn-2", {"limits": {}})
        old.append_event(["s", "c1", "lookup"])
        await old.commit()  # before the take-over: kept
        new = await elsewhere.take_over("turn-1")
        assert (new.epoch, old.epoch) == (2, 1)
        # one batch: the stale log's rows and another turn's
        old.append_event(["r", "c1"])
        old.append("claim", {"id": "c1", "tool": "lookup", "fenced": True})
        other.append("runner", {"n": 1})
        await other.commit()  # the other turn is written, whatever the stale log did
        with pytest.raises(TurnSuperseded, match=r"taken over by epoch 2.*no tool starts"):
            await old.commit()
        assert old.superseded
        with pytest.raises(TurnSuperseded):
            old.append_event(["r", "c1"])
        with pytest.raises(TurnSuperseded):
            old.append("runner", {})
        with pytest.raises(TurnSuperseded):
            await old.commit()
        new.append("runner", {"n": 2})
        await new.commit()
        other.append("runner", {"n": 3})
        await other.commit()
        third = await mine.take_over("turn-1")  # a take-over of a take-over
        assert third.epoch == 3
        new.append("runner", {"n": 4})
        with pytest.raises(TurnSuperseded):
            await new.commit()
        turn_1 = await elsewhere.read("turn-1")
        turn_2 = await elsewhere.read("turn-2")
    close(mine)
    close(elsewhere)
    assert [(r.kind, r.epoch) for r in turn_1] == [
        ("limits", 1),
        ("events", 1),
        ("fence", 2),
        ("runner", 2),
        ("fence", 3),
    ]
    assert [r.data for r in turn_1 if r.kind == "fence"] == [{"epoch": 2}, {"epoch": 3}]
    assert [r.data for r in turn_2 if r.kind == "runner"] == [{"n": 1}, {"n": 3}]


async def test_a_writer_whose_turn_was_restored_elsewhere_starts_no_tool(
    journals: Journals, anyio_backend: str
) -> None:
    ran: list[str] = []

    def lookup(q: str) -> str:
        ran.append(q)
        return q * 2

    runner = ToolRunner([tool(lookup, eager=True)])
    mine, elsewhere = journals.journal(), journals.journal()
    store = journals.store()
    tracker = ToolCallTracker()
    items = [*call_events("c1", "lookup", {"q": "a"}), {"type": "end"}]
    turns: list[DurableTurn] = []

    async def stale_turn() -> None:
        async with DurableTurn(mine, "turn-1", tracker, store=store) as turn:
            turns.append(turn)
            assert turn.epoch == 1
            await elsewhere.take_over("turn-1")  # the writer stalled: restored elsewhere
            async with anyio.create_task_group() as tg:
                tg.start_soon(tracker.consume, from_list(items))
                await turn.run(runner)

    with anyio.fail_after(DEADLINE):
        with pytest.raises(BaseException) as info:  # noqa: PT011 (the leaves are checked)
            await stale_turn()
        records = await elsewhere.read("turn-1")
    close(mine)
    close(elsewhere)
    leaves = leaves_of(info.value)
    assert any(isinstance(leaf, TurnSuperseded) for leaf in leaves), leaves
    assert all(isinstance(leaf, DurableError) for leaf in leaves), leaves
    assert ran == []  # fenced before its claim committed: the tool never started
    assert turns[0].log.superseded
    assert [r.kind for r in records] == ["limits", "fence"]  # nothing of the stale writer


async def test_a_superseded_runs_end_is_turn_superseded(
    journals: Journals, anyio_backend: str
) -> None:
    """The runner returns (nothing to run) after the take-over: ``run`` raises."""
    mine, elsewhere = journals.journal(), journals.journal()
    store = journals.store()
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        async with DurableTurn(mine, "turn-1", tracker, store=store) as turn:
            await elsewhere.take_over("turn-1")
            tracker.write_end(True, "stop")  # no call: the runner returns at once
            with pytest.raises(TurnSuperseded, match="taken over by epoch 2"):
                await turn.run(ToolRunner([]))  # the end's write or run_end's is refused
            assert turn.log.superseded
            with pytest.raises(TurnSuperseded):
                await turn.run(ToolRunner([]))  # seen now: raised at once
    close(mine)
    close(elsewhere)


async def test_a_restored_turn_fences_its_first_writer(
    journals: Journals, anyio_backend: str
) -> None:
    ran: list[str] = []

    def lookup(q: str) -> str:
        ran.append(q)
        return q * 2

    runner = ToolRunner([tool(lookup, eager=True)])
    mine, elsewhere = journals.journal(), journals.journal()
    store = journals.store()
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        async with DurableTurn(mine, "turn-1", tracker, store=store) as first:
            for item in call_events("c1", "lookup", {"q": "a"}):
                tracker.apply(item)
            await first.log.commit()
            calls = await resume_turn(elsewhere, "turn-1", runner, store=store)
            first.log.append("runner", {"n": 1})  # the stale writer's next record
            with pytest.raises(TurnSuperseded):
                await first.log.commit()
            with pytest.raises(TurnSuperseded):
                tracker.apply({"type": "end"})
        restored = await restore(elsewhere, "turn-1")
    close(mine)
    close(elsewhere)
    assert ran == ["a"]
    assert calls[0].status is Status.DONE
    assert restored.tracker.end is not None
    assert restored.tracker.end.reason == "interrupted"  # the restore's end, not the stale one


async def test_an_older_journal_object_is_refused_naming_the_methods(
    tmp_path: Path, anyio_backend: str
) -> None:
    class OldJournal:  # the four calls of the previous protocol
        def append_event(self, turn_id: str, item: list[Any]) -> None: ...
        def append(self, turn_id: str, kind: str, data: Any) -> None: ...
        async def commit(self) -> None: ...
        async def read(self, turn_id: str, after: int = 0) -> list[JournalRecord]:
            return []

    with pytest.raises(TypeError, match=r"no create and no take_over.*create\(turn_id, head\)"):
        DurableTurn(OldJournal(), "t", ToolCallTracker(), store=InMemoryOutcomeStore())  # type: ignore[arg-type]


# -- the writer's bounds (issue 37, case 4) ------------------------------------------------


def big_call(call_id: str, size: int, chunk: int = 64 * 1024) -> list[dict[str, Any]]:
    text = json.dumps({"blob": "x" * size})
    return [
        {"type": "start", "id": call_id, "name": "blob"},
        *(
            {"type": "delta", "id": call_id, "argsTextDelta": text[at : at + chunk]}
            for at in range(0, len(text), chunk)
        ),
        {"type": "ready", "id": call_id},
    ]


def blob_runner() -> tuple[ToolRunner, list[int]]:
    sizes: list[int] = []

    def blob(blob: str) -> int:
        sizes.append(len(blob))
        return len(blob)

    return ToolRunner([tool(blob, eager=True)]), sizes


async def run_turns(
    journal: Journal,
    store: OutcomeStore,
    runner: ToolRunner,
    streams: dict[str, list[dict[str, Any]]],
) -> dict[str, list[Any]]:
    """Each turn of ``streams`` through its own ``DurableTurn``, all at once."""
    got: dict[str, list[Any]] = {}

    async def one(turn_id: str, items: list[dict[str, Any]]) -> None:
        tracker = ToolCallTracker()
        async with (
            DurableTurn(journal, turn_id, tracker, store=store) as turn,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(tracker.consume, from_list(items))
            got[turn_id] = await turn.run(runner)

    async with anyio.create_task_group() as tg:
        for turn_id, items in streams.items():
            tg.start_soon(one, turn_id, items)
    return got


async def test_two_5_mib_argument_streams_batched_share_a_journal(
    tmp_path: Path, anyio_backend: str
) -> None:
    runner, sizes = blob_runner()
    streams = {f"turn-{n}": [*big_call("c1", 5 * MiB), {"type": "end"}] for n in range(2)}
    with (
        anyio.fail_after(6 * DEADLINE),
        SQLiteJournal(tmp_path / "j.db", batch_ms=200) as journal,
        SQLiteOutcomeStore(tmp_path / "j.db") as store,
    ):
        got = await run_turns(journal, store, runner, streams)
        restored = await restore(journal, "turn-1")
    assert sizes == [5 * MiB, 5 * MiB]
    assert [calls[0].status for calls in got.values()] == [Status.DONE, Status.DONE]
    call = restored.tracker.get("c1")
    assert call is not None
    assert call.result == 5 * MiB


async def test_two_5_mib_tool_results_at_the_default_level_share_a_journal(
    tmp_path: Path, anyio_backend: str
) -> None:
    def big(n: int) -> str:
        return "r" * (5 * MiB) + str(n)

    runner = ToolRunner([tool(big, eager=True)])
    streams = {
        f"turn-{n}": [*call_events("c1", "big", {"n": n}), {"type": "end"}] for n in range(2)
    }
    with (
        anyio.fail_after(6 * DEADLINE),
        SQLiteJournal(tmp_path / "j.db") as journal,
        SQLiteOutcomeStore(tmp_path / "j.db") as store,
    ):
        got = await run_turns(journal, store, runner, streams)
        restored = await restore(journal, "turn-0")
    assert got["turn-0"][0].result == big(0)
    assert got["turn-1"][0].result == big(1)
    call = restored.tracker.get("c1")
    assert call is not None
    assert call.result == big(0)


def apply_all(tracker: ToolCallTracker, items: list[dict[str, Any]]) -> None:
    """Apply ``items`` to ``tracker`` (until one raises)."""
    for item in items:
        tracker.apply(item)


async def test_a_turn_that_overflows_the_writer_fails_alone(
    durable: Durable, anyio_backend: str
) -> None:
    """A turn streaming more than the writer may hold fails; another turn on the same
    journal (queued behind it) runs its tool and finishes."""
    ran: list[str] = []

    def lookup(q: str) -> str:
        ran.append(q)
        return q

    runner = ToolRunner([tool(lookup, eager=True)])
    # the writer writes only when asked (batch_ms), holds 3000 characters, 1000 per call
    with (
        anyio.fail_after(DEADLINE),
        durable.journal(
            batch_ms=60_000, limits=Limits(max_args_chars=1000), max_queued=3000
        ) as journal,
    ):
        store = durable.store()
        big = ToolCallTracker()
        big_turn = DurableTurn(journal, "big", big, store=store)
        await big_turn.__aenter__()  # left with its error below
        items = [  # ten calls of 900 characters each: 9000 queued
            item for n in range(10) for item in call_events(f"c{n}", "lookup", {"q": "x" * 900})
        ]
        with pytest.raises(DurableError, match=r"max_queued \(3000\).*larger max_queued="):
            apply_all(big, items)
        assert big_turn.log.superseded is False
        small = await run_turns(
            journal,
            store,
            runner,
            {"small": [*call_events("s1", "lookup", {"q": "a"}), {"type": "end"}]},
        )
        with pytest.raises(DurableError, match="fails closed"):
            big_turn.log.append("runner", {})
        with pytest.raises(DurableError, match="fails closed"):
            await big_turn.__aexit__(None, None, None)
        records = await journal.read("small")
    assert ran == ["a"]
    assert small["small"][0].result == "a"
    assert [r.kind for r in records].count("outcome") == 1


async def test_a_call_over_its_own_bound_fails_its_turn_only(
    tmp_path: Path, anyio_backend: str
) -> None:
    with (
        anyio.fail_after(DEADLINE),
        SQLiteJournal(
            tmp_path / "j.db", batch_ms=60_000, limits=Limits(max_args_chars=100), max_queued=10_000
        ) as journal,
    ):
        one = await journal.create("one", {"limits": {}})
        two = await journal.create("two", {"limits": {}})
        for n in range(20):  # 20 calls of 90 characters: no call over its bound
            one.append_event(["d", f"c{n}", "x" * 90])
        two.append_event(["d", "c1", "y" * 60])
        with pytest.raises(DurableError, match=r"call 'c1'.*max_args_chars \(100\)"):
            two.append_event(["d", "c1", "y" * 60])  # 120 characters of one call queued
        await one.commit()
        with pytest.raises(DurableError, match="fails closed"):
            await two.commit()
        records = await journal.read("one")
        assert [r.kind for r in await journal.read("two")] == ["limits"]
    assert [r.kind for r in records] == ["limits", "events"]
    assert len(records[1].data) == 20


def test_bad_bounds_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_queued"):
        SQLiteJournal(tmp_path / "j.db", max_queued=0)
    with pytest.raises(ValueError, match="commit_timeout"):
        SQLiteJournal(tmp_path / "j.db", commit_timeout=0)
    with SQLiteJournal(tmp_path / "j.db", limits=Limits(max_args_chars=10)) as journal:
        assert journal.max_queued == 40  # 4 x max_args_chars by default


async def test_a_commit_that_gets_no_room_in_time_fails_its_turn(
    tmp_path: Path, anyio_backend: str
) -> None:
    db = tmp_path / "j.db"
    with anyio.fail_after(DEADLINE):
        journal = SQLiteJournal(db, batch_ms=60_000, busy_timeout=DEADLINE, commit_timeout=0.2)
        log = await journal.create("t", {"limits": {}})
        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")  # the write waits for this lock
        try:
            log.append("runner", {})
            with pytest.raises(DurableError, match=r"within 0\.2 s \(commit_timeout\)"):
                await log.commit()
            with pytest.raises(DurableError, match="fails closed"):
                log.append("runner", {})
        finally:
            other.execute("ROLLBACK")
            other.close()
        await journal.aclose()


# -- journals written by the previous version ---------------------------------------------

OLD_SCHEMA = """
CREATE TABLE toolcall_journal (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    turn TEXT NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX toolcall_journal_turn ON toolcall_journal (turn, seq);
"""


def old_rows() -> list[tuple[str, Any]]:
    """A cut turn as the previous version wrote it: c1 ready (an eager lookup), no end."""
    return [
        ("limits", {"limits": {"max_calls": 5}, "keep_finished": None}),
        ("events", [["s", "c1", "lookup"], ["d", "c1", '{"q": "a"}'], ["r", "c1"]]),
    ]


async def check_old_turn(journal: Journal, store: OutcomeStore) -> None:
    """An old turn reads as epoch 1, restores, cannot be created again, and is taken
    over (epoch 2) by a resume that finishes it."""
    ran: list[str] = []

    def lookup(q: str) -> str:
        ran.append(q)
        return q * 2

    records = await journal.read("old")
    assert [(r.kind, r.epoch) for r in records] == [("limits", 1), ("events", 1)]
    assert "format" not in records[0].data  # format 1
    restored = await restore(journal, "old")
    assert restored.limits.max_calls == 5
    with pytest.raises(TurnExists):
        await journal.create("old", {"limits": {}})
    calls = await resume_turn(journal, "old", ToolRunner([tool(lookup, eager=True)]), store=store)
    assert ran == ["a"]
    assert calls[0].result == "aa"
    after = await journal.read("old")
    assert [(r.kind, r.epoch) for r in after[:3]] == [("limits", 1), ("events", 1), ("fence", 2)]
    assert all(r.epoch == 2 for r in after[2:])
    assert (await journal.take_over("old")).epoch == 3


async def test_an_old_sqlite_file_is_read_restored_and_taken_over(
    tmp_path: Path, anyio_backend: str
) -> None:
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    conn.executescript(OLD_SCHEMA)
    conn.executemany(
        "INSERT INTO toolcall_journal (turn, kind, data) VALUES ('old', ?, ?)",
        [(kind, json.dumps(data)) for kind, data in old_rows()],
    )
    conn.commit()
    conn.close()
    before = SQLiteJournal.read_file(db, "old")  # read only: not upgraded
    assert [(r.kind, r.epoch) for r in before] == [("limits", 1), ("events", 1)]
    with anyio.fail_after(DEADLINE):
        with SQLiteJournal(db) as journal, SQLiteOutcomeStore(tmp_path / "s.db") as store:
            await check_old_turn(journal, store)
        with SQLiteJournal(db) as again:  # opening an upgraded file again
            assert (await again.read("old"))[-1].epoch == 3
    # a writer of the previous version still appends to the upgraded file (epoch 1)
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO toolcall_journal (turn, kind, data) VALUES ('x', 'runner', '{}')")
    conn.commit()
    conn.close()
    assert [(r.kind, r.epoch) for r in SQLiteJournal.read_file(db, "x")] == [("runner", 1)]


async def test_an_old_redis_turn_is_read_restored_and_taken_over(
    redis_url: str, redis_prefix: str, anyio_backend: str
) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        for kind, data in old_rows():  # the previous version's entries: k and d, no epoch
            client.xadd(f"{redis_prefix}turn:old", {"k": kind, "d": json.dumps(data)}, id="0-*")
    finally:
        client.close()
    assert [r.epoch for r in RedisJournal.read_url(redis_url, "old", prefix=redis_prefix)] == [1, 1]
    with anyio.fail_after(DEADLINE):
        async with (
            RedisJournal(redis_url, prefix=redis_prefix) as journal,
            SQLiteOutcomeStore(":memory:") as store,
        ):
            await check_old_turn(journal, store)


async def test_the_in_memory_journal_reads_what_it_wrote_as_json(anyio_backend: str) -> None:
    journal = InMemoryJournal()
    with anyio.fail_after(DEADLINE):
        log = await journal.create("t", {"limits": {}, "keep_finished": None})
        log.append_event(["d", "c1", "a"])
        log.append_event(["d", "c1", "b"])  # joined with the one before
        log.append_event(["R", "c1", {"x": 1}])
        log.append("runner", {"s": "\ud800"})
        assert [r.kind for r in await journal.read("t")] == ["limits"]  # not committed yet
        await log.commit()
        records = await journal.read("t")
        first = await journal.read("t")
        first[1].data.append("mutated")
    assert [(r.seq, r.kind) for r in records] == [(1, "limits"), (2, "events"), (3, "runner")]
    assert records[1].data == [["d", "c1", "ab"], ["R", "c1", {"x": 1}]]
    assert records[2].data == {"s": "\ud800"}
    assert journal.turns() == ["t"]
    assert journal.epoch("t") == 1
    assert (await journal.read("t"))[1].data == [["d", "c1", "ab"], ["R", "c1", {"x": 1}]]
