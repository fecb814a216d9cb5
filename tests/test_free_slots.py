"""Slots of tools that draw nothing from the runner-wide capacity (no cap, not sync).

Such a call takes its turn's slot at once when nobody is queued (what the queue would give
it), never behind a queued call (ready order), never once the run is stopping, and without
touching the runner's capacity (no lock, no count, no wake-up of other turns). Plain
synchronous tests: ``take_now`` reads only the turn's scope's ``cancel_called``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from toolcall_tracker.runner._slots import Capacity, TurnSlots


@dataclass
class _Scope:
    """What ``take_now`` reads of the turn's cancel scope."""

    cancel_called: bool = False


def _slots(capacity: Capacity, turn_max: float) -> TurnSlots:
    caps = {"free": math.inf, "capped": 1.0}
    return TurnSlots(capacity, turn_max, caps.__getitem__, lambda tool: False, frozenset({"free"}))


def test_a_free_tool_takes_the_turns_slots_only() -> None:
    capacity = Capacity(max_threads=4)
    slots = _slots(capacity, 2)
    scope = _Scope()
    assert slots.take_now("free", True, scope)
    assert slots.take_now("free", True, scope)
    assert capacity.running("free") == 0  # the runner's capacity never counted them
    assert not slots.take_now("free", True, scope)  # the turn's max_concurrency holds
    slots.give_back("free")
    assert capacity.running("free") == 0
    assert slots.take_now("free", True, scope)


def test_a_free_tool_never_passes_a_queued_call() -> None:
    capacity = Capacity(max_threads=4)
    slots = _slots(capacity, 1)
    scope = _Scope()
    assert capacity.take("capped", 1, False)  # another turn holds the capped tool
    slots.queue.push("capped", "c1")
    assert slots.grant() is None  # c1 waits for its tool's cap
    assert not slots.take_now("free", True, scope)  # queued behind c1: ready order
    slots.queue.push("free", "f1")
    assert slots.grant() == ("free", "f1")  # the oldest call whose tool may start
    assert capacity.running("capped") == 1


def test_a_stopping_turn_takes_no_slot() -> None:
    slots = _slots(Capacity(max_threads=4), 2)
    scope = _Scope(cancel_called=True)
    assert not slots.take_now("free", True, scope)
    assert not slots.take_now("free", False, _Scope())  # no task group
    assert not slots.take_now("capped", True, _Scope())  # not a free tool
