"""``toolcall-tracker replay sqlite:///FILE.db TURN`` (and ``--follow``) on a real journal."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from _runner_helpers import call_events, from_list
from toolcall_tracker import ToolCallTracker, ToolRunner, tool
from toolcall_tracker.cli import main
from toolcall_tracker.durable import DurableTurn, SQLiteJournal, SQLiteOutcomeStore


def make_journal(path: Path, *, end: bool) -> None:
    def lookup(q: str) -> str:
        return q.upper()

    async def go() -> None:
        with SQLiteJournal(path) as journal, SQLiteOutcomeStore(path) as store:
            tracker = ToolCallTracker()
            async with DurableTurn(journal, "turn-1", tracker, store=store) as turn:
                items = call_events("c1", "lookup", {"q": "abc\x1b[2J"})
                if not end:
                    for item in items:
                        tracker.apply(item)
                    return
                async with anyio.create_task_group() as tg:
                    tg.start_soon(tracker.consume, from_list([*items, {"type": "end"}]))
                    await turn.run(ToolRunner([tool(lookup, eager=True)]))

    anyio.run(go)


def test_replay_prints_a_journaled_turn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "j.db"
    make_journal(db, end=True)
    assert main(["replay", f"sqlite:///{db}", "turn-1"]) == 0  # sqlite:////absolute
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("[1] limits Limits(")
    text = "\n".join(lines)
    assert "start c1 lookup" in text
    assert "claim c1 (lookup)" in text
    assert "outcome c1" in text
    assert "end ok" in text
    assert "\x1b" not in out  # hostile text is escaped
    assert "1 call" in lines[-2]
    assert lines[-1].strip().startswith("c1 lookup done")


def test_replay_reads_a_relative_location_and_follows_to_the_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    make_journal(tmp_path / "j.db", end=True)
    monkeypatch.chdir(tmp_path)
    assert main(["replay", "sqlite:///j.db", "turn-1", "--follow", "--timeout", "5"]) == 0
    assert "end ok" in capsys.readouterr().out


def test_follow_gives_up_on_a_turn_that_never_ends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "j.db"
    make_journal(db, end=False)
    assert main(["replay", f"sqlite:///{db}", "turn-1", "--follow", "--timeout", "0.3"]) == 2
    assert "did not end" in capsys.readouterr().err
    assert main(["replay", f"sqlite:///{db}", "turn-1"]) == 1  # read once: not ended


def test_replay_of_a_missing_journal_or_turn_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "j.db"
    assert main(["replay", f"sqlite:///{db}", "turn-1"]) == 2
    assert "no journal file" in capsys.readouterr().err
    assert not os.path.exists(db)  # reading never creates the file
    make_journal(db, end=True)
    assert main(["replay", f"sqlite:///{db}", "other"]) == 2
    assert "no turn" in capsys.readouterr().err
    assert main(["replay", f"sqlite:///{db}"]) == 2
    assert main(["replay", str(db), "turn-1"]) == 2  # TURN without a journal location


def test_replay_json_prints_one_record_per_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "j.db"
    make_journal(db, end=True)
    assert main(["replay", f"sqlite:///{db}", "turn-1", "--json"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert records[0]["kind"] == "limits"
    assert [r["seq"] for r in records] == sorted(r["seq"] for r in records)
    assert {"limits", "events", "claim", "outcome", "runner"} <= {r["kind"] for r in records}
