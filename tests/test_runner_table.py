"""Every cell of the runner's table, on a live run, on both backends.

For each state a call can be in, a real run brings call ``x`` there (a blocked predicate, a
human who has not decided, a gated tool before the turn's end, a blocker holding the only
slot, a store guard whose claim or record waits, a tool that waits, an abandoned sync
tool). Then the event is applied, by its real trigger where the application or the tracker
owns it (``approve``, ``deny``, ``cancel``, ``write_end``, ``write_error``, releasing what
waits) and through the turn's one entry point, ``fire``, for the rest, and the listener's
first transition is compared with ``EXPECTED``, a table written out by hand. Ignored cells
must change nothing. ``docs/runner-table.md`` holds the same table and must equal
``TRANSITIONS``.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

from _runner_helpers import call_events
from conftest import DEADLINE
from toolcall_tracker import RunControl, ToolCall, ToolCallTracker, ToolRunner, tool
from toolcall_tracker.failures import CallFailure
from toolcall_tracker.runner import RunnerEvent, RunnerListener, RunnerState
from toolcall_tracker.runner._control import link_of
from toolcall_tracker.runner._guard import GuardOutcome
from toolcall_tracker.runner._table import TRANSITIONS, Step

pytestmark = pytest.mark.anyio

S, E = RunnerState, RunnerEvent
NX = S.NOT_EXECUTED

# The next state of call ``x`` in this module's harness (gated calls wait for the end;
# the approval is in process), by state then event; a missing event: ignored.
EXPECTED: dict[RunnerState, dict[RunnerEvent, RunnerState]] = {
    S.VALIDATING: {
        E.NEEDS_APPROVAL: S.AWAITING_APPROVAL,
        E.NO_APPROVAL_NEEDED: S.WAITING_GATE,
        E.INVALID: NX,
        E.TURN_NOT_OK: NX,
        E.CANCEL: NX,
        E.DEADLINE: NX,
        E.CLOSED: NX,
        E.FINISHED_ELSEWHERE: NX,
    },
    S.AWAITING_APPROVAL: {
        E.APPROVED: S.WAITING_GATE,
        E.DENIED: NX,
        E.INVALID: NX,
        E.TURN_NOT_OK: NX,
        E.CANCEL: NX,
        E.DEADLINE: NX,
        E.CLOSED: NX,
        E.FINISHED_ELSEWHERE: NX,
    },
    S.WAITING_GATE: {
        E.TURN_OK: S.WAITING_SLOT,
        E.TURN_NOT_OK: NX,
        E.CANCEL: NX,
        E.DEADLINE: NX,
        E.CLOSED: NX,
        E.FINISHED_ELSEWHERE: NX,
    },
    S.WAITING_SLOT: {
        E.SLOT_GRANTED: S.CLAIMING,
        E.CANCEL: NX,
        E.DEADLINE: NX,
        E.CLOSED: NX,
        E.FINISHED_ELSEWHERE: NX,
    },
    S.CLAIMING: {
        E.CLAIMED: S.RUNNING,
        E.CLAIM_REFUSED: NX,
        E.CANCEL: NX,
        E.DEADLINE: NX,
        E.CLOSED: NX,
        E.FINISHED_ELSEWHERE: NX,
    },
    S.RUNNING: {
        E.TOOL_ENDED: S.RECORDING,
        E.CANCEL: S.ABANDONED,
        E.DEADLINE: S.ABANDONED,
        E.CLOSED: S.ABANDONED,
        E.FINISHED_ELSEWHERE: S.ABANDONED,
    },
    S.RECORDING: {E.RECORDED: S.FINISHED, E.RECORD_FAILED: S.IN_DOUBT},
    S.ABANDONED: {E.TOOL_STOPPED: S.FINISHED},
}


class Log(RunnerListener):
    def __init__(self) -> None:
        self.seen: list[tuple[str, RunnerState, RunnerState, RunnerEvent]] = []
        self.moved: anyio.Event | None = None

    def transition(
        self, call_id: str, before: RunnerState, after: RunnerState, event: RunnerEvent
    ) -> None:
        self.seen.append((call_id, before, after, event))
        if self.moved is not None:
            self.moved.set()

    async def next_move(self) -> None:
        """Wait for the next transition (one a thread schedules on the loop, too)."""
        self.moved = anyio.Event()
        await self.moved.wait()

    def of(self, call_id: str) -> list[tuple[RunnerState, RunnerState, RunnerEvent]]:
        return [(b, a, e) for c, b, a, e in self.seen if c == call_id]


class Guard:
    """A store guard whose claim and record wait until released (when asked to)."""

    def __init__(self, hold_claim: bool, hold_record: bool) -> None:
        self.claim_gate = anyio.Event() if hold_claim else None
        self.record_gate = anyio.Event() if hold_record else None
        self.recorded: list[tuple[str, Any, Any]] = []

    async def claim(self, call: ToolCall) -> GuardOutcome | None:
        if self.claim_gate is not None:
            await self.claim_gate.wait()
        return None

    async def record(self, call: ToolCall, result: Any, failure: CallFailure | None) -> None:
        if self.record_gate is not None:
            await self.record_gate.wait()
        self.recorded.append((call.id, result, failure))


@dataclass
class Live:
    tracker: ToolCallTracker
    control: RunControl
    log: Log
    tool_gate: anyio.Event
    thread_gate: threading.Event
    verdict_gate: anyio.Event
    guard: Guard
    done: list[str] = field(default_factory=list)

    @property
    def turn(self) -> Any:
        turn = link_of(self.control).turn
        assert turn is not None
        return turn

    def entry(self) -> Any:
        item = self.turn._table.get("x")
        assert item is not None
        return item


@asynccontextmanager
async def reach(state: RunnerState) -> AsyncIterator[Live]:
    """A run with call ``x`` in ``state``; torn down (run cancelled) afterwards."""
    tool_gate, verdict_gate, thread_gate = anyio.Event(), anyio.Event(), threading.Event()

    async def verdict(call: Any) -> bool:
        await verdict_gate.wait()
        return False

    async def t(n: int) -> int:
        await tool_gate.wait()
        return n

    def sync_t(n: int) -> int:
        thread_gate.wait(DEADLINE)
        return n

    async def quick(n: int) -> int:
        return n

    if state is S.VALIDATING:
        tools = [tool(t, needs_approval=verdict)]
    elif state is S.AWAITING_APPROVAL:
        tools = [tool(t, needs_approval=True)]
    elif state is S.WAITING_GATE:
        tools = [tool(t)]
    elif state is S.WAITING_SLOT:
        tools = [tool(t, eager=True, sequential=True)]
    elif state is S.RECORDING:
        tools = [tool(quick, name="t", eager=True)]
    elif state is S.ABANDONED:
        tools = [tool(sync_t, name="t", eager=True)]
    else:  # CLAIMING, RUNNING
        tools = [tool(t, eager=True)]
    guard = Guard(hold_claim=state is S.CLAIMING, hold_record=state is S.RECORDING)
    runner = ToolRunner(tools)
    tracker, control, log = ToolCallTracker(), RunControl(), Log()
    live = Live(tracker, control, log, tool_gate, thread_gate, verdict_gate, guard)
    try:
        with anyio.fail_after(DEADLINE):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_run, runner, tracker, control, log, guard)
                await anyio.wait_all_tasks_blocked()
                if state is S.WAITING_SLOT:
                    _feed(tracker, "b")
                    await anyio.wait_all_tasks_blocked()
                _feed(tracker, "x")
                await anyio.wait_all_tasks_blocked()
                if state is S.ABANDONED:
                    assert control.cancel("x")
                    await anyio.wait_all_tasks_blocked()
                assert control.state("x") is state, log.seen
                yield live
                tg.cancel_scope.cancel()
    finally:
        thread_gate.set()


async def _run(
    runner: ToolRunner,
    tracker: ToolCallTracker,
    control: RunControl,
    log: Log,
    guard: Guard,
) -> None:
    await runner.run(tracker, control=control, listener=log, _guard=guard)


def _feed(tracker: ToolCallTracker, call_id: str) -> None:
    for event in call_events(call_id, "t", {"n": 1}):
        tracker.apply(event)


def _failure() -> CallFailure:
    return CallFailure(kind="test", message="applied by the test")


def _payload(event: RunnerEvent) -> Any:
    if event is E.CLAIM_REFUSED:
        return GuardOutcome(failure=_failure())
    if event in (E.RECORDED, E.RECORD_FAILED):
        return (1, None)
    if event in (E.INVALID, E.DENIED, E.CANCEL, E.DEADLINE, E.CLOSED):
        return _failure()
    return None


async def _apply(live: Live, state: RunnerState, event: RunnerEvent) -> None:
    """Apply ``event`` to ``x``: by its real trigger where there is one, else ``fire``."""
    tracker, control = live.tracker, live.control
    if event is E.APPROVED:
        control.approve("x")
    elif event is E.DENIED:
        control.deny("x")
    elif event is E.CANCEL:
        control.cancel("x")
    elif event is E.TURN_OK:
        tracker.write_end(True)
    elif event is E.TURN_NOT_OK:
        tracker.write_end(False, "length")
    elif event is E.FINISHED_ELSEWHERE:
        tracker.write_error("x", "ended by the application")
    elif event is E.SLOT_GRANTED and state is S.WAITING_SLOT:
        live.tool_gate.set()  # the blocker ends; its slot goes to x
    elif event is E.CLAIMED and state is S.CLAIMING:
        assert live.guard.claim_gate is not None
        live.guard.claim_gate.set()
    elif event is E.TOOL_ENDED and state is S.RUNNING:
        live.tool_gate.set()
    elif event is E.RECORDED and state is S.RECORDING:
        assert live.guard.record_gate is not None
        live.guard.record_gate.set()
    elif event is E.TOOL_STOPPED and state is S.ABANDONED:
        with anyio.fail_after(DEADLINE):
            async with anyio.create_task_group() as tg:
                tg.start_soon(live.log.next_move)
                await anyio.wait_all_tasks_blocked()
                live.thread_gate.set()  # the thread ends; its notice comes to the loop
    else:
        live.turn.fire(live.entry(), event, _payload(event))
    await anyio.wait_all_tasks_blocked()


HELD = [s for s in TRANSITIONS if s is not S.STREAMING]


@pytest.mark.parametrize("event", list(RunnerEvent), ids=str)
@pytest.mark.parametrize("state", HELD, ids=str)
async def test_every_cell_of_the_runner_table(
    anyio_backend: str, state: RunnerState, event: RunnerEvent
) -> None:
    expected = EXPECTED[state].get(event)
    assert (TRANSITIONS[state][event] is None) == (expected is None)
    async with reach(state) as live:
        before = len(live.log.of("x"))
        await _apply(live, state, event)
        after = live.log.of("x")[before:]
        if expected is None:
            assert after == []
            assert live.control.state("x") is state
        else:
            assert after, f"{state} --{event}--> nothing"
            assert after[0] == (state, expected, event)


@pytest.mark.parametrize(
    ("trigger", "expected"),
    [("ready", S.VALIDATING), ("cancel", NX), ("error", None), ("end", None)],
)
async def test_the_streaming_row(
    anyio_backend: str, trigger: str, expected: RunnerState | None
) -> None:
    """A call whose arguments stream is the tracker's: ready takes it up, cancel ends it
    there (it never runs), anything else ends it in the tracker, never through the runner."""
    ran: list[int] = []

    async def t(n: int) -> int:
        ran.append(n)
        return n

    tracker, control, log = ToolCallTracker(), RunControl(), Log()
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(_run_plain, ToolRunner([tool(t, eager=True)]), tracker, control, log)
            await anyio.wait_all_tasks_blocked()
            for event in call_events("x", "t", {"n": 1})[:-1]:
                tracker.apply(event)
            assert control.state("x") is S.STREAMING
            if trigger == "ready":
                tracker.write_ready("x")
            elif trigger == "cancel":
                assert control.cancel("x", "changed my mind")
                tracker.write_ready("x")  # ignored: the call has ended
            elif trigger == "error":
                tracker.write_error("x", "adapter failed it")
            await anyio.wait_all_tasks_blocked()
            tracker.write_end(True)
    seen = log.of("x")
    if expected is None:
        assert seen == []
    else:
        assert seen[0] == (S.STREAMING, expected, E.READY if trigger == "ready" else E.CANCEL)
    assert ran == ([1] if trigger == "ready" else [])


async def _run_plain(
    runner: ToolRunner, tracker: ToolCallTracker, control: RunControl, log: Log
) -> None:
    await runner.run(tracker, control=control, listener=log)


DOC = Path(__file__).parent.parent / "docs" / "runner-table.md"


def test_the_documented_table_is_the_code() -> None:
    """``docs/runner-table.md``'s table lists every cell of ``TRANSITIONS``."""
    rows = [
        line
        for line in DOC.read_text(encoding="utf-8").splitlines()
        if line.startswith("| `") and "`" in line
    ]
    documented: dict[str, dict[str, str]] = {}
    events = [str(event) for event in RunnerEvent]
    for line in rows:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        state = cells[0].strip("`")
        assert len(cells) == 1 + len(events), line
        documented[state] = dict(zip(events, cells[1:], strict=True))
    assert set(documented) == {str(state) for state in TRANSITIONS}
    for state, row in TRANSITIONS.items():
        for event, cell in row.items():
            text = documented[str(state)][str(event)]
            if cell is None:
                assert text == "", (state, event, text)
            else:
                step, targets = cell
                expected = f"{step.name} → " + " / ".join(str(target) for target in targets)
                assert text == expected, (state, event, text)


def test_every_step_is_used_and_every_terminal_state_reached() -> None:
    used = {cell[0] for row in TRANSITIONS.values() for cell in row.values() if cell}
    assert used == set(Step)
    reached = {t for row in TRANSITIONS.values() for c in row.values() if c for t in c[1]}
    assert reached | {S.STREAMING} == set(RunnerState)


def test_state_names_are_stable_strings() -> None:
    assert [str(state) for state in RunnerState] == [
        "streaming",
        "validating",
        "awaiting_approval",
        "waiting_gate",
        "waiting_slot",
        "claiming",
        "running",
        "recording",
        "abandoned",
        "finished",
        "not_executed",
        "in_doubt",
    ]
    assert all(re.fullmatch(r"[a-z_]+", str(event)) for event in RunnerEvent)


def test_the_pages_python_blocks_run_as_written() -> None:
    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    for code in blocks:
        result = subprocess.run(
            [sys.executable, "-c", code],
            cwd=DOC.parent.parent,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr[-2000:]
