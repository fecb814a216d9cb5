"""A call whose step a ``reset-step`` retracts never runs (issue 39, item 3, first point).

An application that retries a step itself (``createUIMessageStream``, falling back to
another provider) writes ``reset-step`` after the failed attempt's ``finish-step``; the
SDK's own UI then drops every part since the last ``start-step``. The reader must fail
those calls (``AISDKStepReset``) whatever their state, and make a step's calls ready only
once the step stands: at the next ``start-step`` or the turn's end. Both part orders
(``finish-step, reset-step`` and the SDK's own ``reset-step`` before ``finish-step``), both
``ready`` modes, the retried attempt's calls under a new or the same ``toolCallId``, read
by a machine part by part and run by a real :class:`ToolRunner`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from conftest import DEADLINE
from toolcall_tracker import (
    Status,
    ToolCallTracker,
    ToolRunner,
    tool,
    tool_call_streaming_state_machine,
)
from toolcall_tracker.adapters import AISDKAdapter, adapt
from toolcall_tracker.adapters.ai_sdk import AISDKApprovalPending, AISDKStepReset

READY = ["step", "input"]
ORDERS = {  # what the failed attempt writes after its call, before the retried attempt
    "finish-step, reset-step": ["finish-step", "reset-step"],  # an application's own retry
    "reset-step": ["reset-step"],  # streamText's retries: no finish-step for the failed one
}


def _call(call_id: str, p: int) -> list[dict[str, Any]]:
    return [
        {"type": "tool-input-start", "toolCallId": call_id, "toolName": "rm"},
        {"type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": f'{{"p":{p}}}'},
        {
            "type": "tool-input-available",
            "toolCallId": call_id,
            "toolName": "rm",
            "input": {"p": p},
        },
    ]


def _step(kind: str) -> dict[str, Any]:
    return {"type": kind}


def _retried(order: str, retry_id: str) -> list[dict[str, Any]]:
    """A turn whose first attempt (call ``c1``, p=1) is retracted and retried (p=2)."""
    return [
        _step("start-step"),
        *_call("c1", 1),
        *map(_step, ORDERS[order]),
        _step("start-step"),
        *_call(retry_id, 2),
        _step("finish-step"),
        {"type": "finish", "finishReason": "tool-calls"},
    ]


def _tracker_id(retry_id: str) -> str:
    # the tracker still holds the retracted c1: a retried call reusing its id is c1~<n>
    return "c1~1" if retry_id == "c1" else retry_id


# -- part by part, on a machine ------------------------------------------------------------


@pytest.mark.parametrize("retry_id", ["c1", "c2"])
@pytest.mark.parametrize("order", sorted(ORDERS))
@pytest.mark.parametrize("ready", READY)
def test_a_retracted_call_fails_and_the_retried_one_is_ready(
    ready: Any, order: str, retry_id: str
) -> None:
    machine = tool_call_streaming_state_machine()
    adapter = AISDKAdapter(ready=ready)
    parts = _retried(order, retry_id)
    was_running = False
    for part in parts:
        adapter.write(part, machine)
        first = machine.get("c1")
        assert first is not None or part["type"] == "start-step"
        if first is not None and first.args_text == '{"p":1}':
            was_running |= first.status is Status.RUNNING
            # never ready with the default: a reset-step may follow finish-step
            assert ready == "input" or first.status is not Status.RUNNING
        if part["type"] == "reset-step":
            assert first is not None
            assert first.status is Status.ERROR
    adapter.finish(machine)
    first = machine.get("c1")
    assert first is not None
    assert first.args_text == '{"p":1}'
    assert isinstance(first.error, AISDKStepReset)
    # was_ready says whether the call had been made ready: only ready="input" does, and
    # only when a part other than reset-step followed its input
    assert first.error.was_ready is was_running
    assert was_running is (ready == "input" and order == "finish-step, reset-step")
    retried = machine.get(_tracker_id(retry_id))
    assert retried is not None
    assert (retried.status, retried.args) == (Status.RUNNING, {"p": 2})
    assert machine.end is not None
    assert machine.end.ok


@pytest.mark.parametrize("ready", READY)
def test_a_call_of_a_finished_step_waits_for_the_next_start_step(ready: Any) -> None:
    machine = tool_call_streaming_state_machine()
    adapter = AISDKAdapter(ready=ready)
    for part in [_step("start-step"), *_call("c1", 1), _step("finish-step")]:
        adapter.write(part, machine)
    expected = Status.RUNNING if ready == "input" else Status.PENDING
    assert machine.status("c1") is expected
    adapter.write({"type": "text-start", "id": "t"}, machine)  # a text part is no step
    assert machine.status("c1") is expected
    adapter.write(_step("start-step"), machine)
    assert machine.status("c1") is Status.RUNNING


@pytest.mark.parametrize("ready", READY)
def test_a_reset_step_after_a_text_part_still_retracts_the_step(ready: Any) -> None:
    # the SDK drops every part since the last start-step, finish-step or not
    machine = tool_call_streaming_state_machine()
    adapter = AISDKAdapter(ready=ready)
    parts = [
        _step("start-step"),
        *_call("c1", 1),
        _step("finish-step"),
        {"type": "text-start", "id": "t"},
        _step("reset-step"),
        {"type": "finish"},
    ]
    for part in parts:
        adapter.write(part, machine)
    call = machine.get("c1")
    assert call is not None
    assert isinstance(call.error, AISDKStepReset)


@pytest.mark.parametrize("end", ["abort", "cut"])
def test_a_finished_step_stands_when_the_stream_stops(end: str) -> None:
    # as before: finish-step, then an abort or the stream's end: the call was complete
    machine = tool_call_streaming_state_machine()
    adapter = AISDKAdapter()
    for part in [_step("start-step"), *_call("c1", 1), _step("finish-step")]:
        adapter.write(part, machine)
    if end == "abort":
        adapter.write({"type": "abort"}, machine)
    adapter.finish(machine)
    assert machine.status("c1") is Status.RUNNING
    assert machine.end is not None
    assert not machine.end.ok


def test_an_approval_request_after_finish_step_still_holds_the_call() -> None:
    machine = tool_call_streaming_state_machine()
    adapter = AISDKAdapter()
    parts = [
        _step("start-step"),
        *_call("c1", 1),
        _step("finish-step"),
        {"type": "tool-approval-request", "approvalId": "a1", "toolCallId": "c1"},
        {"type": "finish", "finishReason": "tool-calls"},
    ]
    for part in parts:
        adapter.write(part, machine)
        assert machine.status("c1") is not Status.RUNNING
    call = machine.get("c1")
    assert call is not None
    assert isinstance(call.error, AISDKApprovalPending)


def test_a_call_the_server_ran_keeps_its_outcome() -> None:
    machine = tool_call_streaming_state_machine()
    adapter = AISDKAdapter()
    parts = [
        _step("start-step"),
        *_call("c1", 1),
        {"type": "tool-output-available", "toolCallId": "c1", "output": "gone"},
        _step("finish-step"),
        _step("reset-step"),
        {"type": "finish"},
    ]
    for part in parts:
        adapter.write(part, machine)
    call = machine.get("c1")
    assert call is not None
    assert (call.status, call.result) == (Status.DONE, "gone")


# -- run by a real ToolRunner ----------------------------------------------------------------


async def _source(
    parts: list[dict[str, Any]], before_reset: anyio.Event | None = None
) -> AsyncIterator[dict[str, Any]]:
    for part in parts:
        if part["type"] == "reset-step" and before_reset is not None:
            await before_reset.wait()  # the retracted call's tool has started
        yield part


async def _run(
    parts: list[dict[str, Any]], ready: Any, runner: ToolRunner, before: anyio.Event | None
) -> dict[str, Any]:
    async with ToolCallTracker() as tracker, anyio.create_task_group() as tg:
        tg.start_soon(tracker.consume, adapt(_source(parts, before), AISDKAdapter(ready=ready)))
        calls = await runner.run(tracker)
    return {call.id: call for call in calls}


@pytest.mark.anyio
@pytest.mark.parametrize("eager", [True, False])
@pytest.mark.parametrize("retry_id", ["c1", "c2"])
@pytest.mark.parametrize("order", sorted(ORDERS))
async def test_a_retracted_call_never_runs_under_a_runner(
    anyio_backend: str, order: str, retry_id: str, eager: bool
) -> None:
    ran: list[int] = []

    async def rm(p: int) -> int:
        ran.append(p)
        return p

    with anyio.fail_after(DEADLINE):
        runner = ToolRunner([tool(rm, eager=eager)])
        calls = await _run(_retried(order, retry_id), "step", runner, None)
    assert ran == [2]  # the retried attempt's call only, once
    first = calls["c1"]
    assert isinstance(first.error, AISDKStepReset)
    assert not first.error.was_ready
    retried = calls[_tracker_id(retry_id)]
    assert (retried.status, retried.result) == (Status.DONE, 2)


@pytest.mark.anyio
@pytest.mark.parametrize("retry_id", ["c1", "c2"])
@pytest.mark.parametrize("order", sorted(ORDERS))
async def test_ready_input_a_gated_tool_of_a_retracted_step_never_runs(
    anyio_backend: str, order: str, retry_id: str
) -> None:
    ran: list[int] = []

    async def rm(p: int) -> int:
        ran.append(p)
        return p

    with anyio.fail_after(DEADLINE):
        runner = ToolRunner([tool(rm, eager=False)])  # gated: waits for the turn's ok end
        calls = await _run(_retried(order, retry_id), "input", runner, None)
    assert ran == [2]
    first = calls["c1"]
    assert isinstance(first.error, AISDKStepReset)
    assert first.error.was_ready is (order == "finish-step, reset-step")
    assert calls[_tracker_id(retry_id)].result == 2


@pytest.mark.anyio
@pytest.mark.parametrize("retry_id", ["c1", "c2"])
async def test_ready_input_an_eager_tool_already_started_is_stopped(
    anyio_backend: str, retry_id: str
) -> None:
    # the risk ready="input" documents: the tool had started; it is cancelled, the call
    # ends AISDKStepReset (was_ready), and what the tool did before is done
    started = anyio.Event()
    began: list[int] = []
    finished: list[int] = []
    stopped: list[int] = []

    async def rm(p: int) -> int:
        began.append(p)
        if p == 1:
            started.set()
            try:
                await anyio.sleep_forever()
            finally:
                stopped.append(p)
        finished.append(p)
        return p

    with anyio.fail_after(DEADLINE):
        runner = ToolRunner([tool(rm, eager=True)])
        calls = await _run(_retried("finish-step, reset-step", retry_id), "input", runner, started)
    assert began == [1, 2]
    assert stopped == [1]
    assert finished == [2]
    first = calls["c1"]
    assert isinstance(first.error, AISDKStepReset)
    assert first.error.was_ready
    assert calls[_tracker_id(retry_id)].result == 2


@pytest.mark.parametrize("then", ["start-step", "abort"])
def test_a_retried_step_not_finished_is_not_made_ready_by_the_next_part(then: str) -> None:
    """After a ``reset-step``, the retried attempt's calls stand no sooner than any other
    step's: a ``start-step`` (or an ``abort``) with no ``finish-step`` between does not
    make them ready (the step and its standing list were once one list after a reset)."""
    parts = [
        _step("start-step"),
        *_call("c0", 0),
        _step("reset-step"),
        *_call("c1", 1),
        _step(then),
    ]
    machine, adapter = tool_call_streaming_state_machine(), AISDKAdapter()
    seen: set[Status] = set()
    for part in parts:
        adapter.write(part, machine)
        call = machine.get("c1")
        if call is not None:
            seen.add(call.status)
    assert Status.RUNNING not in seen
