"""A rolling deploy: turns journaled by the previous version (journal format 1, whose
live guard claimed ``"<turn id>:<call id>"`` and whose ``run_end`` held only the handed-out
state's nonce) restored by this one, on an SQLite file written by hand."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import DEADLINE
from toolcall_tracker import RunControl, Status, ToolRunner, tool
from toolcall_tracker.durable import SQLiteJournal, SQLiteOutcomeStore, resume_turn
from toolcall_tracker.failures import OutcomeInDoubt
from toolcall_tracker.runner import CallOutcome

pytestmark = pytest.mark.anyio

HEAD = {"limits": {}, "keep_finished": None}  # format 1: no "format"
CALL = [["s", "c", "transfer"], ["d", "c", '{"to": "bob"}'], ["r", "c"], ["e", True, "tool_calls"]]
LATER = datetime.now(timezone.utc) + timedelta(days=30)


def old_journal(path: Path, rows: list[tuple[str, Any]]) -> None:
    """Turn ``T`` as the previous version wrote it (its table: no epoch column)."""
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(
            "CREATE TABLE toolcall_journal (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
            "turn TEXT NOT NULL, kind TEXT NOT NULL, data TEXT NOT NULL)"
        )
        conn.executemany(
            "INSERT INTO toolcall_journal (turn, kind, data) VALUES ('T', ?, ?)",
            [(kind, json.dumps(data)) for kind, data in rows],
        )
    conn.close()


class Transfers:
    def __init__(self) -> None:
        self.ran: list[str] = []

    def runner(self, store: Any, **options: Any) -> ToolRunner:
        def transfer(to: str) -> str:
            """Send money."""
            self.ran.append(to)
            return f"sent to {to}"

        return ToolRunner([tool(transfer, **options)], outcome_store=store)


async def test_a_call_the_previous_version_ran_is_not_run_again(
    tmp_path: Path, anyio_backend: str
) -> None:
    """Its writer claimed the call under its key, ran it, recorded the outcome in the
    store and died before journaling it: the restore finds that outcome."""
    db = tmp_path / "turns.db"
    old_journal(
        db, [("limits", HEAD), ("events", CALL), ("claim", {"id": "c", "tool": "transfer"})]
    )
    tools = Transfers()
    with anyio.fail_after(DEADLINE):
        async with SQLiteJournal(db) as journal, SQLiteOutcomeStore(db) as store:
            assert (await store.claim("T:c", expires_at=LATER)).won  # the old writer's key
            await store.record("T:c", CallOutcome.of("sent to bob", None))
            calls = await resume_turn(journal, "T", tools.runner(store), store=store)
    assert tools.ran == []
    assert calls[0].result == "sent to bob"


async def test_a_call_the_previous_version_handed_out_is_not_handed_out_again(
    tmp_path: Path, anyio_backend: str
) -> None:
    """Its ``run_end`` holds the nonce, not the state: the restore cannot hand the same
    state out, and hands out no other (whose approval would claim another key)."""
    db = tmp_path / "turns.db"
    run_end = {"awaiting": ["c"], "nonce": "N"}
    old_journal(db, [("limits", HEAD), ("events", CALL), ("run_end", run_end)])
    tools = Transfers()
    with anyio.fail_after(DEADLINE):
        async with SQLiteJournal(db) as journal, SQLiteOutcomeStore(db) as store:
            control = RunControl(defer_approvals=True)
            runner = tools.runner(store, needs_approval=True)
            calls = await resume_turn(journal, "T", runner, store=store, control=control)
    assert control.pending is None
    assert calls[0].status is Status.ERROR
    assert isinstance(calls[0].error, OutcomeInDoubt)
    assert "previous version" in calls[0].error.message
    assert tools.ran == []


async def test_a_handed_out_call_the_previous_version_resumed_ends_with_its_outcome(
    tmp_path: Path, anyio_backend: str
) -> None:
    db = tmp_path / "turns.db"
    old_journal(
        db, [("limits", HEAD), ("events", CALL), ("run_end", {"awaiting": ["c"], "nonce": "N"})]
    )
    tools = Transfers()
    with anyio.fail_after(DEADLINE):
        async with SQLiteJournal(db) as journal, SQLiteOutcomeStore(db) as store:
            assert (await store.claim("N:c", expires_at=LATER)).won  # its resume's key
            await store.record("N:c", CallOutcome.of("sent to bob", None))
            control = RunControl(defer_approvals=True)
            runner = tools.runner(store, needs_approval=True)
            calls = await resume_turn(journal, "T", runner, store=store, control=control)
    assert calls[0].result == "sent to bob"
    assert tools.ran == []
