"""Fault injection for the runner: every fault of a tool stays inside its own call.

Hypothesis draws a turn of several calls, each to its own tool, drawn from: raise an
``Exception``; raise a ``BaseException`` (``SystemExit``, ``GeneratorExit``, a custom
subclass; never ``KeyboardInterrupt``, which may propagate); hang until cancelled (the
runner has a ``call_timeout``); mutate its arguments; return odd values (NaN, a lone
surrogate, bytes, a cycle, an object whose ``__str__`` raises); call back into the tracker
(apply an ``error`` to another call or to its own); healthy. Each tool is sync (run in a
worker thread) or async. Every example runs on asyncio and on trio, bounded by
``anyio.fail_after``.

Asserted: ``run()`` returns; nothing stays ``running``; each healthy call ends ``done`` with
its result unless another tool failed it on purpose; each faulty call ends ``error`` with a
``CallFailure``; a tool that mutates its arguments does not change ``call.args``; and every
feedback builder accepts the finished calls and produces strict JSON text.

Also: a long ``run()`` with ``keep_finished`` keeps memory flat (tracemalloc).
"""

from __future__ import annotations

import gc
import json
import math
import threading
import time
import tracemalloc
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import anyio.from_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _runner_helpers import call_events, from_list
from toolcall_tracker import Limits, Status, ToolCallTracker, tool
from toolcall_tracker.failures import CallFailure, CallTimedOut
from toolcall_tracker.feedback import (
    anthropic_messages,
    gemini_contents,
    openai_chat_messages,
    openai_responses_items,
)
from toolcall_tracker.runner import ToolRunner

BACKENDS = ("asyncio", "trio")
CALL_TIMEOUT = 0.2
EXAMPLE_DEADLINE = 8.0


class CustomBaseError(BaseException):
    """A ``BaseException`` a library might define (not an ``Exception``)."""


class BadStr:
    def __str__(self) -> str:
        raise RuntimeError("no str for you")

    __repr__ = __str__


def a_cycle() -> list[Any]:
    cycle: list[Any] = [1]
    cycle.append(cycle)
    return cycle


RAISES: dict[str, Callable[[], BaseException]] = {
    "raise": lambda: ValueError("boom"),
    "raise_unprintable": lambda: type("Unprintable", (Exception,), {"__str__": BadStr.__str__})(),
    "system_exit": lambda: SystemExit(2),
    "generator_exit": lambda: GeneratorExit(),
    "custom_base": lambda: CustomBaseError("custom"),
}
ODD: dict[str, Callable[[], Any]] = {
    "odd_nan": lambda: {"x": float("nan"), "y": float("inf")},
    "odd_surrogate": lambda: "lone \ud800 surrogate",
    "odd_bytes": lambda: b"\xff\xfe not utf-8",
    "odd_cycle": a_cycle,
    "odd_bad_str": BadStr,
}
FAULTY = {*RAISES, "hang", "fail_self"}
KINDS = sorted({"healthy", "mutate", "fail_other", *ODD, *FAULTY})


def plan_strategy() -> st.SearchStrategy[list[tuple[str, bool, int]]]:
    """``[(kind, sync, target index for fail_other)]``, 2 to 6 calls."""
    call = st.tuples(st.sampled_from(KINDS), st.booleans(), st.integers(0, 5))
    return st.lists(call, min_size=2, max_size=6)


def make_tool(
    kind: str,
    sync: bool,
    cid: str,
    target: str,
    tracker_box: list[ToolCallTracker],
    release: threading.Event,
) -> Callable[..., Any]:
    """The tool of call ``cid``: it takes ``i`` and ``items`` and returns ``{"i": i}``."""

    def apply_error(call_id: str) -> None:
        event = {"type": "error", "id": call_id, "error": f"failed by {cid}"}
        if sync:
            anyio.from_thread.run_sync(tracker_box[0].apply, event)
        else:
            tracker_box[0].apply(event)

    def body(i: int, items: list[int]) -> Any:
        if kind in RAISES:
            raise RAISES[kind]()
        if kind == "mutate":
            items.append(99)
            items.clear()
            return {"i": i}
        if kind in ODD:
            return ODD[kind]()
        if kind == "fail_other":
            apply_error(target)
            return {"i": i}
        if kind == "fail_self":
            apply_error(cid)
            return {"i": i}
        return {"i": i}

    if sync:

        def sync_tool(i: int, items: list[int]) -> Any:
            if kind == "hang":
                release.wait(5)  # abandoned on call_timeout; released when the example ends
                return {"i": i}
            return body(i, items)

        return sync_tool

    async def async_tool(i: int, items: list[int]) -> Any:
        if kind == "hang":
            await anyio.sleep_forever()
        await anyio.lowlevel.checkpoint()
        return body(i, items)

    return async_tool


def strict_json(value: Any) -> None:
    """``value`` (a builder's output) is strict JSON: no NaN/infinity, every string UTF-8,
    and every string that a builder meant as JSON text parses strictly."""

    def reject(constant: str) -> Any:
        raise ValueError(f"non-standard JSON constant {constant}")

    text = json.dumps(value, allow_nan=False, ensure_ascii=False)
    text.encode("utf-8")  # a lone surrogate anywhere raises here
    json.loads(text, parse_constant=reject)


async def run_example(plan: list[tuple[str, bool, int]], backend: str) -> None:
    ids = [f"c{n}" for n in range(len(plan))]
    release = threading.Event()
    tracker_box: list[ToolCallTracker] = []
    # Only the hanging tools get a call timeout: a healthy tool on a loaded machine must
    # never be timed out by it (the example's own deadline bounds everything).
    tools = {
        f"t{n}": tool(
            make_tool(kind, sync, ids[n], ids[target % len(plan)], tracker_box, release),
            name=f"t{n}",
            timeout=CALL_TIMEOUT if kind == "hang" else None,
        )
        for n, (kind, sync, target) in enumerate(plan)
    }
    events: list[Any] = []
    for n in range(len(plan)):
        events += call_events(ids[n], f"t{n}", {"i": n, "items": [1, 2]})
    events.append({"type": "end", "ok": True})

    tracker = ToolCallTracker()
    tracker_box.append(tracker)
    runner = ToolRunner(list(tools.values()))
    try:
        with anyio.fail_after(EXAMPLE_DEADLINE):
            async with anyio.create_task_group() as tg:
                tg.start_soon(tracker.consume, from_list(events))
                calls = await runner.run(tracker)
    finally:
        release.set()

    by_id = {call.id: call for call in calls}
    assert set(by_id) == set(ids), backend
    targeted = {ids[target % len(plan)] for kind, _sync, target in plan if kind == "fail_other"}
    for n, (kind, _sync, _target) in enumerate(plan):
        call = by_id[ids[n]]
        where = (backend, n, kind, call.status, call.error)
        assert call.status in (Status.DONE, Status.ERROR), where
        assert call.args == {"i": n, "items": [1, 2]}, where  # no tool changed them
        if ids[n] in targeted:
            if call.status is Status.ERROR and isinstance(call.error, str):
                assert call.error.startswith("failed by "), where
            continue
        if kind == "fail_self":
            assert call.status is Status.ERROR, where
        elif kind in FAULTY:
            assert call.status is Status.ERROR, where
            assert isinstance(call.error, CallFailure), where
            if kind == "hang":
                assert isinstance(call.error, CallTimedOut), where
        else:
            assert call.status is Status.DONE, where
            if kind in ("healthy", "mutate", "fail_other"):
                assert call.result == {"i": n}, where
            elif kind == "odd_nan":
                assert math.isnan(call.result["x"]), where

    finished = list(calls)
    for build in (openai_chat_messages, anthropic_messages, openai_responses_items):
        strict_json(build(finished))
    strict_json(gemini_contents(finished))
    strict_json(gemini_contents(finished, include_ids=True))


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(plan=plan_strategy())
def test_faults_stay_inside_their_calls(plan: list[tuple[str, bool, int]]) -> None:
    for backend in BACKENDS:
        anyio.run(run_example, plan, backend, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", sorted(FAULTY | set(ODD) | {"mutate"}))
@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
def test_each_fault_next_to_a_healthy_tool(kind: str, sync: bool, backend: str) -> None:
    """Every kind once, deterministically, beside a healthy sibling of the other flavour."""
    anyio.run(run_example, [(kind, sync, 1), ("healthy", not sync, 0)], backend, backend=backend)


# --------------------------------------------------------------------------- memory

CALLS = 8_000
WARM = 2_000  # well past the 256 remembered forgotten ids (bounded by design)
MEMORY_BOUND = 64 * 1024  # bytes; per-call runner state kept to the end was ~150 B/call


def test_a_long_run_with_keep_finished_keeps_memory_flat() -> None:
    """8,000 calls through ``ToolCallTracker(keep_finished=50)`` and one ``ToolRunner``:
    the traced memory at the end of the run minus that at a warm start stays small (a leak
    of the ~150 bytes per call seen before would be about 900 KB here). The tracker
    remembers 256 forgotten ids instead of 4,096 so that the warm-up is short. asyncio
    only: under tracemalloc the same run takes twice as long on trio."""
    marks: list[int] = []

    async def noop(i: int) -> int:
        return i

    async def settle() -> None:
        await anyio.wait_all_tasks_blocked()  # every running tool has finished (or waits)
        gc.collect()

    async def source() -> AsyncIterator[dict[str, Any]]:
        for n in range(CALLS):
            if n == WARM:
                await settle()
                marks.append(tracemalloc.get_traced_memory()[0])
            cid = f"c{n}"
            yield {"type": "start", "id": cid, "name": "noop"}
            yield {"type": "delta", "id": cid, "argsTextDelta": json.dumps({"i": n})}
            yield {"type": "ready", "id": cid}
        await settle()
        marks.append(tracemalloc.get_traced_memory()[0])
        yield {"type": "end", "ok": True}

    async def main() -> None:
        tracker = ToolCallTracker(keep_finished=50, limits=Limits(remember_forgotten=256))
        runner = ToolRunner({"noop": noop}, eager=True)
        with anyio.fail_after(180):  # a hang guard: ~30 s under tracemalloc when loaded
            async with anyio.create_task_group() as tg:
                tg.start_soon(tracker.consume, source())
                calls = await runner.run(tracker)
        assert len(calls) <= 50
        assert all(call.status is Status.DONE for call in calls)

    started = time.monotonic()
    tracemalloc.start()
    try:
        anyio.run(main, backend="asyncio")
    finally:
        tracemalloc.stop()
    growth = marks[1] - marks[0]
    assert growth < MEMORY_BOUND, (marks, time.monotonic() - started)
