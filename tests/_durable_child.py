"""Child processes for the durable tests: run with ``python tests/_durable_child.py MODE ...``.

``resume DB STATE SIDE BACKEND``: wait for a line on stdin, then resume the pending state in
file STATE (its ``pending`` and ``decisions``) with an SQLite outcome store on DB; the
``transfer`` tool appends a line to SIDE each time it really runs. Prints the resumed
calls' outcomes as one JSON line.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio

from toolcall_tracker import ApprovalDecision, PendingApprovals, ToolRunner, tool
from toolcall_tracker.durable import SQLiteOutcomeStore

SECRET = b"a durable test secret (32 bytes)"


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


def main(argv: list[str]) -> None:
    mode = argv[0]
    if mode == "resume":
        db, state, side, backend = argv[1:5]
        anyio.run(resume, db, state, side, backend=backend)
    else:  # pragma: no cover
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
