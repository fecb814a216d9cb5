"""The Redis rows of ``benchmarks/journal.py``: which server, the journals, the follower.

The server is the one at ``--redis URL`` (or ``$TOOLCALL_TRACKER_REDIS_URL``); without one,
a private ``redis-server`` (``tests/_redis.py``: a free loopback port, its own data
directory, AOF with ``appendfsync always``, as the durable guarantees need) if the binary
is on ``PATH``; else the rows are skipped with the reason. Every key the benchmark writes
is under a prefix of its own run, deleted at the end (the server is never flushed).
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

URL_ENV = "TOOLCALL_TRACKER_REDIS_URL"


class RedisBench:
    """One run's keys on one Redis server: journals and stores under the run's prefix,
    the server's CPU time, the follower."""

    def __init__(self, url: str, where: str) -> None:
        import redis

        self.url = url
        self.where = where
        self.prefix = f"toolcall-tracker-bench:{uuid.uuid4().hex}:"
        self.client = redis.Redis.from_url(url)

    def open_pair(self, label: str, batch_ms: float | None) -> tuple[Any, Any]:
        """A journal and an outcome store of their own (the benchmark's ``Opener``)."""
        from toolcall_tracker.durable import RedisJournal, RedisOutcomeStore

        prefix = f"{self.prefix}{label}:"
        return (
            RedisJournal(self.url, batch_ms=batch_ms, prefix=prefix),
            RedisOutcomeStore(self.url, prefix=prefix),
        )

    def server_cpu(self) -> float:
        """The server's CPU seconds so far (``INFO cpu``: user + system, main thread and
        its I/O threads; other clients of a shared server count too)."""
        info = self.client.info("cpu")
        return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])

    def settings(self) -> str:
        """The server's version and persistence settings, as far as it tells."""
        version = self.client.info("server").get("redis_version", "?")
        try:
            config = self.client.config_get("appendonly") | self.client.config_get("appendfsync")
            persistence = f"appendonly {config['appendonly']}, appendfsync {config['appendfsync']}"
        except Exception:  # a managed server may refuse CONFIG
            persistence = "persistence settings not readable"
        return f"Redis {version} ({self.where}; {persistence})"

    def follow_latency(self, count: int, spacing: float, backend: str) -> list[float]:
        """Seconds from ``append_event`` (the journal's every-event level: one ``XADD``
        each) to a follower (``RedisJournal.follow``, ``XREAD BLOCK``) in another thread
        with its own event loop on ``backend`` seeing the event, for ``count`` events sent
        ``spacing`` seconds apart."""
        from toolcall_tracker.durable import RedisJournal

        prefix, turn = f"{self.prefix}follow-{backend}:", "follow"
        sent: dict[str, float] = {}
        seen: dict[str, float] = {}
        attached = threading.Event()
        failed: list[BaseException] = []

        async def follow() -> None:
            async with RedisJournal(self.url, prefix=prefix) as journal:
                async for record in journal.follow(turn, timeout=60.0):
                    now = time.perf_counter()
                    attached.set()  # it read the first record: it is following
                    if record.kind == "events":
                        for item in record.data:
                            if item[0] == "s":
                                seen.setdefault(item[1], now)
                    if len(seen) == count:
                        return

        def follower() -> None:
            try:
                anyio.run(follow, backend=backend)
            except BaseException as exc:  # reported by the writer
                failed.append(exc)
                attached.set()

        async def write() -> None:
            async with RedisJournal(self.url, prefix=prefix) as journal:
                journal.append(turn, "limits", {"limits": {}})
                await journal.commit()
                thread = threading.Thread(target=follower)
                thread.start()
                await anyio.to_thread.run_sync(attached.wait)
                for number in range(count):
                    key = f"e{number}"
                    sent[key] = time.perf_counter()
                    journal.append_event(turn, ["s", key, "probe"])
                    await anyio.sleep(spacing)  # pacing: one event at a time
                journal.append_event(turn, ["e", True, None])
                await journal.commit()
                await anyio.to_thread.run_sync(thread.join)

        anyio.run(write)
        if failed:
            raise failed[0]
        return [seen[key] - sent[key] for key in sent]

    def close(self) -> None:
        """Delete every key of this run, then disconnect."""
        try:
            keys = list(self.client.scan_iter(match=f"{self.prefix}*", count=1000))
            if keys:
                self.client.delete(*keys)
        finally:
            self.client.close()


@contextmanager
def redis_bench(url: str | None, report: Callable[[str], None]) -> Iterator[RedisBench | None]:
    """The Redis rows' server: ``url``, else ``$TOOLCALL_TRACKER_REDIS_URL``, else a
    private ``redis-server``; ``None`` (with the reason reported) if there is none. A URL
    given but unusable is an error, not a skip."""
    url = url or os.environ.get(URL_ENV) or None
    try:
        import redis  # noqa: F401
    except ImportError:
        if url:
            raise SystemExit(
                f"a Redis URL was given ({url}), but redis-py is not installed: "
                "pip install 'toolcall-tracker[redis]'"
            ) from None
        report("Redis rows skipped: no redis-py (pip install 'toolcall-tracker[redis]')")
        yield None
        return
    if url:
        bench = RedisBench(url, f"at {url}")
        try:
            yield bench
        finally:
            bench.close()
        return
    if shutil.which("redis-server") is None:
        report(f"Redis rows skipped: no --redis URL, no ${URL_ENV}, and no redis-server on PATH")
        yield None
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from _redis import RedisServer

    with RedisServer() as server:
        bench = RedisBench(server.url, "a private redis-server on loopback")
        try:
            yield bench
        finally:
            bench.close()
