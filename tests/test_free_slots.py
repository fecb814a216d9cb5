"""Slots of tools that draw nothing from the runner-wide capacity (no cap, not sync).

Such a call takes its turn's slot at once when nobody is queued (what the queue would give
it), never behind a queued call (ready order), never once the run is stopping, and without
touching the runner's capacity (no lock, no count, no wake-up of other turns). Nothing
here awaits (no deadline needed); the event loop is for the cancel scopes.
"""

from __future__ import annotations

import math

import anyio
import pytest

from toolcall_tracker.runner._slots import Capacity, TurnSlots

pytestmark = pytest.mark.anyio


def _slots(capacity: Capacity, turn_max: float) -> TurnSlots:
    caps = {"free": math.inf, "capped": 1.0}
    return TurnSlots(capacity, turn_max, caps.__getitem__, lambda tool: False, frozenset({"free"}))


async def test_a_free_tool_takes_the_turns_slots_only(anyio_backend: str) -> None:
    with anyio.fail_after(10):
        capacity = Capacity(max_threads=4)
        slots = _slots(capacity, 2)
        scope = anyio.CancelScope()
        assert slots.take_now("free", True, scope)
        assert slots.take_now("free", True, scope)
        assert capacity.running("free") == 0  # the runner's capacity never counted them
        assert not slots.take_now("free", True, scope)  # the turn's max_concurrency holds
        slots.give_back("free")
        assert capacity.running("free") == 0
        assert slots.take_now("free", True, scope)


async def test_a_free_tool_never_passes_a_queued_call(anyio_backend: str) -> None:
    with anyio.fail_after(10):
        capacity = Capacity(max_threads=4)
        slots = _slots(capacity, 1)
        scope = anyio.CancelScope()
        assert capacity.take("capped", 1, False)  # another turn holds the capped tool
        slots.queue.push("capped", "c1")
        assert slots.grant() is None  # c1 waits for its tool's cap
        assert not slots.take_now("free", True, scope)  # queued behind c1: ready order
        slots.queue.push("free", "f1")
        assert slots.grant() == ("free", "f1")  # the oldest call whose tool may start
        assert capacity.running("capped") == 1


async def test_a_stopping_turn_takes_no_slot(anyio_backend: str) -> None:
    with anyio.fail_after(10):
        slots = _slots(Capacity(max_threads=4), 2)
        scope = anyio.CancelScope()
        scope.cancel()
        assert not slots.take_now("free", True, scope)
        assert not slots.take_now("free", False, anyio.CancelScope())  # no task group
        assert not slots.take_now("capped", True, anyio.CancelScope())  # not a free tool
