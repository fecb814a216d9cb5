"""The durable backends a test can run on (not a test module): SQLite and Redis.

:class:`Durable` makes the journals and stores of one backend for one test: SQLite files
in the test's ``tmp_path``, or a real Redis server (the ``redis_url`` fixture) under the
test's own key prefix. The ``durable`` fixture (``conftest.py``) runs a test once per
backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolcall_tracker.durable import (
    RedisJournal,
    RedisOutcomeStore,
    SQLiteJournal,
    SQLiteOutcomeStore,
)

__all__ = ["BACKENDS", "Durable"]

BACKENDS = ("sqlite", "redis")


class Durable:
    """Journals and stores of one backend, all seeing the same data.

    Args:
        name: ``"sqlite"`` or ``"redis"``.
        directory: where the SQLite files go.
        url, prefix: the Redis server and this test's key prefix.
    """

    def __init__(
        self, name: str, directory: Path, url: str | None = None, prefix: str | None = None
    ) -> None:
        self.name = name
        self.directory = directory
        self.url = url
        self.prefix = prefix or "toolcall-tracker:"
        self.made: list[Any] = []  # closed again by the fixture, on the test's event loop

    @property
    def location(self) -> str:
        """The journal's location: the SQLite file or the Redis URL."""
        return self.url if self.name == "redis" and self.url else str(self.directory / "j.db")

    def journal(self, **options: Any) -> SQLiteJournal | RedisJournal:
        """A journal (``batch_ms``, ``limits``; SQLite's own options are dropped on Redis)."""
        if self.name == "redis":
            assert self.url is not None
            options.pop("busy_timeout", None)
            options.pop("synchronous", None)
            journal = RedisJournal(self.url, prefix=self.prefix, **options)
            self.made.append(journal)
            return journal
        return SQLiteJournal(self.directory / "j.db", **options)

    async def aclose(self) -> None:
        """Close what was made here on this event loop (its asyncio clients too: a sync
        ``close()`` inside an async test cannot)."""
        for made in self.made:
            await made.aclose()

    def store(self, **options: Any) -> SQLiteOutcomeStore | RedisOutcomeStore:
        """An outcome store (``owner``, ``lease``, ``wait``, ``poll``)."""
        if self.name == "redis":
            assert self.url is not None
            store = RedisOutcomeStore(self.url, prefix=self.prefix, **options)
            self.made.append(store)
            return store
        return SQLiteOutcomeStore(self.directory / "j.db", **options)
