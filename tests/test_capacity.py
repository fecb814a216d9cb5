"""The runner-wide capacity wakes only the turns it refused (not every turn of the runner).

Each release of a tool's slot used to schedule a wake-up of every turn subscribed to the
runner, from any thread: O(turns) cross-thread calls per tool run. Proven by counting the
wake-ups each subscriber receives, on both backends.
"""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from conftest import DEADLINE
from toolcall_tracker.runner._slots import Capacity, TurnSlots

pytestmark = pytest.mark.anyio


async def test_a_release_wakes_only_the_turns_that_were_refused(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):
        capacity = Capacity(max_threads=4)
        token = anyio.lowlevel.current_token().native_token
        woken: list[str] = []
        for name in ("refused", "idle"):
            capacity.subscribe(name, token, lambda name=name: woken.append(name))
        refused = TurnSlots(capacity, 10, lambda tool: 1, lambda tool: False, owner="refused")
        assert capacity.take("capped", 1, False)  # another turn holds the tool's one slot
        refused.queue.push("capped", "c1")
        assert refused.grant() is None  # refused by the cap: it asks to be woken
        capacity.release("capped", False)
        for _ in range(3):
            await anyio.lowlevel.checkpoint()
        assert woken == ["refused"]
        assert refused.grant() == ("capped", "c1")  # woken, it takes the freed slot
        capacity.release("capped", False)  # nobody was refused since: nobody is woken
        for _ in range(3):
            await anyio.lowlevel.checkpoint()
        assert woken == ["refused"]
