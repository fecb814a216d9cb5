"""A chat page driven by the AI SDK UI message stream this library writes.

Run it with ``python examples/chat_app/server.py`` (needs ``fastapi`` and ``uvicorn``), then
open http://127.0.0.1:8000. Tested in a real headless Chromium by
``tests/test_chat_app_browser.py``.

A scripted model stands in for a real one (no key, no network): each request to
``/api/chat`` streams one turn with two tool calls, their arguments in small fragments.
``weather`` runs while the model still streams (a head start) and reports progress as it
goes; ``delete_file`` needs a person's approval, so the turn ends with it awaiting a
decision. The page's Approve / Deny buttons send the decision in a second request
(``/api/approve``), which resumes the call with ``runner.resume`` and streams its outcome.

Both responses are UI message streams (``useChat``'s protocol): the first from the
tracker's change feed (:class:`AISDKListener`), with the runner's progress updates and
the approval requests; the second from :meth:`AISDKEncoder.outcomes`.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
from fastapi import FastAPI
from fastapi.responses import FileResponse, StreamingResponse
from pydantic import BaseModel

from toolcall_tracker import RunControl, ToolCallTracker, ToolRunner, tool
from toolcall_tracker.adapters import (
    SSE_DONE,
    UI_MESSAGE_STREAM_HEADERS,
    AISDKEncoder,
    AISDKListener,
    to_sse,
)
from toolcall_tracker.runner import PendingApprovals

PAGE = Path(__file__).parent / "static" / "index.html"
SECRET = b"chat-app example secret, not for production"
PACE = 0.12  # seconds between the scripted model's fragments (so a person sees them)


@tool(eager=True)
async def weather(city: str) -> AsyncIterator[dict[str, Any]]:
    """The weather in a city, with progress while it is looked up."""
    for step in range(1, 5):
        await anyio.sleep(PACE)
        yield {"progress": step / 5}
    yield {"city": city, "forecast": "sunny", "degrees": 21}


@tool(eager=True, needs_approval=True)
async def delete_file(path: str) -> str:
    """Delete a file (asks for approval first)."""
    return f"deleted {path}"


class Decision(BaseModel):
    """The page's answer to a ``tool-approval-request``."""

    approvalId: str
    approved: bool


def scripted_turn() -> list[dict[str, Any]]:
    """The model's turn: two calls, their arguments in fragments."""
    events: list[dict[str, Any]] = []
    for call_id, name, fragments in (
        ("call_weather", "weather", ['{"ci', 'ty": "Pa', 'ris"}']),
        ("call_delete", "delete_file", ['{"path": ', '"/tmp/report', '.txt"}']),
    ):
        events.append({"type": "start", "id": call_id, "name": name})
        events += [{"type": "delta", "id": call_id, "argsTextDelta": f} for f in fragments]
        events.append({"type": "ready", "id": call_id})
    events.append({"type": "end", "ok": True, "reason": "tool_calls"})
    return events


def create_app(pace: float = PACE) -> FastAPI:
    """The application: the page, ``/api/chat`` and ``/api/approve``."""
    app = FastAPI()
    runner = ToolRunner([weather, delete_file], approval_secret=SECRET)
    pending_turns: dict[str, str] = {}  # nonce -> PendingApprovals JSON (server side)

    @app.get("/")
    async def page() -> FileResponse:
        return FileResponse(PAGE, media_type="text/html")

    @app.post("/api/chat")
    async def chat() -> StreamingResponse:
        return _stream(lambda emit: _turn(runner, pending_turns, emit, pace))

    @app.post("/api/approve")
    async def approve(decision: Decision) -> StreamingResponse:
        return _stream(lambda emit: _resume(runner, pending_turns, decision, emit))

    return app


def _stream(
    body: Callable[[Callable[[dict[str, Any]], None]], Any],
) -> StreamingResponse:
    """A UI message stream response whose parts ``body(emit)`` emits."""

    async def sse() -> AsyncIterator[str]:
        send, receive = anyio.create_memory_object_stream[str](math.inf)

        async def produce() -> None:
            async with send:
                await body(lambda part: send.send_nowait(to_sse(part)))
                send.send_nowait(SSE_DONE)

        async with anyio.create_task_group() as tg, receive:
            tg.start_soon(produce)
            async for text in receive:
                yield text

    return StreamingResponse(sse(), headers=dict(UI_MESSAGE_STREAM_HEADERS))


async def _turn(
    runner: ToolRunner,
    pending_turns: dict[str, str],
    emit: Callable[[dict[str, Any]], None],
    pace: float,
) -> None:
    """One model turn: its calls as they stream, their progress and outcomes, then the
    approval requests; ``finish`` last."""
    emit({"type": "start"})
    finish: list[dict[str, Any]] = []

    def part(p: dict[str, Any]) -> None:  # the turn's finish waits for the approval requests
        if p["type"] == "finish":
            finish.append(p)
        else:
            emit(p)

    async with ToolCallTracker() as tracker:
        listener = AISDKListener(tracker, on_part=part)
        tracker.subscribe(listener, fragments=True)
        control = RunControl(defer_approvals=True, on_progress=listener.progress)

        async def model() -> None:
            for event in scripted_turn():
                tracker.apply(event)
                await anyio.sleep(pace)

        async with anyio.create_task_group() as tg:
            tg.start_soon(model)
            await runner.run(tracker, control=control)
        pending = control.pending
        if pending is not None:  # the calls awaiting a decision: ask the page
            pending_turns[pending.nonce] = pending.model_dump_json()
            for call in pending.calls:
                listener.approval_request(call.call_id, f"{pending.nonce}:{call.call_id}")
    for p in finish:
        emit(p)


async def _resume(
    runner: ToolRunner,
    pending_turns: dict[str, str],
    decision: Decision,
    emit: Callable[[dict[str, Any]], None],
) -> None:
    """The second request: the person's decision runs or denies the call."""
    encoder = AISDKEncoder()
    for p in encoder.start():
        emit(p)
    nonce, _, call_id = decision.approvalId.partition(":")
    stored = pending_turns.pop(nonce, None)
    if stored is None:
        emit({"type": "error", "errorText": "this approval was already answered"})
        return
    pending = PendingApprovals.model_validate_json(stored)
    answer = pending.approve(call_id) if decision.approved else pending.deny(call_id, "denied")
    control = RunControl()
    resumed = await runner.resume(pending, [answer], control=control)
    if control.pending is not None:  # the turn's other calls still await a decision
        pending_turns[nonce] = control.pending.model_dump_json()
    for p in encoder.outcomes(resumed):
        emit(p)
    emit({"type": "finish", "finishReason": "stop"})


app = create_app()

if __name__ == "__main__":
    import uvicorn

    print(json.dumps({"url": "http://127.0.0.1:8000"}))
    uvicorn.run(app, host="127.0.0.1", port=8000)
