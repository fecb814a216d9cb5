"""Child processes for the fencing tests: ``python tests/_fence_child.py MODE STORE SIDE [PREFIX]``.

``writer``: run journaled turn ``turn-1``: an eager ``charge`` (not idempotent: it appends
``charge <id>`` to the file SIDE each time it really runs), then a gated ``notify`` (the
same, ``notify <id>``). The stream pauses at its points: it prints ``M <point>`` and waits
for a line on stdin. Points: ``charged`` (inside ``charge``, after its side effect, before it
returns), ``streamed`` (``c1`` done and recorded, ``n1`` streamed, before ``n2`` and the
end), in that order. When the run
ends it prints ``R ok`` or ``R superseded`` (the turn was taken over: ``TurnSuperseded``).

``finish``: restore ``turn-1`` and finish it, an hour later by its store's clock (the
writer frozen all that time: its leases long run out); prints the calls as one JSON line
(``{id: [status, result or error kind]}``).

``STORE``: an SQLite file, or a Redis URL with the key ``PREFIX``. Leases are 30 s (no
renewal falls inside a test: a process frozen inside a write to an SQLite file would hold
its lock until it thaws).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import anyio
import anyio.to_thread

from toolcall_tracker import ToolCallTracker, ToolRunner, tool
from toolcall_tracker.durable import DurableTurn, TurnSuperseded, resume_turn

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _durable_child import open_storage

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup

LEASE = 30.0
LATER = 3600.0  # seconds the finisher's clock is ahead


def later() -> float:
    return time.time() + LATER


def pause(point: str) -> None:
    print(f"M {point}", flush=True)
    sys.stdin.readline()


def tools(side: str, *, pausing: bool) -> ToolRunner:
    def charge(order: str) -> str:
        """Charge an order (eager, not idempotent)."""
        with open(side, "a") as out:
            out.write(f"charge {order}\n")
        if pausing:
            pause("charged")
        return f"charged {order}"

    def notify(who: str) -> str:
        """Notify somebody (gated)."""
        with open(side, "a") as out:
            out.write(f"notify {who}\n")
        return f"notified {who}"

    return ToolRunner([tool(charge, eager=True), tool(notify)])


def superseded(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return all(superseded(inner) for inner in exc.exceptions)
    return isinstance(exc, TurnSuperseded)


async def writer(store: str, side: str, prefix: str) -> None:
    journal, outcomes = open_storage(store, prefix, lease=LEASE)
    runner = tools(side, pausing=True)
    async with journal, outcomes:
        tracker = ToolCallTracker()

        async def stream() -> None:
            calls = (("c1", "charge", {"order": "A"}), ("n1", "notify", {"who": "bo"}))
            for call_id, name, args in calls:
                tracker.write_start(call_id, name)
                tracker.write_delta(call_id, json.dumps(args))
                tracker.write_ready(call_id)
            await tracker.wait_done("c1")  # ran and recorded (one pause at a time)
            await journal.commit()  # no write in flight when the parent freezes us
            await anyio.to_thread.run_sync(pause, "streamed")
            tracker.write_start("n2", "notify")
            tracker.write_delta("n2", json.dumps({"who": "cy"}))
            tracker.write_ready("n2")
            tracker.write_end(True, "tool_calls")

        try:
            turn = DurableTurn(journal, "turn-1", tracker, store=outcomes)
            async with turn, anyio.create_task_group() as tg:
                tg.start_soon(stream)
                await turn.run(runner)
        except BaseException as exc:
            if not superseded(exc):
                raise
            print("R superseded", flush=True)
            return
    print("R ok", flush=True)


async def finish(store: str, side: str, prefix: str) -> None:
    journal, outcomes = open_storage(store, prefix, lease=LEASE, clock=later)
    async with journal, outcomes:
        calls = await resume_turn(journal, "turn-1", tools(side, pausing=False), store=outcomes)
    shown: dict[str, Any] = {}
    for call in calls:
        error = getattr(call.error, "kind", None)
        shown[call.id] = [call.status.value, call.result if error is None else error]
    print(json.dumps(shown), flush=True)


if __name__ == "__main__":
    mode, store, side = sys.argv[1:4]
    prefix = sys.argv[4] if len(sys.argv) > 4 else "toolcall-tracker:"
    anyio.run(writer if mode == "writer" else finish, store, side, prefix)
