"""``journal.follow``: a turn's committed records, then each new one, until the turn is over
(its ``end`` read and no call running, or its ``run_end`` read), on SQLite and Redis.

The stop rule is tested where it matters: a turn whose calls await a decision in another
request is over at its ``run_end``; a turn whose call awaits a decision in this process
is not (the follower sees the outcome after the approval).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from _ui_turn import Shared, cut_turn, make_runner, serve_turn, shared, turn_events
from conftest import DEADLINE
from toolcall_tracker import RunControl, Status, ToolCallTracker
from toolcall_tracker.durable import DurableError, DurableTurn, FollowableJournal, JournalRecord
from toolcall_tracker.durable._follow import FollowState

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["sqlite", "redis"])
def servers(request: pytest.FixtureRequest, tmp_path: Path) -> Shared:
    return shared(request, tmp_path)


async def at_once(tracker: ToolCallTracker) -> None:
    for event in turn_events():
        tracker.apply(event)


async def test_a_turn_that_defers_approvals_is_over_at_its_run_end(
    anyio_backend: str, servers: Shared
) -> None:
    with anyio.fail_after(DEADLINE):
        with servers.journal() as journal, servers.store() as store:
            await serve_turn(journal, store, "turn-1", make_runner([]), at_once)
        with servers.journal() as journal:
            assert isinstance(journal, FollowableJournal)
            records = [r async for r in journal.follow("turn-1", timeout=DEADLINE / 4)]
            assert records == await journal.read("turn-1")  # all of it, then it stopped
            run_end = records[-1]
            assert run_end.kind == "run_end"
            assert run_end.data["awaiting"] == ["c3"]
            assert isinstance(run_end.data["nonce"], str)
            later = [r async for r in journal.follow("turn-1", after=records[2].seq)]
            assert later == records[3:]  # after: only the later ones, same stop
    state = FollowState()
    for record in records[:-1]:
        state.add(record)
    assert state.machine is not None
    assert state.machine.end is not None
    assert not state.finished  # c3 still running: without run_end, not over
    state.add(run_end)
    assert state.finished


async def test_a_call_approved_in_process_keeps_the_follower_to_its_outcome(
    anyio_backend: str, servers: Shared
) -> None:
    seen: list[JournalRecord] = []
    ran: list[str] = []
    with anyio.fail_after(DEADLINE):
        control = RunControl()
        ended = anyio.Event()  # the follower read the end, c1's and c2's outcomes

        async def follower() -> None:
            state = FollowState()
            with servers.journal() as journal:
                async for record in journal.follow("turn-1", timeout=DEADLINE):
                    seen.append(record)
                    state.add(record)
                    done = {r.data["id"] for r in seen if r.kind == "outcome"}
                    machine = state.machine
                    if ended.is_set() or machine is None or machine.end is None:
                        continue
                    if done >= {"c1", "c2"}:
                        assert machine.status("c3") is Status.RUNNING  # not decided yet
                        ended.set()

        async def approver() -> None:
            async for request in control.approval_requests():
                assert request.call_id == "c3"
                break
            await ended.wait()  # the follower is past the end, c3 still awaiting
            assert control.approve("c3")

        with servers.journal() as journal, servers.store() as store:
            async with anyio.create_task_group() as tg:
                tg.start_soon(follower)
                tg.start_soon(approver)
                tracker = ToolCallTracker()
                turn = DurableTurn(journal, "turn-1", tracker, store=store)
                async with turn:
                    await at_once(tracker)
                    await turn.run(make_runner(ran), control=control)
        with servers.journal() as journal:
            records = await journal.read("turn-1")
    # it stopped at the record with c3's result: the first that makes the turn over
    state = FollowState()
    over = next(n for n, record in enumerate(records, 1) if _over(state, record))
    assert seen == records[:over]
    assert ["R", "c3", "deleted /tmp/report.txt"] in seen[-1].data
    assert records[-1].kind == "run_end"
    assert records[-1].data == {"awaiting": [], "nonce": None}
    assert "delete /tmp/report.txt" in ran


def _over(state: FollowState, record: JournalRecord) -> bool:
    state.add(record)
    return state.finished


async def test_a_turn_that_never_ends_times_out_and_a_bad_poll_is_refused(
    anyio_backend: str, servers: Shared
) -> None:
    with anyio.fail_after(DEADLINE):
        await cut_turn(servers, "turn-1")
        with servers.journal() as journal:
            seen: list[str] = []

            async def read() -> None:
                async for record in journal.follow("turn-1", timeout=0.2):
                    seen.append(record.kind)

            with pytest.raises(DurableError, match="did not finish within"):
                await read()
            assert seen == ["limits", "events"]
            if servers.redis is None:
                with pytest.raises(ValueError, match="poll"):
                    await journal.follow("turn-1", poll=0).__anext__()  # type: ignore[call-arg]
