"""A durable turn, offline: killed with SIGKILL mid-turn, restored and finished elsewhere.

A child process streams a simulated model turn into a tracker recorded in an SQLite
journal: ``lookup_order`` (read-only, eager) runs at once; ``refund`` (gated: it runs only
once the turn ended normally) waits for the turn's end. The model's stream then stalls, and
the parent kills the child with SIGKILL. The parent restores the turn from the journal and
finishes it: the lookup's recorded result is kept (it does not run again), and the refund
never runs, because the turn's stream was cut.

Run: .venv/bin/python examples/durable.py [--backend asyncio|trio]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
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


async def first_process(directory: Path) -> None:
    """The process that streams and runs tools, until it is killed."""
    db = directory / "turns.db"
    tools = runner(directory)
    async with SQLiteJournal(db) as journal, SQLiteOutcomeStore(db) as store:
        tracker = ToolCallTracker()
        async with (
            DurableTurn(journal, "turn-1", tracker, store=store) as turn,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(tracker.consume, model_stream())
            tg.start_soon(turn.run, tools)
            await tracker.wait_done("c1")
            await journal.commit()
            print("lookup done; the model's stream stalls", flush=True)
            await anyio.sleep_forever()  # killed here


async def second_process(directory: Path) -> None:
    """Restore the turn from the journal and finish it."""
    db = directory / "turns.db"
    async with SQLiteJournal(db) as journal, SQLiteOutcomeStore(db) as store:
        restored = await restore(journal, "turn-1")
        print(f"restored {len(restored.tracker.list())} calls; stream cut: {restored.cut}")
        calls = await resume_turn(journal, "turn-1", runner(directory), store=store)
    for call in calls:
        outcome = call.result if call.error is None else f"{call.error.kind}: {call.error.message}"
        print(f"  {call.id} {call.name}: {call.status.value} -> {outcome}")


def main(backend: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        child = subprocess.Popen(
            [sys.executable, __file__, "--backend", backend, "--child", tmp],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        print("process 1:", child.stdout.readline().strip())
        child.kill()  # SIGKILL: no cleanup, no end of turn
        child.wait()
        child.stdout.close()
        print(f"process 1 killed (exit {child.returncode})")
        print("process 2:")
        anyio.run(second_process, directory, backend=backend)
        runs = (directory / RUNS).read_text(encoding="utf-8").splitlines()
        print(f"tools that really ran: {runs}")
        print(f"replay it: toolcall-tracker replay sqlite:///{directory / 'turns.db'} turn-1")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--child", metavar="DIR", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        anyio.run(first_process, Path(options.child), backend=options.backend)
    else:
        main(options.backend)
