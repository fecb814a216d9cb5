"""The runner-wide capacity wakes only the turns that wait for it (not every turn).

Each release of a tool's slot used to schedule a wake-up of every turn subscribed to the
runner, from any thread: O(turns) cross-thread calls per tool run. A turn now listens for
released capacity only while it has queued calls. Proven by counting the wake-ups each
turn receives, on both backends.
"""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from conftest import DEADLINE
from toolcall_tracker.runner._slots import Capacity, TurnSlots

pytestmark = pytest.mark.anyio


def _slots(capacity: Capacity) -> TurnSlots:
    return TurnSlots(capacity, 10, lambda tool: 1, lambda tool: False)


async def test_a_release_wakes_only_the_turns_with_queued_calls(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):
        capacity = Capacity(max_threads=4)
        token = anyio.lowlevel.current_token().native_token
        woken: list[str] = []
        waiting, idle = _slots(capacity), _slots(capacity)
        assert capacity.take("capped", 1, False)  # another turn holds the tool's one slot
        waiting.queue.push("capped", "c1")
        assert waiting.grant() is None  # refused by the cap
        waiting.listen(True, token, lambda: woken.append("waiting"))
        idle.listen(True, token, lambda: woken.append("idle"))  # nothing queued: no wake-ups
        capacity.release("capped", False)
        for _ in range(3):
            await anyio.lowlevel.checkpoint()
        assert woken == ["waiting"]
        assert waiting.grant() == ("capped", "c1")  # woken, it takes the freed slot
        waiting.listen(True, token, lambda: woken.append("waiting"))  # queue empty: stops
        capacity.release("capped", False)  # nobody waits any more: nobody is woken
        for _ in range(3):
            await anyio.lowlevel.checkpoint()
        assert woken == ["waiting"]


async def test_a_finished_turn_stops_listening(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):
        capacity = Capacity(max_threads=4)
        token = anyio.lowlevel.current_token().native_token
        woken: list[str] = []
        slots = _slots(capacity)
        assert capacity.take("capped", 1, False)
        slots.queue.push("capped", "c1")
        assert slots.grant() is None
        slots.listen(True, token, lambda: woken.append("turn"))
        slots.listen(False, None, lambda: woken.append("turn"))  # the turn ended
        capacity.release("capped", False)
        for _ in range(3):
            await anyio.lowlevel.checkpoint()
        assert woken == []
