"""The Redis rows of ``benchmarks/journal.py``: which server, the journals, the follower.

The server is the one at ``--redis URL`` (or ``$TOOLCALL_TRACKER_REDIS_URL``); without one,
a private ``redis-server`` (``tests/_redis.py``: a free loopback port, its own data
directory, AOF with ``appendfsync always``, as the durable guarantees need) if the binary
is on ``PATH``; else the rows are skipped with the reason. Every key the benchmark writes
is under a prefix of its own run, deleted at the end (the server is never flushed).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import aclosing, contextmanager
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
        try:
            self.client.ping()
        except redis.RedisError as exc:
            self.client.close()
            raise SystemExit(f"the Redis server at {url} cannot be used: {exc}") from exc

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

    def follow_latency(self, count: int, spacing: float, backend: str | None) -> list[float]:
        """Seconds from ``append_event`` (the journal's every-event level: its writer
        thread sends one ``XADD`` each) to a follower in another process
        (``RedisJournal.follow``: ``XREAD BLOCK``, on ``backend``) seeing the event, for
        ``count`` events sent ``spacing`` seconds apart. ``backend`` None: the baseline with
        no journal, redis-py's ``XADD`` to its asyncio client's ``XREAD BLOCK``. Both clocks
        are the system's ``CLOCK_MONOTONIC``."""
        from toolcall_tracker.durable import RedisJournal

        turn = f"follow-{uuid.uuid4().hex}"
        key = f"{self.prefix}raw-{turn}"
        sent: dict[str, float] = {}
        journal = RedisJournal(self.url, prefix=self.prefix)
        raw = backend is None
        logs: list[Any] = []

        def send(item: list[Any]) -> None:
            if raw:
                self.client.xadd(key, {"item": json.dumps(item)})
            else:
                logs[0].append_event(item)

        async def write() -> str:
            async with journal:
                logs.append(await journal.create(turn, {"limits": {}}))
                args = [sys.executable, __file__, str(count), self.url, key, "raw"]
                if backend is not None:
                    args[4:] = [self.prefix, turn, backend]
                else:  # the first entry, as the journal's limits record
                    self.client.xadd(key, {"item": "[]"})
                popen = functools.partial(subprocess.Popen, stdout=subprocess.PIPE, text=True)
                child = await anyio.to_thread.run_sync(popen, args)
                assert child.stdout is not None
                try:
                    said = await anyio.to_thread.run_sync(child.stdout.readline)
                    if said != "following\n":  # it failed (its error is above)
                        raise SystemExit(f"the follower process failed: {said!r}")
                    for number in range(count):
                        sent[f"e{number}"] = now()
                        send(["s", f"e{number}", "probe"])
                        await anyio.sleep(spacing)  # pacing: one event at a time
                    send(["e", True, None])  # the follower stops
                    await journal.commit()
                    out, _ = await anyio.to_thread.run_sync(child.communicate, None, 60.0)
                finally:
                    if child.poll() is None:
                        child.kill()
                    child.wait()
                return str(out)

        seen = json.loads(anyio.run(write))
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


def now() -> float:
    """The system's monotonic clock (the same in every process)."""
    return time.clock_gettime(time.CLOCK_MONOTONIC)


async def follower(count: int, url: str, prefix: str, turn: str) -> None:
    """Follow ``turn`` until ``count`` events were seen; print ``following`` once attached,
    then when each ``start`` event was seen (JSON: its call id -> :func:`now`)."""
    from toolcall_tracker.durable import RedisJournal

    seen: dict[str, float] = {}
    async with (
        RedisJournal(url, prefix=prefix) as journal,
        aclosing(journal.follow(turn, timeout=120.0)) as records,
    ):
        async for record in records:
            at = now()
            if record.kind == "limits":
                print("following", flush=True)
            elif record.kind == "events":
                for item in record.data:
                    if item[0] == "s":
                        seen.setdefault(item[1], at)
            if len(seen) == count:
                break
    print(json.dumps(seen), flush=True)


async def raw_follower(count: int, url: str, key: str) -> None:
    """The baseline: redis-py's asyncio client reading stream ``key`` with ``XREAD
    BLOCK`` until ``count`` events or an ``end`` item; prints as :func:`follower` does."""
    import redis.asyncio

    seen: dict[str, float] = {}
    client = redis.asyncio.Redis.from_url(url)
    last, ended = "0-0", False
    while not ended and len(seen) < count:
        reply = await client.xread({key: last}, count=1000, block=10_000)
        at = now()
        for _, page in reply or ():
            for entry, fields in page:
                last, item = entry, json.loads(fields[b"item"])
                if not item:
                    print("following", flush=True)
                elif item[0] == "s":
                    seen.setdefault(item[1], at)
                ended = ended or item[:1] == ["e"]
    await client.aclose()
    print(json.dumps(seen), flush=True)


if __name__ == "__main__":  # a follower: COUNT URL PREFIX TURN BACKEND, or COUNT URL KEY raw
    if sys.argv[4] == "raw":
        anyio.run(raw_follower, int(sys.argv[1]), *sys.argv[2:4], backend="asyncio")
    else:
        anyio.run(follower, int(sys.argv[1]), *sys.argv[2:5], backend=sys.argv[5])
