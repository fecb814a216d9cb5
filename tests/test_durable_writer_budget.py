"""The journal writer's budget: an overflow fails the turn that filled the queue (the
log holding the most), never the others; a quiet turn's commit is not held up by another
turn's stream; an append racing its log's refusal counts nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from _runner_helpers import call_events, from_list
from conftest import DEADLINE
from toolcall_tracker import Limits, Status, ToolCallTracker, ToolRunner, tool
from toolcall_tracker.durable import DurableError, DurableTurn, SQLiteJournal, SQLiteOutcomeStore
from toolcall_tracker.durable._writer import ENTRY_OVERHEAD, Row

pytestmark = pytest.mark.anyio

LIMITS = Limits(max_args_chars=1000)


def big_items() -> list[dict[str, Any]]:
    """Four calls of 980 characters of arguments each (each under its own bound)."""
    return [
        item
        for n in range(4)
        for item in call_events(f"c{n}", "lookup", {"q": "x" * (980 - len('{"q": ""}'))})
    ]


def apply_all(tracker: ToolCallTracker, items: list[dict[str, Any]]) -> None:
    for item in items:
        tracker.apply(item)


async def measure(path: Path) -> int:
    """What the big turn's stream counts in the queue (on a journal with room for it)."""
    with (
        SQLiteJournal(path, batch_ms=60_000, limits=LIMITS, max_queued=10**9) as journal,
        SQLiteOutcomeStore(path) as store,
    ):
        tracker = ToolCallTracker()
        turn = DurableTurn(journal, "big", tracker, store=store)
        await turn.__aenter__()
        apply_all(tracker, big_items())
        return journal._writer.backlog


async def test_the_turn_that_filled_the_queue_fails_not_the_next_one(
    tmp_path: Path, anyio_backend: str
) -> None:
    """Turn A queues four calls of 980 characters (just under max_queued); turn B's
    first, small event would overflow: A (holding the most) fails, B runs its tool."""
    ran: list[str] = []

    def lookup(q: str) -> str:
        ran.append(q)
        return q

    runner = ToolRunner([tool(lookup, eager=True)])
    with anyio.fail_after(DEADLINE):
        held = await measure(tmp_path / "measure.db")
        assert held > 3 * 980
        db = tmp_path / "j.db"
        with (
            SQLiteJournal(db, batch_ms=60_000, limits=LIMITS, max_queued=held + 5) as journal,
            SQLiteOutcomeStore(db) as store,
        ):
            big = ToolCallTracker()
            big_turn = DurableTurn(journal, "big", big, store=store)
            await big_turn.__aenter__()
            apply_all(big, big_items())  # nothing over: A is healthy so far
            assert not big_turn.log.failed
            small = ToolCallTracker()
            async with (
                DurableTurn(journal, "small", small, store=store) as small_turn,
                anyio.create_task_group() as tg,
            ):
                tg.start_soon(
                    small.consume,
                    from_list([*call_events("s1", "lookup", {"q": "a"}), {"type": "end"}]),
                )
                calls = await small_turn.run(runner)
            assert big_turn.log.failed
            assert not small_turn.log.failed
            with pytest.raises(
                DurableError, match=r"turn 'big' holding the most.*larger max_queued="
            ):
                big_turn.log.append("runner", {})
            with pytest.raises(DurableError, match="fails closed"):
                await big_turn.__aexit__(None, None, None)
            records = await journal.read("small")
            assert journal._writer.backlog == 0
    assert ran == ["a"]
    assert [c.status for c in calls] == [Status.DONE]
    assert calls[0].result == "a"
    assert [r.kind for r in records].count("outcome") == 1


async def test_another_log_holding_the_most_is_dropped_and_the_entry_taken(
    tmp_path: Path, anyio_backend: str
) -> None:
    with (
        anyio.fail_after(DEADLINE),
        SQLiteJournal(
            tmp_path / "j.db", batch_ms=60_000, limits=LIMITS, max_queued=4000
        ) as journal,
    ):
        one = await journal.create("one", {"limits": {}})
        two = await journal.create("two", {"limits": {}})
        for n in range(4):  # 4 x 998 (text, call id, overhead) = 3992 queued
            one.append_event(["d", f"c{n}", "x" * 980])
        assert journal._writer.backlog == 4 * (ENTRY_OVERHEAD + 2 + 980)
        two.append_event(["s", "t1", "lookup"])  # 24 more: over; "one" holds the most
        assert one.failed
        assert not two.failed
        assert journal._writer.backlog == ENTRY_OVERHEAD + len("t1lookup")
        await two.commit()
        assert journal._writer.backlog == 0
        with pytest.raises(DurableError, match=r"max_queued \(4000\), turn 'one' holding"):
            one.append_event(["d", "c9", "x"])
        with pytest.raises(DurableError, match="fails closed"):
            await one.commit()
        assert [r.kind for r in await journal.read("one")] == ["limits"]
        written = await journal.read("two")
    assert [r.kind for r in written] == ["limits", "events"]
    assert written[1].data == [["s", "t1", "lookup"]]


async def test_an_appender_holding_the_most_fails_alone(tmp_path: Path, anyio_backend: str) -> None:
    with (
        anyio.fail_after(DEADLINE),
        SQLiteJournal(
            tmp_path / "j.db", batch_ms=60_000, limits=LIMITS, max_queued=4000
        ) as journal,
    ):
        one = await journal.create("one", {"limits": {}})
        two = await journal.create("two", {"limits": {}})
        two.append_event(["d", "t1", "y" * 500])
        for n in range(3):  # 2994 queued by "one", 518 by "two"
            one.append_event(["d", f"c{n}", "x" * 980])
        with pytest.raises(DurableError, match=r"max_queued \(4000\), turn 'one' holding"):
            one.append_event(["d", "c3", "x" * 980])  # "one" would hold 3992
        assert one.failed
        assert not two.failed
        assert journal._writer.backlog == ENTRY_OVERHEAD + 2 + 500
        two.append("runner", {"n": 1})
        await two.commit()
        assert journal._writer.backlog == 0
        with pytest.raises(DurableError, match="fails closed"):
            await one.commit()
        written = await journal.read("two")
    assert [r.kind for r in written] == ["limits", "events", "runner"]


@pytest.mark.parametrize("how", ["event", "record"])
async def test_an_append_racing_its_logs_refusal_counts_nothing(
    tmp_path: Path, anyio_backend: str, how: str
) -> None:
    """The writer thread refuses a log between its append's check and the put: the put
    raises and queues nothing, so the backlog returns to 0 after a flush."""
    with (
        anyio.fail_after(DEADLINE),
        SQLiteJournal(
            tmp_path / "j.db", batch_ms=60_000, limits=LIMITS, max_queued=4000
        ) as journal,
    ):
        writer = journal._writer
        log = await journal.create("one", {"limits": {}})
        other = await journal.create("two", {"limits": {}})
        log.append_event(["d", "c1", "abc"])
        other.append_event(["d", "c1", "def"])
        log.refuse(DurableError("refused by the writer thread"))  # after the log's check

        def put() -> None:
            if how == "event":
                writer.put_event(log, ["d", "c1", "ghi"], ENTRY_OVERHEAD + 3, "c1")
            else:
                writer.put_record(log, "runner", "{}", ENTRY_OVERHEAD + 2)

        with pytest.raises(DurableError, match="refused by the writer thread"):
            put()
        assert writer.backlog == ENTRY_OVERHEAD + 2 + 3  # the other log's event only
        await other.commit()
        assert writer.backlog == 0
        assert [r.kind for r in await journal.read("one")] == ["limits"]
        assert [r.kind for r in await journal.read("two")] == ["limits", "events"]


async def test_a_quiet_turns_commit_does_not_wait_for_another_turns_stream(
    tmp_path: Path, anyio_backend: str
) -> None:
    """While a quiet turn's records are written another turn streams more than half the
    budget: the quiet commit returns after its own write; a commit of the streaming turn
    waits for room (writes again)."""
    with (
        anyio.fail_after(DEADLINE),
        SQLiteJournal(
            tmp_path / "j.db", batch_ms=60_000, limits=LIMITS, max_queued=4000
        ) as journal,
    ):
        writer = journal._writer
        quiet = await journal.create("quiet", {"limits": {}})
        loud = await journal.create("loud", {"limits": {}})
        write = writer._write
        writes: list[int] = []

        def stream_meanwhile(rows: list[Row]) -> Any:
            refused = write(rows)
            if len(writes) in (0, 1):  # the first write of each commit: "loud" streams on
                for n in range(3):
                    loud.append_event(["d", f"c{len(writes)}-{n}", "x" * 900])
            writes.append(len(rows))
            return refused

        writer._write = stream_meanwhile
        quiet.append("runner", {})
        await quiet.commit()
        assert writes == [1]  # one write: the quiet turn did not wait for room
        assert writer.backlog == 3 * (ENTRY_OVERHEAD + 4 + 900)  # over half of 4000
        await loud.commit()  # writes, "loud" streams 2748 more, so it waits: writes again
        assert writes == [1, 1, 1]
        assert writer.backlog == 0
        assert not quiet.failed
        assert not loud.failed
