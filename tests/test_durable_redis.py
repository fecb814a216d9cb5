"""Durable turns on Redis: following a turn from another process, two servers resuming one
approval state, expiry and trimming, a stalled writer bounded by ``Limits`` (on SQLite
too), and every Redis failure a :class:`DurableError` that fails the turn closed.

Every test uses a real ``redis-server`` (the ``redis_url`` fixture under the test's own
key prefix, or a private :class:`RedisServer` for the tests that pause or lose one); every
async test runs on asyncio and trio, bounded by ``anyio.fail_after``.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import AsyncIterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis
from anyio.streams.buffered import BufferedByteReceiveStream

from _redis import RedisServer, free_port
from _runner_helpers import call_events
from conftest import DEADLINE, need_redis_server
from test_durable_store import Ledger, pending_transfer, race_resumes, save_state
from toolcall_tracker import Limits, Status, ToolCallTracker, ToolRunner, tool
from toolcall_tracker.durable import (
    DurableError,
    DurableTurn,
    JournalRecord,
    RedisJournal,
    RedisOutcomeStore,
    SQLiteJournal,
    TurnLog,
    restore,
)
from toolcall_tracker.failures import ClaimFailed
from toolcall_tracker.runner import CallOutcome

pytestmark = pytest.mark.anyio

CHILD = str(Path(__file__).with_name("_redis_child.py"))
LATER = datetime.now(timezone.utc) + timedelta(days=1)
SLOW = 4 * DEADLINE  # a test that starts Python processes (imports take seconds under load)


def three_calls() -> list[dict[str, Any]]:
    return [
        *call_events("a", "lookup", {"q": "one"}),
        *call_events("b", "lookup", {"q": "two"}),
        *call_events("c", "lookup", {"q": "three"}),
        {"type": "end"},
    ]


def lookup_runner() -> ToolRunner:
    async def lookup(q: str) -> str:
        return q.upper()

    return ToolRunner([tool(lookup, eager=True)])


async def lines_of(stream: BufferedByteReceiveStream) -> AsyncIterator[str]:
    """The lines of a child's output until it closes it."""
    while True:
        try:
            yield (await stream.receive_until(b"\n", 1 << 20)).decode()
        except (anyio.EndOfStream, anyio.IncompleteRead):
            return


# -- following ------------------------------------------------------------------------------


async def test_a_follower_in_another_process_sees_every_event_and_stops_at_the_end(
    redis_url: str, redis_prefix: str, anyio_backend: str
) -> None:
    items = three_calls()
    send, receive = anyio.create_memory_object_stream[dict[str, Any]](len(items))
    tracker = ToolCallTracker()
    seen: list[list[Any]] = []

    async def source() -> AsyncIterator[dict[str, Any]]:
        async with receive:
            async for item in receive:
                yield item

    args = [CHILD, "follow", redis_url, redis_prefix, "turn-1", "0", anyio_backend]
    with anyio.fail_after(SLOW):
        async with (
            RedisJournal(redis_url, prefix=redis_prefix) as journal,
            RedisOutcomeStore(redis_url, prefix=redis_prefix) as store,
        ):
            async with (
                DurableTurn(journal, "turn-1", tracker, store=store) as turn,
                anyio.create_task_group() as tg,
                await anyio.open_process([sys.executable, *args]) as child,
            ):
                assert child.stdout is not None
                lines = lines_of(BufferedByteReceiveStream(child.stdout))
                tg.start_soon(tracker.consume, source())
                tg.start_soon(turn.run, lookup_runner())
                for item in items[:3]:  # the first call starts ...
                    await send.send(item)
                seen.append(json.loads(await anext(lines)))  # ... the follower is attached
                async with send:
                    for item in items[3:]:  # ... and the rest of the turn happens now
                        await send.send(item)
                async for line in lines:
                    seen.append(json.loads(line))
                assert await child.wait() == 0  # it stopped by itself: the turn finished
            records = await journal.read("turn-1")
    finishing = max(r.seq for r in records if r.kind == "events")  # the last result
    assert seen == [[r.seq, r.kind, r.data] for r in records if r.seq <= finishing]
    assert seen[0][1] == "limits"
    events = [item for _, kind, data in seen if kind == "events" for item in data]
    assert [e[0] for e in events].count("R") == 3
    assert [e[0] for e in events].count("e") == 1
    assert {c.id: c.result for c in tracker.list()} == {"a": "ONE", "b": "TWO", "c": "THREE"}


async def test_a_follower_attached_before_the_turn_starts_gets_all_of_it(
    redis_url: str, redis_prefix: str, anyio_backend: str
) -> None:
    got: list[JournalRecord] = []
    tracker = ToolCallTracker()
    with anyio.fail_after(DEADLINE):
        async with (
            RedisJournal(redis_url, prefix=redis_prefix) as journal,
            RedisJournal(redis_url, prefix=redis_prefix) as reader,  # another server's
            RedisOutcomeStore(redis_url, prefix=redis_prefix) as store,
        ):

            async def follow() -> None:
                async for record in reader.follow("turn-1", timeout=DEADLINE):
                    got.append(record)

            async with anyio.create_task_group() as tg:
                tg.start_soon(follow)
                await anyio.wait_all_tasks_blocked()
                async with (
                    DurableTurn(journal, "turn-1", tracker, store=store) as turn,
                    anyio.create_task_group() as inner,
                ):
                    inner.start_soon(tracker.consume, _from(three_calls()))
                    await turn.run(lookup_runner())
            records = await journal.read("turn-1")
            late = [r async for r in reader.follow("turn-1", after=2, timeout=DEADLINE)]
    assert got == [r for r in records if r.seq <= got[-1].seq]
    assert got[-1].kind == "events"
    assert late == [r for r in got if r.seq > 2]  # the same records, after position 2
    assert late[0].seq == 3
    assert RedisJournal.read_url(redis_url, "turn-1", 2, prefix=redis_prefix) == records[2:]


async def test_a_follow_that_outlasts_its_timeout_is_a_durable_error(
    redis_url: str, redis_prefix: str, anyio_backend: str
) -> None:
    with anyio.fail_after(DEADLINE):
        async with RedisJournal(redis_url, prefix=redis_prefix) as journal:
            log = await journal.create("open", {"limits": {}})
            log.append_event(["s", "c1", "lookup"])  # never ends
            await log.commit()
            got: list[JournalRecord] = []

            async def follow() -> None:
                async for record in journal.follow("open", timeout=0.2):
                    got.append(record)

            with pytest.raises(DurableError, match=r"did not finish within 0\.2 s"):
                await follow()
    assert [r.kind for r in got] == ["limits", "events"]


async def test_a_cancelled_follower_stops_and_leaves_the_journal_usable(
    redis_url: str, redis_prefix: str, anyio_backend: str
) -> None:
    got: list[JournalRecord] = []
    with anyio.fail_after(DEADLINE):
        async with RedisJournal(redis_url, prefix=redis_prefix) as journal:
            log = await journal.create("open", {"limits": {}})

            first = anyio.Event()

            async def follow() -> None:
                async for record in journal.follow("open"):  # the turn never ends
                    got.append(record)
                    first.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(follow)
                await first.wait()
                await anyio.wait_all_tasks_blocked()  # blocked in XREAD BLOCK now
                tg.cancel_scope.cancel()
            log.append("runner", {"n": 1})
            await log.commit()
            records = await journal.read("open")  # the same connections: no stray reply
    assert [r.kind for r in got] == ["limits"]
    assert [(r.seq, r.kind) for r in records] == [(1, "limits"), (2, "runner")]


async def _from(items: list[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    for item in items:
        yield item


async def test_any_turn_id_and_key_has_its_own_stream_and_outcome(
    redis_url: str, redis_prefix: str, anyio_backend: str
) -> None:
    ids = ["plain", "é😀", "\ud800", "\udc00", "a:b turn"]
    with anyio.fail_after(DEADLINE):
        async with (
            RedisJournal(redis_url, prefix=redis_prefix) as journal,
            RedisOutcomeStore(redis_url, prefix=redis_prefix) as store,
        ):
            for n, turn_id in enumerate(ids):
                log = await journal.create(turn_id, {"n": n})
                log.append("runner", {"n": n, "id": turn_id})
                assert (await store.claim(turn_id, expires_at=LATER)).won
                await store.record(turn_id, CallOutcome.of(turn_id, None))
            await journal.commit()
            for n, turn_id in enumerate(ids):
                records = await journal.read(turn_id)
                assert [(r.seq, r.epoch, r.data) for r in records] == [
                    (1, 1, {"n": n, "format": 2}),
                    (2, 1, {"n": n, "id": turn_id}),
                ]
                outcome = await store.get(turn_id)
                assert outcome is not None
                assert outcome.result == turn_id.replace("\ud800", "\ufffd").replace(
                    "\udc00", "\ufffd"
                )  # the output rule
    assert RedisJournal.read_url(redis_url, "\ud800", prefix=redis_prefix)[0].data["n"] == 2


# -- approvals across servers ----------------------------------------------------------------


async def test_two_servers_resume_the_same_approval_state_at_once(
    redis_url: str, redis_prefix: str, anyio_backend: str
) -> None:
    ledger = Ledger()
    results: dict[str, Any] = {}
    with anyio.fail_after(DEADLINE):
        async with (
            RedisOutcomeStore(redis_url, prefix=redis_prefix, owner="a", poll=0.01) as a,
            RedisOutcomeStore(redis_url, prefix=redis_prefix, owner="b", poll=0.01) as b,
        ):
            pending = await pending_transfer(ledger.runner(a))  # request 1, on server a
            decision = pending.approve("c1")

            async def request_2(name: str, store: RedisOutcomeStore) -> None:
                results[name] = await ledger.runner(store).resume(pending, [decision])

            async with anyio.create_task_group() as tg:  # the same request, twice at once
                tg.start_soon(request_2, "a", a)
                tg.start_soon(request_2, "b", b)
    assert ledger.ran == [("bob", 5)]  # exactly one server ran the tool
    for calls in results.values():
        assert calls[0].status is Status.DONE
        assert calls[0].result == "sent 5 to bob"  # the other returned the recorded outcome


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_two_processes_resume_the_same_approval_state_on_redis(
    tmp_path: Path, redis_url: str, redis_prefix: str, backend: str
) -> None:
    side, state = tmp_path / "side.txt", tmp_path / "state.json"

    async def prepare() -> None:
        async with RedisOutcomeStore(redis_url, prefix=redis_prefix) as store:
            save_state(state, await pending_transfer(Ledger().runner(store)))

    anyio.run(prepare, backend=backend)
    args = [CHILD, "resume", redis_url, redis_prefix, str(state), str(side), backend]
    race_resumes([sys.executable, *args], side)


# -- expiry and trimming ---------------------------------------------------------------------


async def test_streams_and_outcomes_expire(
    redis_url: str, redis_prefix: str, anyio_backend: str
) -> None:
    client = redis.Redis.from_url(redis_url)
    try:
        with anyio.fail_after(DEADLINE):
            async with (
                RedisJournal(redis_url, prefix=redis_prefix, ttl=3600) as journal,
                RedisOutcomeStore(redis_url, prefix=redis_prefix, ttl=600) as store,
            ):
                log = await journal.create("t", {"limits": {}})
                log.append("runner", {})
                await log.commit()
                two_hours = datetime.now(timezone.utc) + timedelta(hours=2)
                assert (await store.claim("claimed", expires_at=two_hours)).won
                await store.record("unclaimed", CallOutcome.of(1, None))
        stream_ttl = client.pttl(journal.key("t"))
        epoch_ttl = client.pttl(journal.epoch_key("t"))
        claimed_ttl = client.pttl(f"{redis_prefix}outcome:claimed")
        unclaimed_ttl = client.pttl(f"{redis_prefix}outcome:unclaimed")
    finally:
        client.close()
    assert 3_590_000 < stream_ttl <= 3_600_000
    assert 3_590_000 < epoch_ttl <= 3_600_000  # the turn's epoch lives as long
    assert 7_190_000 < claimed_ttl <= 7_200_000  # the claim's own expires_at
    assert 590_000 < unclaimed_ttl <= 600_000  # the store's ttl


def test_a_journal_that_forgets_before_the_keys_expire_is_refused(
    redis_url: str, redis_prefix: str
) -> None:
    with (
        RedisJournal(redis_url, prefix=redis_prefix, ttl=3600) as journal,
        RedisOutcomeStore(redis_url, prefix=redis_prefix) as store,
    ):
        with pytest.raises(ValueError, match=r"ttl >= key_ttl \(RedisJournal\(ttl=\.\.\.\)\)"):
            DurableTurn(journal, "t", ToolCallTracker(), store=store, key_ttl=timedelta(hours=2))
        DurableTurn(journal, "t", ToolCallTracker(), store=store, key_ttl=timedelta(hours=1))


async def test_maxlen_trims_a_stream_and_a_trimmed_turn_cannot_be_restored(
    redis_url: str, redis_prefix: str, anyio_backend: str
) -> None:
    with anyio.fail_after(DEADLINE):
        async with RedisJournal(redis_url, prefix=redis_prefix, maxlen=10) as journal:
            log = await journal.create("t", {"limits": {}})
            for n in range(300):
                log.append("runner", {"n": n})
            await log.commit()
            records = await journal.read("t")
            with pytest.raises(DurableError, match="no turn 't'"):
                await restore(journal, "t")
    assert 10 <= len(records) < 301  # trimmed to about 10 (whole nodes of the stream)
    assert records[-1].seq == 301
    assert [r.seq for r in records] == list(range(302 - len(records), 302))


# -- failures ------------------------------------------------------------------------------


async def test_an_unreachable_server_fails_the_turn_closed(anyio_backend: str) -> None:
    url = f"redis://user:hunter2@127.0.0.1:{free_port()}/0"  # nobody listens there
    tracker = ToolCallTracker()
    with anyio.fail_after(DEADLINE):
        async with RedisJournal(url) as journal, RedisOutcomeStore(url) as store:
            with pytest.raises(DurableError, match="creating a turn in the journal fail") as info:
                await journal.create("t", {"limits": {}})
            assert "127.0.0.1" in str(info.value)
            assert "hunter2" not in str(info.value)  # the password is never shown
            assert isinstance(info.value.__cause__, redis.ConnectionError)
            with pytest.raises(DurableError, match="creating a turn in the journal failed"):
                async with DurableTurn(journal, "t", tracker, store=store):
                    pass  # pragma: no cover
            with pytest.raises(DurableError, match="taking a turn over in the journal fail"):
                await journal.take_over("t")
            with pytest.raises(DurableError, match="claiming a call failed on the Redis"):
                await store.claim("k", expires_at=LATER)
            with pytest.raises(DurableError, match="reading the journal failed"):
                await journal.read("t")
            ledger = Ledger()
            calls = await ledger.runner(store).resume(*await _approved(ledger))
    assert ledger.ran == []
    assert isinstance(calls[0].error, ClaimFailed)  # nothing ran; a later resume may run it


async def _approved(ledger: Ledger) -> tuple[Any, list[Any]]:
    """A pending transfer (decided in memory) and its approval, for another store."""
    from toolcall_tracker.runner import InMemoryOutcomeStore

    pending = await pending_transfer(ledger.runner(InMemoryOutcomeStore()))
    return pending, [pending.approve("c1")]


def test_a_bad_url_or_setting_is_refused() -> None:
    with pytest.raises(ValueError, match=r"redis://host:port/db"):
        RedisJournal("http://localhost/0")
    with pytest.raises(ValueError, match=r"unix:///path/to/redis\.sock"):
        RedisOutcomeStore("sqlite:///x.db")
    with pytest.raises(ValueError, match="ttl"):
        RedisJournal("redis://localhost/0", ttl=0)
    with pytest.raises(ValueError, match="maxlen"):
        RedisJournal("redis://localhost/0", maxlen=0)
    with pytest.raises(ValueError, match="lease"):
        RedisOutcomeStore("redis://localhost/0", lease=-1)


def test_without_redis_py_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # import redis raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'toolcall-tracker\[redis\]'"):
        RedisJournal("redis://localhost/0")


# -- a writer that falls behind --------------------------------------------------------------


def overflow(log: TurnLog) -> int:
    """Append 10-character deltas of one call until the log refuses one (naming the
    call's limit and the fix); how many it took."""
    taken = [0]

    def fill() -> None:
        for n in range(10_000):
            taken[0] = n
            log.append_event(["d", "c1", "0123456789"])

    with pytest.raises(
        DurableError, match=r"max_args_chars \(1000\).*limits=Limits\(max_args_chars=\.\.\.\)"
    ):
        fill()
    return taken[0]


async def test_a_stalled_sqlite_writer_fails_the_journal_at_its_limit(
    tmp_path: Path, anyio_backend: str
) -> None:
    db = tmp_path / "j.db"
    with anyio.fail_after(DEADLINE):
        journal = SQLiteJournal(db, busy_timeout=DEADLINE, limits=Limits(max_args_chars=1000))
        log = await journal.create("t", {"limits": {}})
        healthy = await journal.create("u", {"limits": {}})
        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")  # the writer's next write waits for this lock
        try:
            taken = overflow(log)
            with pytest.raises(DurableError, match="fails closed"):
                log.append("runner", {})
            healthy.append_event(["d", "c2", "0123456789"])  # another turn: unaffected
            healthy.append("runner", {})
        finally:
            other.execute("ROLLBACK")
            other.close()
        await journal.aclose()
    # each delta counts 12 characters against its call: 83 fit in 1000; the stalled writer
    # holds at most one batch it took before it stalled (at most as many again)
    assert 83 <= taken <= 167
    rows = SQLiteJournal.read_file(db, "t")
    assert len(rows) <= 2  # the limits, and the one batch the writer held
    assert [r.kind for r in SQLiteJournal.read_file(db, "u")] == ["limits", "events", "runner"]


async def test_a_stalled_redis_writer_fails_the_journal_at_its_limit(anyio_backend: str) -> None:
    need_redis_server()
    with RedisServer() as server, anyio.fail_after(DEADLINE):
        journal = RedisJournal(server.url, limits=Limits(max_args_chars=1000))
        log = await journal.create("t", {"limits": {}})
        admin = redis.Redis.from_url(server.url)
        admin.execute_command("CLIENT", "PAUSE", int(DEADLINE * 1000), "WRITE")
        try:
            taken = overflow(log)
            with pytest.raises(DurableError, match="fails closed"):
                await log.commit()
        finally:
            admin.execute_command("CLIENT", "UNPAUSE")
            admin.close()
        await journal.aclose()
        rows = RedisJournal.read_url(server.url, "t")
    assert 83 <= taken <= 167
    assert len(rows) <= 2
