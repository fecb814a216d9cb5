"""The seed walk-through: one call streamed in pieces, then its result.

Run: .venv/bin/python examples/quickstart.py [--backend asyncio|trio]
"""

from __future__ import annotations

import argparse

import anyio

from toolcall_tracker import ToolCallTracker, tool_call_streaming_state_machine


def synchronous() -> None:
    machine = tool_call_streaming_state_machine()
    machine.apply({"type": "start", "id": "t1", "name": "search"})
    machine.apply({"type": "delta", "id": "t1", "argsTextDelta": '{"q":'})
    machine.apply({"type": "delta", "id": "t1", "argsTextDelta": '"hi"}'})

    machine.apply({"type": "result", "id": "t1", "result": ["too early"]})  # ignored: pending
    print("before ready:", machine.get("t1"))

    machine.apply({"type": "ready", "id": "t1"})
    call = machine.get("t1")
    assert call is not None
    print("after ready: ", call.status, call.args, call.args_text)

    machine.apply({"type": "result", "id": "t1", "result": ["hello world"]})
    print("finished:    ", machine.get("t1"))
    print("wire shape:  ", machine.list()[0].model_dump(mode="json", by_alias=True))


async def asynchronous() -> None:
    async def model_stream():  # type: ignore[no-untyped-def]
        yield {"type": "start", "id": "t1", "name": "search"}
        yield {"type": "delta", "id": "t1", "argsTextDelta": '{"q":"hi"}'}
        yield {"type": "ready", "id": "t1"}

    async with ToolCallTracker() as tracker, anyio.create_task_group() as tg:
        tg.start_soon(tracker.consume, model_stream())
        async for call in tracker.ready_calls():  # each call once, the moment it is ready
            print(f"run {call.name}({call.args})")
            tracker.apply({"type": "result", "id": call.id, "result": f"results for {call.args}"})
        done = await tracker.wait_done("t1")
        end = tracker.end
        print("async done:  ", done.status, done.result)
        print(f"turn: {'ok' if end and end.ok else 'not ok'} ({end.reason if end else 'open'})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--trio", action="store_true", help=argparse.SUPPRESS)  # the old flag
    options = parser.parse_args()
    backend = "trio" if options.trio else options.backend
    synchronous()
    anyio.run(asynchronous, backend=backend)
