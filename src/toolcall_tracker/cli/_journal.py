"""``toolcall-tracker replay sqlite:///FILE.db TURN``: print a journaled turn (``--follow``).

Reads the turn's records from an SQLite journal (read-only, never creating the file),
prints one line per record as it reads them, replays the stream events into a state
machine, and ends with the calls' summary. ``--follow`` polls the file for new records
until the turn's ``end`` has been read and no call is still running, or ``--timeout``
seconds passed. Text from the journal is printed escaped (:func:`clean`), like every
other input of the command line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import IO, Any, Final

from ..calls import Status
from ..durable import DurableError, JournalRecord, SQLiteJournal, apply_events
from ..machine import ToolCallStateMachine
from ._text import call_summary, clean, compact_json, count, end_text, write

__all__ = ["replay_journal"]

_POLL: Final = 0.2  # seconds between two reads while following


def replay_journal(args: argparse.Namespace, out: IO[str] | None = None) -> int:
    """Run ``replay`` on a journal; the exit code (0 ok, 1 a call failed or the turn did
    not end ok, 2 no such journal or turn, or the follow timed out before the end)."""
    out = out or sys.stdout
    location: str = args.file
    turn: str | None = args.turn
    if not turn:
        write(sys.stderr, f"toolcall-tracker: error: {clean(location)}: name the TURN to replay\n")
        return 2
    machine: ToolCallStateMachine | None = None
    deadline = time.monotonic() + args.timeout
    after = 0
    while True:
        try:
            records = SQLiteJournal.read_file(location, turn, after)
        except DurableError as exc:
            write(sys.stderr, f"toolcall-tracker: error: {clean(str(exc))}\n")
            return 2
        for record in records:
            machine = _show(record, machine, out, args.json)
            after = record.seq
        if machine is None and not args.follow:
            write(sys.stderr, f"toolcall-tracker: error: no turn {clean(turn)!r} in {location}\n")
            return 2
        if not args.follow or (machine is not None and _finished(machine)):
            break
        if time.monotonic() >= deadline:
            write(sys.stderr, f"toolcall-tracker: the turn did not end in {args.timeout:g} s\n")
            return 2
        time.sleep(_POLL)
    assert machine is not None
    if not args.json:
        _summary(machine, out)
    end = machine.end
    failed = any(call.status is Status.ERROR for call in machine.list())
    return 0 if end is not None and end.ok and not failed else 1


def _finished(machine: ToolCallStateMachine) -> bool:
    """The turn ended and no call is left running."""
    if machine.end is None:
        return False
    return all(call.status is not Status.RUNNING for call in machine.list())


def _show(
    record: JournalRecord, machine: ToolCallStateMachine | None, out: IO[str], as_json: bool
) -> ToolCallStateMachine:
    if as_json:
        out.write(json.dumps({"seq": record.seq, "kind": record.kind, "data": record.data}))
        out.write("\n")
    if record.kind == "limits":
        from ..limits import Limits

        limits = Limits(**record.data["limits"])
        if not as_json:
            out.write(f"[{record.seq}] limits {limits}\n")
        return ToolCallStateMachine(limits=limits)
    if machine is None:
        machine = ToolCallStateMachine()
    if record.kind == "events":
        apply_events(machine, record.data)
        if not as_json:
            for line in _event_lines(record.data):
                out.write(f"[{record.seq}] {line}\n")
    elif not as_json:
        data = record.data if isinstance(record.data, dict) else {}
        call_id = clean(str(data.get("id", "")))
        if record.kind == "claim":
            out.write(f"[{record.seq}] claim {call_id} ({clean(str(data.get('tool')))})\n")
        elif record.kind == "outcome":
            value = data.get("result") if data.get("kind") == "result" else data.get("failure")
            out.write(f"[{record.seq}] outcome {call_id} {clean(compact_json(value))}\n")
        else:
            out.write(f"[{record.seq}] {clean(record.kind)} {clean(compact_json(record.data))}\n")
    out.flush()
    return machine


def _event_lines(items: list[Any]) -> list[str]:
    """One line per event; consecutive deltas of one call as one line."""
    lines: list[str] = []
    pending: tuple[str, int] | None = None
    for item in items:
        tag = item[0]
        if tag == "d":
            if pending is not None and pending[0] == item[1]:
                pending = (item[1], pending[1] + len(item[2]))
                continue
            if pending is not None:
                lines.append(f"delta {clean(pending[0])} +{count(pending[1], 'char')}")
            pending = (item[1], len(item[2]))
            continue
        if pending is not None:
            lines.append(f"delta {clean(pending[0])} +{count(pending[1], 'char')}")
            pending = None
        if tag == "s":
            lines.append(f"start {clean(item[1])} {clean(item[2])}")
        elif tag == "r":
            lines.append(f"ready {clean(item[1])}")
        elif tag == "R":
            lines.append(f"result {clean(item[1])} {clean(compact_json(item[2]))}")
        elif tag == "E":
            lines.append(f"error {clean(item[1])} {clean(compact_json(item[2]))}")
        elif tag == "e":
            from ..events import End

            lines.append(f"end {end_text(End(ok=item[1], reason=item[2]))}")
    if pending is not None:
        lines.append(f"delta {clean(pending[0])} +{count(pending[1], 'char')}")
    return lines


def _summary(machine: ToolCallStateMachine, out: IO[str]) -> None:
    calls = machine.list()
    end = machine.end
    out.write(f"{count(len(calls), 'call')}, turn {end_text(end) if end else 'not ended'}\n")
    for call in calls:
        line = f"{clean(call.id)} {clean(call.name)} {call.status.value}: {call_summary(call)}"
        out.write(f"  {line}\n")
