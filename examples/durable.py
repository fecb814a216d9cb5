"""A durable turn, offline: killed with SIGKILL mid-turn, restored and finished elsewhere.

A child process streams a simulated model turn into a tracker recorded in a journal (an
SQLite file, or Redis Streams with ``--redis URL``): ``lookup_order`` (read-only, eager)
runs at once; ``refund`` (gated: it runs only once the turn ended normally) waits for the
turn's end. The model's stream then stalls, and the parent kills the child with SIGKILL.
The parent restores the turn from the journal and finishes it: the lookup's recorded
result is kept (it does not run again), and the refund never runs, because the turn's
stream was cut.

Run: .venv/bin/python examples/durable.py [--backend asyncio|trio]
     [--redis redis://127.0.0.1:6379/0 [--prefix toolcall-tracker:]]

With ``--redis`` the journal and the outcome store are on that server (``pip install
'toolcall-tracker[redis]'``), under the key prefix; the turn's keys expire after an hour.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio

from toolcall_tracker import ToolCallTracker, ToolRunner, tool
from toolcall_tracker.durable import (
    DurableTurn,
    SQLiteJournal,
    SQLiteOutcomeStore,
    restore,
    resume_turn,
)

RUNS = "runs.txt"  # each real run of a tool, one line
KEEP = timedelta(hours=1)  # how long the turn is kept (and can be resumed)


def storage(directory: Path, redis: str | None, prefix: str) -> tuple[Any, Any]:
    """The journal and the outcome store (async context managers): in an SQLite file in
    ``directory``, or on the Redis server at ``redis``."""
    if redis is None:
        db = directory / "turns.db"
        return SQLiteJournal(db), SQLiteOutcomeStore(db)
    from toolcall_tracker.durable import RedisJournal, RedisOutcomeStore

    return (
        RedisJournal(redis, prefix=prefix, ttl=KEEP.total_seconds()),
        RedisOutcomeStore(redis, prefix=prefix, ttl=KEEP.total_seconds()),
    )


def runner(directory: Path) -> ToolRunner:
    def note(line: str) -> None:
        with open(directory / RUNS, "a", encoding="utf-8") as out:
            out.write(line + "\n")

    def lookup_order(order: str) -> dict[str, Any]:
        """Look an order up."""
        note(f"lookup_order {order}")
        return {"order": order, "total": 42.5}

    def refund(order: str, amount: float) -> str:
        """Refund an order."""
        note(f"refund {order} {amount}")
        return f"refunded {amount} on {order}"

    return ToolRunner([tool(lookup_order, eager=True), tool(refund)])


async def model_stream() -> AsyncIterator[dict[str, Any]]:
    """Two calls, then the stream stalls (the process is killed before its end)."""
    for call_id, name, args in (
        ("c1", "lookup_order", '{"order": "A-17"}'),
        ("c2", "refund", '{"order": "A-17", "amount": 42.5}'),
    ):
        yield {"type": "start", "id": call_id, "name": name}
        yield {"type": "delta", "id": call_id, "argsTextDelta": args}
        yield {"type": "ready", "id": call_id}
    await anyio.sleep_forever()


async def first_process(directory: Path, turn_id: str, redis: str | None, prefix: str) -> None:
    """The process that streams and runs tools, until it is killed."""
    tools = runner(directory)
    journal, store = storage(directory, redis, prefix)
    async with journal, store:
        tracker = ToolCallTracker()
        async with (
            DurableTurn(journal, turn_id, tracker, store=store, key_ttl=KEEP) as turn,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(tracker.consume, model_stream())
            tg.start_soon(turn.run, tools)
            await tracker.wait_done("c1")
            await turn.log.commit()  # everything this turn journaled so far is durable
            print("lookup done; the model's stream stalls", flush=True)
            await anyio.sleep_forever()  # killed here


async def second_process(directory: Path, turn_id: str, redis: str | None, prefix: str) -> None:
    """Restore the turn from the journal and finish it."""
    journal, store = storage(directory, redis, prefix)
    async with journal, store:
        restored = await restore(journal, turn_id)
        print(f"restored {len(restored.tracker.list())} calls; stream cut: {restored.cut}")
        calls = await resume_turn(journal, turn_id, runner(directory), store=store, key_ttl=KEEP)
    for call in calls:
        outcome = call.result if call.error is None else f"{call.error.kind}: {call.error.message}"
        print(f"  {call.id} {call.name}: {call.status.value} -> {outcome}")


def main(backend: str, redis: str | None, prefix: str) -> None:
    turn_id = f"turn-{uuid.uuid4().hex[:8]}"  # its own: a Redis server may be shared
    where = ["--redis", redis, "--prefix", prefix] if redis else []
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        child = subprocess.Popen(
            [sys.executable, __file__, "--backend", backend, "--child", tmp, turn_id, *where],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        said = child.stdout.readline().strip()
        if not said:  # it failed before the lookup was done (its error is above)
            raise SystemExit(f"process 1 failed (exit {child.wait()})")
        print("process 1:", said)
        child.kill()  # SIGKILL: no cleanup, no end of turn
        child.wait()
        child.stdout.close()
        print(f"process 1 killed (exit {child.returncode})")
        print("process 2:")
        anyio.run(second_process, directory, turn_id, redis, prefix, backend=backend)
        runs = (directory / RUNS).read_text(encoding="utf-8").splitlines()
        print(f"tools that really ran: {runs}")
        if redis is None:
            db = directory / "turns.db"
            print(f"replay it: toolcall-tracker replay sqlite:///{db} {turn_id}")
        else:
            print(f"journal: Redis stream {prefix}turn:{turn_id} on {redis} (kept for an hour)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--redis", metavar="URL", help="the journal and store on this Redis")
    parser.add_argument("--prefix", default="toolcall-tracker:", help="the Redis key prefix")
    parser.add_argument("--child", nargs=2, metavar=("DIR", "TURN"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        directory, turn_id = Path(options.child[0]), options.child[1]
        where = (options.redis, options.prefix)
        anyio.run(first_process, directory, turn_id, *where, backend=options.backend)
    else:
        main(options.backend, options.redis, options.prefix)
