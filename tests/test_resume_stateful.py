"""A hypothesis state machine of resuming across requests with a faulty outcome store.

One turn leaves three calls pending; each step resumes one of them with an approval or a
denial, while the store may fail to claim or to record. A model of the store's contract
predicts every outcome:

- a call nobody claimed yet: an approval runs it; a denial denies it; either is recorded,
  unless recording fails: then the call is "in doubt" from then on;
- a call claimed with an outcome: every later resume gets that outcome, whatever it says;
- a call claimed without one: ``in_doubt``;
- a claim that fails: ``claim_failed``, nothing ran, nothing changed in the store.

Invariants after every step: no tool ran twice, and nothing ran that the model did not
run. It runs on asyncio and trio, each through one blocking portal.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from _runner_helpers import call_events, from_list
from _stores import FlakyStore
from conftest import DEADLINE
from toolcall_tracker import (
    ApprovalDenied,
    ClaimFailed,
    OutcomeInDoubt,
    PendingApprovals,
    RunControl,
    Status,
    ToolCall,
    ToolCallTracker,
    ToolRunner,
    tool,
)

IDS = ("a", "b", "c")
SECRET = b"a stateful test secret, 32 bytes"


class ResumeMachine(RuleBasedStateMachine):
    backend = "asyncio"

    def __init__(self) -> None:
        super().__init__()
        self._portal_cm = start_blocking_portal(self.backend)
        self.portal: BlockingPortal = self._portal_cm.__enter__()
        self.ran: Counter[str] = Counter()
        ran = self.ran

        async def pay(n: int) -> int:
            ran[str(n)] += 1
            return n * 10

        self.store = FlakyStore()
        self.runner = ToolRunner(
            [tool(pay, needs_approval=True)], approval_secret=SECRET, outcome_store=self.store
        )
        self.pending = self.portal.call(self._first_request)
        # the model: per call, None (unclaimed), ("result", v), ("denied", reason), "doubt"
        self.model: dict[str, Any] = dict.fromkeys(IDS)
        self.model_ran: set[str] = set()  # the tools the model says ran

    async def _first_request(self) -> PendingApprovals:
        control = RunControl(defer_approvals=True)
        tracker = ToolCallTracker()
        items = [e for i, c in enumerate(IDS) for e in call_events(c, "pay", {"n": i})]
        with anyio.fail_after(DEADLINE):
            async with anyio.create_task_group() as tg:
                tg.start_soon(tracker.consume, from_list([*items, {"type": "end"}]))
                await self.runner.run(tracker, control=control)
        assert control.pending is not None
        return control.pending

    async def _resume(self, call_id: str, approve: bool, reason: str) -> ToolCall:
        decision = self.pending.approve(call_id) if approve else self.pending.deny(call_id, reason)
        with anyio.fail_after(DEADLINE):
            (call,) = await self.runner.resume(self.pending, [decision])
        return call

    @rule(
        call_id=st.sampled_from(IDS),
        approve=st.booleans(),
        reason=st.sampled_from(["no", "not now"]),
        fail_claim=st.booleans(),
        fail_record=st.booleans(),
    )
    def resume(
        self, call_id: str, approve: bool, reason: str, fail_claim: bool, fail_record: bool
    ) -> None:
        self.store.fail_claim = {call_id} if fail_claim else set()
        self.store.fail_record = {call_id} if fail_record else set()
        before = self.ran.copy()
        call = self.portal.call(self._resume, call_id, approve, reason)
        state = self.model[call_id]
        n = IDS.index(call_id)
        if fail_claim:
            assert isinstance(call.error, ClaimFailed)
            assert self.ran == before
            return
        if state is None:
            if approve:
                assert call.status is Status.DONE
                assert call.result == n * 10
                recorded: Any = ("result", n * 10)
            else:
                assert isinstance(call.error, ApprovalDenied)
                assert call.error.reason == reason
                recorded = ("denied", reason)
            self.model[call_id] = "doubt" if fail_record else recorded
        elif state == "doubt":
            assert isinstance(call.error, OutcomeInDoubt)
        elif state[0] == "result":
            assert call.status is Status.DONE
            assert call.result == state[1]
        else:
            assert isinstance(call.error, ApprovalDenied)
            assert call.error.reason == state[1]
        if state is None and approve:
            self.model_ran.add(str(n))

    @invariant()
    def no_tool_ran_twice_or_unaccounted(self) -> None:
        assert all(count <= 1 for count in self.ran.values())
        assert set(self.ran) == self.model_ran

    def teardown(self) -> None:
        self._portal_cm.__exit__(None, None, None)


class AsyncioResume(ResumeMachine):
    backend = "asyncio"


class TrioResume(ResumeMachine):
    backend = "trio"


RUN = settings(max_examples=30, stateful_step_count=12, deadline=None)


@pytest.mark.parametrize("machine", [AsyncioResume, TrioResume], ids=["asyncio", "trio"])
def test_resume_with_a_faulty_store_never_runs_a_call_twice(machine: type) -> None:
    test_case = machine.TestCase
    test_case.settings = RUN
    test_case().runTest()
