"""``toolcall-tracker replay sqlite:///FILE.db TURN`` or ``replay redis://host:port/db TURN``:
print a journaled turn (``--follow``: and follow it live).

Reads the turn's records from a journal (SQLite: read-only, never creating the file;
Redis: the turn's stream), prints one line per record as it reads them, replays the
stream events into a state machine, and ends with the calls' summary. ``--follow`` goes on
reading new records until the turn is over (its ``end`` read and no call still running,
or the runner's ``run_end`` read: the one rule of every follower) or ``--timeout``
seconds passed: SQLite by reading the file again every 0.2 s, Redis by blocking reads
(``XREAD BLOCK``: each record printed as soon as it is written). Text from the journal is
printed escaped (:func:`clean`), like every other input of the command line.

The turn is replayed under its own ``Limits`` and ``keep_finished`` (its head record), as
every follower replays it; the summary lists every call of the turn, those the machine
forgot under ``keep_finished`` too. A journal this version cannot read (a newer format,
record kind, event or ``Limits`` field, or a malformed record) is one line on stderr,
``toolcall-tracker: error: ...`` naming the record and the version, and exit code 2; the
records before it have been printed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import IO, Any, Final

from ..calls import Status, ToolCall
from ..changes import ChangeListener
from ..durable import DurableError, JournalRecord, SQLiteJournal
from ..durable._follow import FollowState
from ..machine import ToolCallStateMachine
from ._text import call_summary, clean, compact_json, count, end_text, write

__all__ = ["replay_journal"]

_POLL: Final = 0.2  # seconds between two reads of an SQLite file while following

_Show = Callable[[JournalRecord], None]


class _Gone(Exception):
    """The journal could not be read, or the follow gave up (the message says why)."""


def replay_journal(args: argparse.Namespace, out: IO[str] | None = None) -> int:
    """Run ``replay`` on a journal; the exit code (0 ok, 1 a call failed or the turn did
    not end ok, 2 no such journal or turn, a journal this version cannot read, no Redis
    client or server, or the follow timed out before the end)."""
    out = out or sys.stdout
    location: str = args.file
    turn: str | None = args.turn
    if not turn:
        write(sys.stderr, f"toolcall-tracker: error: {clean(location)}: name the TURN to replay\n")
        return 2
    calls = _AllCalls()
    state = FollowState(calls.listen)
    as_json: bool = args.json

    def show(record: JournalRecord) -> None:
        state.add(record)
        _show(record, state.machine, out, as_json)

    if location.startswith("sqlite:") and args.prefix is not None:
        write(sys.stderr, "toolcall-tracker: error: --prefix is for a Redis journal\n")
        return 2
    try:
        if location.startswith("sqlite:"):
            _from_sqlite(location, turn, args, show, state)
        else:  # redis://, rediss://, unix://
            _from_redis(location, turn, args, show, state)
    except _Gone as exc:
        write(sys.stderr, f"toolcall-tracker: {exc}\n")
        return 2
    machine = state.machine
    if machine is None:
        where = clean(location)
        write(sys.stderr, f"toolcall-tracker: error: no turn {clean(turn)!r} in {where}\n")
        return 2
    everything = calls.all(machine)
    if not as_json:
        _summary(everything, machine, out)
    end = machine.end
    failed = any(call.status is Status.ERROR for call in everything)
    return 0 if end is not None and end.ok and not failed else 1


def _from_sqlite(
    location: str, turn: str, args: argparse.Namespace, show: _Show, state: FollowState
) -> None:
    """Read (and follow, by reading again every 0.2 s) a turn in an SQLite file."""
    deadline = time.monotonic() + args.timeout
    after = 0
    while True:
        try:
            records = SQLiteJournal.read_file(location, turn, after)
        except (DurableError, ValueError) as exc:  # ValueError: a record that is not JSON
            raise _Gone(f"error: {clean(str(exc))}") from exc
        for record in records:
            try:
                show(record)
            except DurableError as exc:  # a record this version cannot read: fail closed
                raise _Gone(f"error: {clean(str(exc))}") from exc
            after = record.seq
        if not args.follow or state.finished:
            return
        if time.monotonic() >= deadline:
            raise _Gone(f"the turn did not end in {args.timeout:g} s")
        time.sleep(_POLL)


def _from_redis(
    location: str, turn: str, args: argparse.Namespace, show: _Show, state: FollowState
) -> None:
    """Read (and follow, with blocking reads) a turn in a Redis journal."""
    import anyio

    from ..durable import RedisJournal

    options = {} if args.prefix is None else {"prefix": args.prefix}

    async def read() -> bool:
        async with RedisJournal(location, **options) as journal:
            if not args.follow:
                for record in await journal.read(turn):
                    show(record)
                return True
            with anyio.move_on_after(args.timeout) as scope:
                async for record in journal.follow(turn):  # (it stops where the turn is
                    show(record)  # over: a fence after a run_end re-opens it)
        return not scope.cancelled_caught

    try:
        ended = anyio.run(read)
    except ImportError as exc:  # no redis-py: the message names the extra
        raise _Gone(f"error: {clean(str(exc))}") from exc
    except (DurableError, ValueError) as exc:
        raise _Gone(f"error: {clean(str(exc))}") from exc
    if not ended:
        raise _Gone(f"the turn did not end in {args.timeout:g} s")


def _show(
    record: JournalRecord, machine: ToolCallStateMachine | None, out: IO[str], as_json: bool
) -> None:
    """Print one record (already replayed into ``machine``)."""
    if as_json:
        out.write(json.dumps({"seq": record.seq, "kind": record.kind, "data": record.data}))
        out.write("\n")
    elif record.kind == "limits" and machine is not None:
        out.write(f"[{record.seq}] limits {machine.limits}\n")
    elif record.kind == "events":
        for line in _event_lines(record.data):
            out.write(f"[{record.seq}] {line}\n")
    else:
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
        elif tag in ("E", "F"):
            lines.append(f"error {clean(item[1])} {clean(compact_json(item[2]))}")
        elif tag == "e":
            from ..events import End

            lines.append(f"end {end_text(End(ok=item[1], reason=item[2]))}")
    if pending is not None:
        lines.append(f"delta {clean(pending[0])} +{count(pending[1], 'char')}")
    return lines


class _AllCalls(ChangeListener):
    """Every call of the turn in start order, with the last snapshot of those the machine
    forgot (a turn under ``keep_finished``), for the summary."""

    __slots__ = ("_finished", "_machine", "_order")

    def __init__(self) -> None:
        self._machine: ToolCallStateMachine | None = None
        self._order: dict[str, None] = {}
        self._finished: dict[str, ToolCall] = {}

    def listen(self, machine: ToolCallStateMachine) -> ChangeListener:
        self._machine = machine
        return self

    def call_changed(self, call_id: str, before: Status | None, after: Status) -> None:
        machine = self._machine
        if before is None:
            self._order[call_id] = None
        elif machine is not None and machine.keep_finished is not None:
            call = machine.get(call_id)  # it may be forgotten next: keep what it was
            if call is not None and call.status in (Status.DONE, Status.ERROR):
                self._finished[call_id] = call

    def all(self, machine: ToolCallStateMachine) -> list[ToolCall]:
        """The turn's calls: those ``machine`` holds, and those it forgot."""
        calls: list[ToolCall] = []
        for call_id in self._order:
            call = machine.get(call_id) or self._finished.get(call_id)
            if call is not None:
                calls.append(call)
        return calls


def _summary(calls: list[ToolCall], machine: ToolCallStateMachine, out: IO[str]) -> None:
    end = machine.end
    out.write(f"{count(len(calls), 'call')}, turn {end_text(end) if end else 'not ended'}\n")
    for call in calls:
        line = f"{clean(call.id)} {clean(call.name)} {call.status.value}: {call_summary(call)}"
        out.write(f"  {line}\n")
