"""Durable turns: outcomes, a journal, restore and following a turn from any process, on
SQLite (standard library) or Redis.

A turn recorded in a :class:`Journal` as it happens can be restored and finished in
another process after a crash; an :class:`SQLiteOutcomeStore` makes sure no tool of it
runs twice. See the documentation page "Durable turns" (``docs/durable-turns.md``).

- :class:`SQLiteOutcomeStore`: claims with an owner and a lease, and outcomes, in SQLite;
  :class:`RedisOutcomeStore` the same on a Redis server shared by many servers
  (``pip install 'toolcall-tracker[redis]'``; redis-py is imported only when used).
- :class:`Journal`, :class:`TurnLog`, :class:`JournalRecord`: the journal protocol
  (format :data:`JOURNAL_FORMAT`, record kinds :data:`RECORD_KINDS`): a writer takes a
  turn (``create``, atomically: :class:`TurnExists` for a second one; ``take_over``,
  fencing off the writer before: :class:`TurnSuperseded`) and appends through its log;
  :class:`SQLiteJournal`, :class:`RedisJournal` (Redis Streams: one stream per turn,
  followable live from any server with :meth:`RedisJournal.follow`), and
  :class:`InMemoryJournal` (the same semantics in memory, for tests).
- :class:`DurableTurn`: one turn recorded as it happens, its tools claimed first.
- :func:`restore`, :class:`RestoredTurn`, :func:`resume_turn`: rebuild and finish a turn;
  :func:`apply_events` replays a record's stream events into any event sink.
- :class:`FollowableJournal`: a journal whose turns any process can follow live
  (``follow``); :func:`follow_ui_stream`, :func:`follow_ui_sse`: a journaled turn's AI SDK
  UI message stream on any server, replayed from its start then followed (resumable
  streams).
- :class:`DurableError`: a store or journal could not be read or written;
  :class:`TurnExists` and :class:`TurnSuperseded` are among them.
"""

from __future__ import annotations

from ._ai_sdk import follow_ui_sse, follow_ui_stream
from ._follow import FollowableJournal
from ._journal import DurableTurn
from ._memory_journal import InMemoryJournal
from ._protocol import (
    JOURNAL_FORMAT,
    RECORD_KINDS,
    DurableError,
    Journal,
    JournalRecord,
    TurnExists,
    TurnLog,
    TurnSuperseded,
)
from ._redis_journal import RedisJournal
from ._redis_store import RedisOutcomeStore
from ._restore import RestoredTurn, apply_events, restore, resume_turn
from ._sqlite import sqlite_path
from ._sqlite_journal import SQLiteJournal
from ._sqlite_store import SQLiteOutcomeStore

__all__ = [
    "JOURNAL_FORMAT",
    "RECORD_KINDS",
    "DurableError",
    "DurableTurn",
    "FollowableJournal",
    "InMemoryJournal",
    "Journal",
    "JournalRecord",
    "RedisJournal",
    "RedisOutcomeStore",
    "RestoredTurn",
    "SQLiteJournal",
    "SQLiteOutcomeStore",
    "TurnExists",
    "TurnLog",
    "TurnSuperseded",
    "apply_events",
    "follow_ui_sse",
    "follow_ui_stream",
    "restore",
    "resume_turn",
    "sqlite_path",
]
