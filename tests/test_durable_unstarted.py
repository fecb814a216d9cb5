"""Calls claimed but never started: a durable turn journals ``start`` (committed) and then
confirms its claim before a tool starts, so a restore that takes a call in doubt over and
then finds no ``start`` runs it (nothing ran); with a ``start``, or a claim that was not
fenced, the call stays in doubt; and a claimer whose claim was taken over never starts.

Every async test runs on asyncio and trio, bounded by ``anyio.fail_after``, on SQLite (a
real file in ``tmp_path``) and on Redis (a real server), through the ``durable`` fixture.
Leases expire by the stores' clocks (a later process reads an hour ahead), never by
sleeping.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import anyio
import pytest

from _backends import Durable
from _runner_helpers import call_events, from_list
from conftest import DEADLINE
from toolcall_tracker import OutcomeInDoubt, Status, ToolCallTracker, ToolRunner, tool
from toolcall_tracker._keys import call_key
from toolcall_tracker.durable import (
    DurableTurn,
    Journal,
    JournalRecord,
    TurnLog,
    restore,
    resume_turn,
)
from toolcall_tracker.failures import ClaimFailed
from toolcall_tracker.runner import LeasedOutcomeStore

pytestmark = pytest.mark.anyio

LATER = datetime.now(timezone.utc) + timedelta(days=1)
C1_KEY = call_key("turn-1", "c1", "lookup", json.dumps({"q": "a"}))  # its store key


def an_hour_ahead() -> float:
    return time.time() + 3600


class Lookups:
    def __init__(self) -> None:
        self.ran: list[str] = []

        def lookup(q: str) -> str:  # not idempotent: it must never run twice
            self.ran.append(q)
            return q * 2

        self.runner = ToolRunner([tool(lookup, eager=True)])


async def died_after_claiming(
    journal: Journal, durable: Durable, claim: dict[str, Any], started: bool
) -> None:
    """The journal and store of a turn whose process died after claiming ``c1`` (in the
    store and the journal, as the guard does), before or after journaling its start."""
    tracker = ToolCallTracker()
    dead = durable.store(owner="dead")
    async with DurableTurn(journal, "turn-1", tracker, store=dead) as turn:
        async with anyio.create_task_group() as tg:
            events = [*call_events("c1", "lookup", {"q": "a"}), {"type": "end"}]
            tg.start_soon(tracker.consume, from_list(events))
        turn.log.append("claim", claim)
        await turn.log.commit()
        assert (await dead.claim(C1_KEY, expires_at=LATER)).won
        if started:
            turn.log.append("start", {"id": "c1"})
    dead.close()  # its lease is no longer renewed


@pytest.mark.parametrize(("fenced", "started"), [(True, False), (True, True), (False, False)])
async def test_a_call_the_journal_proves_unstarted_runs_on_restore_and_only_then(
    durable: Durable, anyio_backend: str, fenced: bool, started: bool
) -> None:
    tools = Lookups()
    claim = {"id": "c1", "tool": "lookup", **({"fenced": True} if fenced else {})}
    with anyio.fail_after(DEADLINE), durable.journal() as journal:
        await died_after_claiming(journal, durable, claim, started)
        assert (await restore(journal, "turn-1")).claimed == frozenset({"c1"})
        with durable.store(owner="later", clock=an_hour_ahead) as store:
            calls = await resume_turn(journal, "turn-1", tools.runner, store=store)
            again = await resume_turn(journal, "turn-1", tools.runner, store=store)
            stored = await store.get(C1_KEY)
        records = await journal.read("turn-1")
    if fenced and not started:
        assert tools.ran == ["a"]  # nothing had run: it runs now, once
        assert calls[0].status is Status.DONE
        assert calls[0].result == "aa"
        assert [r.kind for r in records].count("start") == 1  # this restore's own
    else:
        assert tools.ran == []
        assert isinstance(calls[0].error, OutcomeInDoubt)
    if fenced and not started:
        assert stored is not None
        assert stored.result == "aa"  # recorded: a later claim gets it back
    assert again[0].status is calls[0].status  # a second restore changes nothing
    assert tools.ran == (["a"] if fenced and not started else [])


class TakenOverAtStart:
    """A journal that lets another process take ``c1`` over right after the first
    process committed its ``start`` (and before it confirms its claim)."""

    def __init__(self, inner: Journal, other: LeasedOutcomeStore) -> None:
        self._inner = inner
        self._other = other
        self.taken: list[bool] = []

    async def create(self, turn_id: str, head: dict[str, Any]) -> TurnLog:
        return _TakenOverLog(await self._inner.create(turn_id, head), self)

    async def take_over(self, turn_id: str) -> TurnLog:
        return await self._inner.take_over(turn_id)  # pragma: no cover (not restored)

    async def read(self, turn_id: str, after: int = 0) -> list[JournalRecord]:
        return await self._inner.read(turn_id, after)


class _TakenOverLog:
    """The log of :class:`TakenOverAtStart`: the take-over after the ``start`` commit."""

    def __init__(self, inner: TurnLog, journal: TakenOverAtStart) -> None:
        self._inner = inner
        self._journal = journal
        self._start_pending = False
        self.turn_id = inner.turn_id
        self.epoch = inner.epoch

    @property
    def superseded(self) -> bool:
        return self._inner.superseded

    def append_event(self, item: list[Any]) -> None:
        self._inner.append_event(item)

    def append(self, kind: str, data: Any) -> None:
        self._start_pending = self._start_pending or kind == "start"
        self._inner.append(kind, data)

    async def commit(self) -> None:
        await self._inner.commit()
        if self._start_pending:
            self._start_pending = False
            claim = await self._journal._other.take_over(C1_KEY, expires_at=LATER)
            self._journal.taken.append(claim.won)


async def test_a_claimer_whose_claim_was_taken_over_before_its_start_does_not_start(
    durable: Durable, anyio_backend: str
) -> None:
    tools = Lookups()
    with (
        anyio.fail_after(DEADLINE),
        durable.journal() as inner,
        durable.store(owner="first") as first,
        durable.store(owner="other", clock=an_hour_ahead) as other,
    ):
        journal = TakenOverAtStart(inner, other)
        tracker = ToolCallTracker()
        async with (
            DurableTurn(journal, "turn-1", tracker, store=first) as turn,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(
                tracker.consume,
                from_list([*call_events("c1", "lookup", {"q": "a"}), {"type": "end"}]),
            )
            calls = await turn.run(tools.runner)
    assert journal.taken == [True]
    assert tools.ran == []  # its claim was no longer its own: it did not start
    assert isinstance(calls[0].error, ClaimFailed)
    assert "taken over by another process" in calls[0].error.message
