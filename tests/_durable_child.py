"""Child processes for the durable tests: run with ``python tests/_durable_child.py MODE ...``.

``resume DB STATE SIDE BACKEND``: wait for a line on stdin, then resume the pending state in
file STATE (its ``pending`` and ``decisions``) with an SQLite outcome store on DB; the
``transfer`` tool appends a line to SIDE each time it really runs. Prints the resumed
calls' outcomes as one JSON line.

``turn STORE SIDE BACKEND [PREFIX]``: run a journaled turn (four calls: an idempotent
eager lookup, an eager charge, a gated transfer needing approval, a gated notify), pausing
at every kill point: it prints ``M <point>`` and waits for a line on stdin (the parent
answers, or kills the process with SIGKILL there). Points: each stream item, each tool
before and after its side effect, after each claim, before each record, after each
approval.

``finish STORE SIDE BACKEND [PREFIX]``: restore the turn and finish it (approving what
is asked); prints the calls' outcomes as one JSON line.

``STORE`` is where the journal and the outcome store are: an SQLite file, or a Redis URL
(``redis://``, ``rediss://``, ``unix://``) with the key ``PREFIX`` of the case.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio

from toolcall_tracker import CallFailure, RunControl, ToolCall, ToolCallTracker, ToolRunner, tool
from toolcall_tracker.durable import (
    DurableTurn,
    SQLiteJournal,
    SQLiteOutcomeStore,
    restore,
    resume_turn,
)
from toolcall_tracker.runner import ApprovalDecision, GuardOutcome, PendingApprovals, StartGuard

SECRET = b"a durable test secret (32 bytes)"
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def open_storage(
    store: str,
    prefix: str,
    *,
    lease: float,
    poll: float = 0.05,
    clock: Callable[[], float] | None = None,
) -> tuple[Any, Any]:
    """The journal and the outcome store at ``store`` (an SQLite file or a Redis URL),
    not yet entered (both are async context managers); ``clock``: the store's (default:
    the real one)."""
    if store.startswith(REDIS_SCHEMES):
        from toolcall_tracker.durable import RedisJournal, RedisOutcomeStore

        return (
            RedisJournal(store, prefix=prefix),
            RedisOutcomeStore(store, lease=lease, poll=poll, prefix=prefix, clock=clock),
        )
    outcomes = SQLiteOutcomeStore(store, lease=lease, poll=poll, clock=clock or time.time)
    return SQLiteJournal(store), outcomes


def side_effect(side: str, text: str) -> None:
    with open(side, "a", encoding="utf-8") as out:
        out.write(text + "\n")
        out.flush()


def transfer_runner(side: str) -> ToolRunner:
    def transfer(to: str, amount: int) -> str:
        side_effect(side, f"transfer {to} {amount}")
        return f"sent {amount} to {to}"

    return ToolRunner(
        [tool(transfer, needs_approval=True)], approval_secret=SECRET, max_concurrency=1
    )


def outcome_of(call: Any) -> Any:
    error = call.error
    return {
        "id": call.id,
        "status": call.status.value,
        "result": call.result,
        "error": None if error is None else {"kind": error.kind, "message": error.message},
    }


async def resume(db: str, state: str, side: str) -> None:
    data = json.loads(await anyio.Path(state).read_text(encoding="utf-8"))
    pending = PendingApprovals.model_validate_json(data["pending"])
    decisions = [ApprovalDecision.model_validate_json(d) for d in data["decisions"]]
    with SQLiteOutcomeStore(db, lease=2.0) as store:
        runner = transfer_runner(side)
        runner = ToolRunner(
            list(runner.tools.values()), approval_secret=SECRET, outcome_store=store
        )
        sys.stdin.readline()
        calls = await runner.resume(pending, decisions)
    print(json.dumps([outcome_of(call) for call in calls]), flush=True)


_marker_lock = threading.Lock()


def marker(point: str) -> None:
    """A kill point: tell the parent, and wait until it says go on (or kills us)."""
    with _marker_lock:
        sys.stdout.write(f"M {point}\n")
        sys.stdout.flush()
        if not sys.stdin.readline():
            os._exit(3)


def turn_runner(side: str, *, marked: bool) -> ToolRunner:
    def effect(name: str, call: str) -> None:
        if marked:
            marker(f"run {name}")
        side_effect(side, f"{name} {call}")
        if marked:
            marker(f"ran {name}")

    def lookup(q: str) -> str:
        effect("lookup", q)
        return q.upper()

    async def charge(n: int) -> int:
        effect("charge", str(n))
        return n * 10

    def transfer(to: str) -> str:
        effect("transfer", to)
        return f"sent to {to}"

    def notify(text: str) -> str:
        effect("notify", text)
        return "notified"

    return ToolRunner(
        [
            tool(lookup, eager=True, idempotent=True),
            tool(charge, eager=True),
            tool(transfer, needs_approval=True),
            tool(notify),
        ]
    )


def turn_stream() -> list[dict[str, Any]]:
    def call(call_id: str, name: str, args: str) -> list[dict[str, Any]]:
        half = len(args) // 2
        return [
            {"type": "start", "id": call_id, "name": name},
            {"type": "delta", "id": call_id, "argsTextDelta": args[:half]},
            {"type": "delta", "id": call_id, "argsTextDelta": args[half:]},
            {"type": "ready", "id": call_id},
        ]

    return [
        *call("c1", "lookup", '{"q": "a"}'),
        *call("c2", "charge", '{"n": 7}'),
        *call("c3", "transfer", '{"to": "bob"}'),
        *call("c4", "notify", '{"text": "hi"}'),
        {"type": "end"},
    ]


class MarkedGuard:
    """A start guard with kill points after each claim and before each record."""

    def __init__(self, inner: StartGuard) -> None:
        self.inner = inner

    async def claim(self, call: ToolCall) -> GuardOutcome | None:
        outcome = await self.inner.claim(call)
        if outcome is None:
            marker(f"claimed {call.id}")
        return outcome

    async def record(self, call: ToolCall, result: Any, failure: CallFailure | None) -> None:
        marker(f"record {call.id}")
        await self.inner.record(call, result, failure)


async def approve_all(control: RunControl, marked: bool) -> None:
    async for request in control.approval_requests():
        control.approve(request.call_id)
        if marked:
            marker(f"approved {request.call_id}")


async def turn(store: str, side: str, prefix: str) -> None:
    runner = turn_runner(side, marked=True)
    control = RunControl()

    async def items() -> AsyncIterator[dict[str, Any]]:
        for number, item in enumerate(turn_stream()):
            marker(f"stream {number}")
            yield item

    journal, outcomes = open_storage(store, prefix, lease=0.3)
    async with journal, outcomes:
        tracker = ToolCallTracker()
        async with (
            DurableTurn(journal, "turn-1", tracker, store=outcomes) as durable,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(tracker.consume, items())
            tg.start_soon(approve_all, control, True)
            guard = MarkedGuard(durable.guard(runner))
            await runner.run(tracker, control=control, start_guard=guard)
            tg.cancel_scope.cancel()
    print("E done", flush=True)


async def finish(store: str, side: str, prefix: str) -> None:
    runner = turn_runner(side, marked=False)
    control = RunControl()
    journal, outcomes = open_storage(store, prefix, lease=0.3, poll=0.02)
    async with journal, outcomes:
        restored = await restore(journal, "turn-1")
        async with anyio.create_task_group() as tg:
            tg.start_soon(approve_all, control, False)
            calls = await resume_turn(journal, "turn-1", runner, store=outcomes, control=control)
            tg.cancel_scope.cancel()
    report = {
        "cut": restored.cut,
        "claimed": sorted(restored.claimed),
        "calls": [outcome_of(call) for call in calls],
    }
    print(json.dumps(report), flush=True)


def main(argv: list[str]) -> None:
    mode = argv[0]
    if mode == "resume":
        db, state, side, backend = argv[1:5]
        anyio.run(resume, db, state, side, backend=backend)
    elif mode in ("turn", "finish"):
        store, side, backend = argv[1:4]
        prefix = argv[4] if len(argv) > 4 else ""
        anyio.run(turn if mode == "turn" else finish, store, side, prefix, backend=backend)
    else:  # pragma: no cover
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
