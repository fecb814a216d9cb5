"""Child processes for the Redis tests: ``python tests/_redis_child.py MODE ...``.

``follow URL PREFIX TURN AFTER BACKEND``: follow the turn on a ``RedisJournal`` and print
each record as one JSON line ``[seq, kind, data]`` as it comes; exit 0 when the follow
ends (the turn finished), 3 if it timed out.

``resume URL PREFIX STATE SIDE BACKEND``: wait for a line on stdin, then resume the pending
state in file STATE (its ``pending`` and ``decisions``) with a ``RedisOutcomeStore`` of its
own; the ``transfer`` tool appends a line to SIDE each time it really runs. Prints the
resumed calls' outcomes as one JSON line.
"""

from __future__ import annotations

import json
import sys

import anyio

from _durable_child import SECRET, outcome_of, transfer_runner
from toolcall_tracker import ToolRunner
from toolcall_tracker.durable import DurableError, RedisJournal, RedisOutcomeStore
from toolcall_tracker.runner import ApprovalDecision, PendingApprovals

FOLLOW_TIMEOUT = 60.0


async def follow(url: str, prefix: str, turn: str, after: int) -> int:
    async with RedisJournal(url, prefix=prefix) as journal:
        try:
            async for record in journal.follow(turn, after, timeout=FOLLOW_TIMEOUT):
                print(json.dumps([record.seq, record.kind, record.data]), flush=True)
        except DurableError as exc:
            print(f"timeout: {exc}", file=sys.stderr, flush=True)
            return 3
    return 0


async def resume(url: str, prefix: str, state: str, side: str) -> None:
    saved = json.loads(await anyio.Path(state).read_text(encoding="utf-8"))
    pending = PendingApprovals.model_validate_json(saved["pending"])
    decisions = [ApprovalDecision.model_validate_json(d) for d in saved["decisions"]]
    await anyio.to_thread.run_sync(sys.stdin.readline)  # both children start together
    async with RedisOutcomeStore(url, prefix=prefix, poll=0.01) as store:
        tools = list(transfer_runner(side).tools.values())
        runner = ToolRunner(tools, approval_secret=SECRET, outcome_store=store)
        calls = await runner.resume(pending, decisions)
    print(json.dumps([outcome_of(call) for call in calls]), flush=True)


def main(argv: list[str]) -> int:
    mode = argv[0]
    if mode == "follow":
        url, prefix, turn, after, backend = argv[1:6]
        code: int = anyio.run(follow, url, prefix, turn, int(after), backend=backend)
        return code
    if mode == "resume":
        url, prefix, state, side, backend = argv[1:6]
        anyio.run(resume, url, prefix, state, side, backend=backend)
        return 0
    raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
