"""Human approval, offline: in process, across requests, and a denial fed back to the model.

A simulated model stream calls ``transfer`` (which needs a human's approval above 100) and
``get_balance`` (read-only, eager). Three scenes:

1. in process: the approver answers each request while ``get_balance`` runs;
2. across requests: the turn ends with calls awaiting approval; the pending state is
   serialised to JSON (what an HTTP server would send to the browser), decided, and resumed
   in a second "request";
3. the follow-up messages, where the denied call reads as an error the model understands.

Run: .venv/bin/python examples/approvals.py [--backend asyncio|trio]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio

from toolcall_tracker import RunControl, ToolCall, ToolCallTracker, ToolRunner, tool
from toolcall_tracker.feedback import openai_chat_messages
from toolcall_tracker.runner import ApprovalDecision, PendingApprovals, merge_calls

BALANCE = {"alice": 1_000}


async def get_balance(account: str) -> int:
    """The balance of an account."""
    await anyio.sleep(0.05)  # a slow lookup: it runs while the approvals are pending
    return BALANCE.get(account, 0)


async def transfer(to: str, amount: int) -> str:
    """Send money."""
    BALANCE["alice"] -= amount
    return f"sent {amount} to {to}"


def above_100(call: ToolCall) -> bool:
    return bool(call.args["amount"] > 100)


RUNNER = ToolRunner(
    [tool(get_balance, eager=True), tool(transfer, eager=True, needs_approval=above_100)],
    approval_secret=b"keep me on the server, never in the code",
)


async def model_stream() -> AsyncIterator[dict[str, Any]]:
    """Four calls, streamed in fragments, like a provider's parallel tool calls."""
    calls = [
        ("c1", "get_balance", {"account": "alice"}),
        ("c2", "transfer", {"to": "bob", "amount": 50}),  # small: no approval needed
        ("c3", "transfer", {"to": "carol", "amount": 300}),
        ("c4", "transfer", {"to": "mallory", "amount": 900}),
    ]
    for call_id, name, args in calls:
        text = json.dumps(args)
        yield {"type": "start", "id": call_id, "name": name}
        for i in range(0, len(text), 8):
            yield {"type": "delta", "id": call_id, "argsTextDelta": text[i : i + 8]}
            await anyio.sleep(0.001)
        yield {"type": "ready", "id": call_id}
    yield {"type": "end"}


def show(calls: list[ToolCall]) -> None:
    for call in calls:
        outcome = call.result if call.status == "done" else call.error
        if call.status == "error":
            outcome = f"{call.error.kind}: {call.error.message}"
        print(f"  {call.id} {call.name:<12} {call.status.value:<8} {outcome}")


async def in_process() -> None:
    print("1. in process: decide while get_balance runs")
    control = RunControl()
    tracker = ToolCallTracker()

    async def human() -> None:
        async for request in control.approval_requests():
            running = tracker.status("c1")
            print(f"  asked: {request.call_id} {request.arguments} (get_balance is {running})")
            if request.arguments["to"] == "mallory":
                control.deny(request.call_id, "mallory is not a payee")
            else:
                control.approve(request.call_id, {"to": "carol", "amount": 250})  # edited

    async with anyio.create_task_group() as tg:
        tg.start_soon(tracker.consume, model_stream())
        tg.start_soon(human)
        calls = await RUNNER.run(tracker, control=control)
    show(calls)


async def across_requests() -> None:
    print("\n2. across requests: the turn ends with approvals pending")
    control = RunControl(defer_approvals=True)
    tracker = ToolCallTracker()
    async with anyio.create_task_group() as tg:
        tg.start_soon(tracker.consume, model_stream())
        first = await RUNNER.run(tracker, control=control)
    show(first)
    assert control.pending is not None
    wire = control.pending.model_dump_json()
    print(
        f"  response 1 carries the pending state ({len(wire)} bytes of JSON): {control.pending.ids}"
    )

    # ... the browser shows the requests; the user approves c3 and denies c4 ...
    state = PendingApprovals.model_validate_json(wire)
    decisions = [state.approve("c3"), state.deny("c4", "mallory is not a payee")]
    body = json.dumps(
        {"pending": json.loads(wire), "decisions": [d.model_dump(mode="json") for d in decisions]}
    )

    print("  request 2 resumes them:")
    received = json.loads(body)
    pending = PendingApprovals.model_validate(received["pending"])
    decided = [ApprovalDecision.model_validate(d) for d in received["decisions"]]
    second = RunControl()
    resumed = await RUNNER.resume(pending, decided, control=second)
    calls = merge_calls(first, resumed)
    show(calls)

    again = await RUNNER.resume(pending, decided)  # a retried request runs nothing twice
    print(f"  retried request 2 (nothing ran again): {[c.status.value for c in again]}")

    print("\n3. the next request's messages (OpenAI Chat): the denial reads as an error")
    messages = openai_chat_messages(calls, include_calls=False, notes=second.notes())
    print(json.dumps(messages, indent=2))


async def main() -> None:
    await in_process()
    await across_requests()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--trio", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    anyio.run(main, backend="trio" if options.trio else options.backend)
