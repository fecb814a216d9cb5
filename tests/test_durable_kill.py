"""kill -9: a journaled turn killed with SIGKILL at seeded random points, then restored and
finished in another process; the journal and the outcome store in an SQLite file, or on a
real Redis server (the ``redis_url`` fixture; each case has its own key prefix).

The child (``tests/_durable_child.py turn``) pauses at every kill point (each stream item,
each tool before and after its side effect, after each claim, before each record, after
each approval) and tells the parent through its stdout pipe; the parent either lets it go
on or kills it right there, so the kill points are exact, with no timing involved. Tools
append to a side file each time they really run.

After the kill, ``finish`` restores the turn in a new process and finishes it. Checked:
nothing recorded is lost, no non-idempotent tool runs twice, calls that ran without a
recorded outcome are reported in doubt (or re-run, if idempotent), and a turn cut before
its end never runs its gated tools.

``TOOLCALL_KILL_POINTS`` (default 50) sets the number of kill points per storage and
backend: the first 36 are every point of one run in turn, the others drawn from seeds
starting at ``TOOLCALL_KILL_SEED`` (default: random); every seed and point is printed.

The other way round, the Redis server itself is killed with SIGKILL mid-turn (a private
one: AOF, ``appendfsync always``): the turn must stop with :class:`DurableError` and
start no tool after it; after the server's restart, ``finish`` completes the turn from
what the server had acknowledged, with the same checks.
"""

from __future__ import annotations

import json
import os
import random
import select
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import DEADLINE
from toolcall_tracker import RunControl, ToolCallTracker
from toolcall_tracker.durable import DurableError, DurableTurn, JournalRecord, SQLiteJournal
from toolcall_tracker.failures import ClaimFailed

CHILD = str(Path(__file__).with_name("_durable_child.py"))
POINTS = int(os.environ.get("TOOLCALL_KILL_POINTS", "50"))
FIRST_SEED = int(os.environ.get("TOOLCALL_KILL_SEED", str(random.randrange(1 << 30))))
MARKERS = 34  # kill points of one full run (the child's turn); later picks let it finish
IDEMPOTENT = {"lookup"}
GATED = {"transfer", "notify"}
TOOL_OF = {"c1": "lookup", "c2": "charge", "c3": "transfer", "c4": "notify"}
WAIT = 60.0  # seconds the parent waits for a child's next line before failing


def read_line(child: subprocess.Popen[str]) -> str:
    assert child.stdout is not None
    ready, _, _ = select.select([child.stdout], [], [], WAIT)
    assert ready, "the child said nothing for a minute"
    return child.stdout.readline()


class Storage:
    """Where one case's journal and outcome store are: an SQLite file, or a Redis URL with
    the case's own key prefix."""

    def __init__(self, location: str, prefix: str = "") -> None:
        self.location = location
        self.prefix = prefix

    def args(self, mode: str, side: Path, backend: str) -> list[str]:
        """The child's command line in ``mode``."""
        return [sys.executable, CHILD, mode, self.location, str(side), backend, self.prefix]

    def records(self) -> list[JournalRecord]:
        """The turn's committed records (none if nothing was ever written)."""
        if not self.prefix:
            path = Path(self.location)
            return SQLiteJournal.read_file(path, "turn-1") if path.exists() else []
        from toolcall_tracker.durable import RedisJournal

        return RedisJournal.read_url(self.location, "turn-1", prefix=self.prefix)


async def read_redis(url: str, prefix: str) -> list[JournalRecord]:
    """The committed records of ``turn-1`` on Redis, under ``prefix``."""
    from toolcall_tracker.durable import RedisJournal

    async with RedisJournal(url, prefix=prefix) as journal:
        return await journal.read("turn-1")


def run_until(storage: Storage, side: Path, backend: str, kill_at: int) -> str | None:
    """Run the turn; SIGKILL it at its ``kill_at``-th kill point. The point, or ``None``
    if the turn finished first."""
    child = subprocess.Popen(
        storage.args("turn", side, backend),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None
    try:
        seen = 0
        while True:
            line = read_line(child)
            if not line.startswith("M "):
                assert line == "E done\n", line
                assert child.wait(WAIT) == 0
                return None
            if seen == kill_at:
                child.kill()  # SIGKILL, at this exact point
                child.wait(WAIT)
                return line[2:].strip()
            seen += 1
            child.stdin.write("go\n")
            child.stdin.flush()
    finally:
        if child.poll() is None:  # pragma: no cover (a failed assertion above)
            child.kill()
            child.wait(WAIT)
        child.stdin.close()
        assert child.stdout is not None
        child.stdout.close()


def finish(storage: Storage, side: Path, backend: str) -> dict[str, Any]:
    done = subprocess.run(
        storage.args("finish", side, backend),
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def recorded_before(records: list[JournalRecord]) -> dict[str, Any]:
    """What the killed process had committed: each call's outcome (by id), and whether
    the stream's end was journaled."""
    outcomes: dict[str, Any] = {}
    ended = False
    for record in records:
        if record.kind == "outcome":
            outcomes[record.data["id"]] = record.data
        elif record.kind == "events":
            for item in record.data:
                if item[0] == "e":
                    ended = True
                elif item[0] in "RE":
                    outcomes.setdefault(item[1], {"event": item})
    return {"outcomes": outcomes, "ended": ended}


def check(point: str | None, before: dict[str, Any], report: dict[str, Any], side: Path) -> None:
    runs = (
        Counter(line.split()[0] for line in side.read_text().splitlines())
        if side.exists()
        else Counter()
    )
    calls = {call["id"]: call for call in report["calls"]}
    # every call ends, and the ends agree with what really ran
    for call_id, name in TOOL_OF.items():
        call = calls.get(call_id)
        if call is None:
            continue  # the stream was cut before this call started
        assert call["status"] in ("done", "error"), (point, call)
        if name not in IDEMPOTENT:
            assert runs[name] <= 1, (point, name, runs)  # never twice
        if call["status"] == "done":
            assert runs[name] >= 1, (point, call)  # a result means it really ran
        elif call["error"]["kind"] == "in_doubt":
            assert name not in IDEMPOTENT, (point, call)
            assert call_id in report["claimed"], (point, call, report["claimed"])
        if runs[name] == 1 and name not in IDEMPOTENT:  # it ran: it is done or in doubt
            assert call["status"] == "done" or call["error"]["kind"] == "in_doubt", (
                point,
                call,
            )
    # nothing recorded is lost
    for call_id, data in before["outcomes"].items():
        call = calls[call_id]
        if "kind" in data:
            if data["kind"] == "result":
                assert call["status"] == "done", (point, call, data)
                assert call["result"] == data["result"], (point, call, data)
            else:
                assert call["error"]["kind"] == data["failure"]["kind"], (point, call, data)
        else:
            assert call["status"] == ("done" if data["event"][0] == "R" else "error")
    # a cut turn never runs its gated tools
    if not before["ended"]:
        assert report["cut"], point
        for name in GATED:
            assert runs[name] == 0, (point, runs)
        for call_id in ("c3", "c4"):
            if call_id in calls:
                kind = calls[call_id]["error"]["kind"]
                assert kind in ("not_executed", "incomplete_arguments"), (point, calls[call_id])


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("where", ["sqlite", "redis"])
def test_kill_9_at_seeded_points_then_restore_elsewhere(
    tmp_path: Path, backend: str, where: str, request: pytest.FixtureRequest
) -> None:
    if where == "redis":
        url, prefix = request.getfixturevalue("redis_url"), request.getfixturevalue("redis_prefix")
    points: Counter[str] = Counter()
    for number in range(POINTS):
        seed = FIRST_SEED + number
        # every kill point once (in the child's usual order), then seeded random ones
        kill_at = number if number < MARKERS + 2 else random.Random(seed).randrange(MARKERS + 2)
        case = tmp_path / f"{backend}-{seed}"
        case.mkdir()
        side = case / "side.txt"
        if where == "redis":
            storage = Storage(url, f"{prefix}{backend}-{seed}:")
        else:
            storage = Storage(str(case / "j.db"))
        point = run_until(storage, side, backend, kill_at)
        print(f"kill -9 {where} {backend} seed {seed}: point {kill_at} ({point or 'finished'})")
        records = storage.records()
        if not records:
            continue  # killed before the turn's first record: nothing to restore
        report = finish(storage, side, backend)
        check(point, recorded_before(records), report, side)
        points[(point or "finished").split()[0]] += 1
    print(f"kill -9 {where} {backend}: {POINTS} points from seed {FIRST_SEED}: {dict(points)}")


def leaves_of(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups."""
    inner = getattr(exc, "exceptions", None)
    if inner is None:
        return [exc]
    return [leaf for sub in inner for leaf in leaves_of(sub)]


def ran(side: Path) -> list[str]:
    return side.read_text().splitlines() if side.exists() else []


@pytest.mark.anyio
@pytest.mark.parametrize("moment", ["mid-stream", "awaiting approval"])
async def test_redis_killed_mid_turn_fails_closed_and_a_restore_after_restart_completes_it(
    tmp_path: Path, anyio_backend: str, moment: str, request: pytest.FixtureRequest
) -> None:
    """A private Redis server (AOF, ``appendfsync always``) is killed with SIGKILL mid-turn:
    the turn stops with DurableError and no tool starts after it; once the server is back
    (same port and data), another process restores the turn and finishes it, with every
    record committed before the kill still there and no tool run twice."""
    request.getfixturevalue("redis_url")  # redis-py, and the skip-or-fail policy
    from _durable_child import turn_runner, turn_stream
    from _redis import RedisServer, redis_server_binary
    from toolcall_tracker.durable import RedisJournal, RedisOutcomeStore

    if redis_server_binary() is None:
        if os.environ.get("TOOLCALL_TRACKER_REQUIRE_REDIS"):
            pytest.fail("no redis-server to kill and restart, and Redis is required")
        pytest.skip("no Redis: no redis-server binary to kill and restart")
    side, prefix = tmp_path / "side.txt", "restart:"
    (tmp_path / "redis").mkdir()
    server = RedisServer(tmp_path / "redis")
    await anyio.to_thread.run_sync(server.start)
    journal = RedisJournal(server.url, prefix=prefix)
    store = RedisOutcomeStore(server.url, lease=0.3, prefix=prefix)
    tracker, runner, control = ToolCallTracker(), turn_runner(str(side), marked=False), RunControl()
    stream = turn_stream()
    cut_at = 5 if moment == "mid-stream" else len(stream)  # c1 whole, then c2's start
    seen: dict[str, Any] = {}

    async def kill_server() -> None:
        """Everything so far committed and read back; then SIGKILL the server."""
        await journal.commit()
        seen["before"] = await journal.read("turn-1")
        await anyio.to_thread.run_sync(server.kill)
        seen["ran"] = ran(side)

    async def items() -> AsyncIterator[dict[str, Any]]:
        for item in stream[:cut_at]:
            yield item
        if moment == "mid-stream":
            await tracker.wait_done("c1")
            await kill_server()
            for item in stream[cut_at:]:
                yield item

    async def approve_after_kill() -> None:
        async for pending in control.approval_requests():  # c3's, once the turn ended
            for call_id in ("c1", "c2", "c4"):
                await tracker.wait_done(call_id)
            await kill_server()
            control.approve(pending.call_id)  # its claim cannot commit: it must not run
            return

    async def turn() -> None:
        async with (
            DurableTurn(journal, "turn-1", tracker, store=store) as durable,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(tracker.consume, items())
            if moment == "awaiting approval":
                tg.start_soon(approve_after_kill)
            await runner.run(tracker, control=control, start_guard=durable.guard(runner))
            tg.cancel_scope.cancel()

    try:
        with anyio.fail_after(DEADLINE * 3):
            async with journal, store:
                with pytest.raises(Exception) as caught:  # noqa: PT011 (checked below)
                    await turn()
            # fails closed: a clear error, and no tool started after the kill
            leaves = leaves_of(caught.value)
            assert leaves
            assert all(isinstance(leaf, DurableError) for leaf in leaves), leaves
            assert "fails closed" in str(leaves[0])
            assert "on the Redis server" in str(leaves[0])
            stopped = tracker.get("c2" if moment == "mid-stream" else "c3")
            assert stopped is not None
            assert stopped.error is not None
            if moment == "mid-stream":
                # The writer learns of the dead server only when it next writes, so it is a
                # race which comes first: the stream's next item is refused (c2 never
                # ready) or c2 gets ready and its claim cannot be journaled. Either way its
                # tool never starts (checked by the side file below).
                if isinstance(stopped.error, ClaimFailed):
                    assert stopped.error.exception == "DurableError", stopped.error
                else:
                    assert stopped.error.kind == "incomplete_arguments", stopped.error
            else:  # the approved call's claim could not be journaled
                assert isinstance(stopped.error, ClaimFailed), stopped.error
                assert stopped.error.exception == "DurableError"
            assert ran(side) == seen["ran"]
            assert not any(line.startswith("transfer") for line in ran(side))
            # back on the same port and data: whatever was committed is still there
            await anyio.to_thread.run_sync(server.restart)
            after = await read_redis(server.url, prefix)
            assert after[: len(seen["before"])] == seen["before"]
            # another process restores the turn and finishes it
            storage = Storage(server.url, prefix)
            report = await anyio.to_thread.run_sync(finish, storage, side, anyio_backend)
    finally:
        await anyio.to_thread.run_sync(server.stop)
    check(moment, recorded_before(after), report, side)
    runs = Counter(line.split()[0] for line in ran(side))
    if moment == "awaiting approval":  # the turn ended: its approved tools ran, once each
        assert runs == {"lookup": 1, "charge": 1, "transfer": 1, "notify": 1}, runs
        assert all(call["status"] == "done" for call in report["calls"]), report
    else:  # cut: the lookup's result kept, nothing gated ran
        assert runs == {"lookup": 1}, runs
