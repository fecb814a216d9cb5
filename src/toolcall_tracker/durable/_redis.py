"""One Redis server used by a journal or a store (private): URLs, the backend bridge, errors.

Theory of operation. redis-py's asyncio client runs on asyncio only; on trio (or any other
anyio backend) its blocking client runs on a worker thread. :class:`Connection` hides
which: :meth:`Connection.call` takes ``op(client)``, a function that issues commands on
*a* client (both clients have the same command methods; the asyncio one returns
awaitables), and runs it on the asyncio client when the running loop is asyncio's, else
on the blocking client in a worker thread under the connection's own limiter. Threads of
their own (a journal's writer, a store's lease keeper) call :meth:`Connection.run`.

Retries are off: a command whose answer was lost may or may not have happened, so a lost
connection is an error, never a silent second ``XADD``. After a lost connection the
asyncio client drops every pooled connection (the blocking client checks each one before
use), so a restarted server costs one failed command, not one per pooled connection.
Every redis-py error (and ``OSError``) comes out as :class:`DurableError` naming the
server (password hidden) and what could not be done, the cause chained.

redis-py is imported here, lazily: without it, opening a Redis journal or store raises an
``ImportError`` naming ``pip install 'toolcall-tracker[redis]'``.
"""

from __future__ import annotations

import asyncio
import contextlib
import urllib.parse
from collections.abc import Callable
from typing import Any, Final, TypeVar

import anyio
import anyio.to_thread

from ._protocol import DurableError

__all__ = ["Connection", "check_url", "key_bytes", "on_asyncio", "redis_module", "shown_url"]

_T = TypeVar("_T")
_SCHEMES: Final = ("redis", "rediss", "unix")
SOCKET_TIMEOUT: Final = 10.0
"""Seconds a command may wait for the server's answer before it fails (a blocking read
waits at most half of it per round)."""


def redis_module() -> Any:
    """redis-py, imported now (an ``ImportError`` naming the extra without it)."""
    try:
        import redis
        import redis.asyncio
    except ImportError as exc:  # pragma: no cover (the tests have redis-py)
        raise ImportError(
            "the Redis journal and store need redis-py: pip install 'toolcall-tracker[redis]'"
        ) from exc
    return redis


def on_asyncio() -> bool:
    """Whether the running event loop is asyncio's (else: trio, or none)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def shown_url(url: str) -> str:
    """``url`` with its password hidden (for messages)."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urllib.parse.urlunsplit(parts._replace(netloc=user + netloc))


def key_bytes(name: str) -> bytes:
    """A key as bytes: UTF-8, a lone surrogate (an id as the stream gave it) kept as its
    three bytes, so every id has its own key and none fails to encode."""
    return name.encode("utf-8", "surrogatepass")


def check_url(url: str) -> str:
    """``url`` if it names a Redis server, else a ``ValueError`` naming the forms."""
    if not isinstance(url, str) or urllib.parse.urlsplit(url).scheme not in _SCHEMES:
        raise ValueError(
            f"not a Redis URL: {url!r}; use redis://host:port/db, rediss://host:port/db "
            "(TLS) or unix:///path/to/redis.sock?db=N"
        )
    return url


class Connection:
    """The clients of one Redis server: asyncio's (per event loop) and a blocking one."""

    __slots__ = ("_aio", "_limiter", "_redis", "_sync", "_threads", "name", "url")

    def __init__(self, url: str, *, threads: int = 4) -> None:
        self._redis = redis_module()
        self.url = check_url(url)
        self.name = shown_url(url)
        self._sync: Any = None  # the blocking client, made on first use
        self._aio: tuple[asyncio.AbstractEventLoop, Any] | None = None
        self._limiter: anyio.CapacityLimiter | None = None
        self._threads = threads
        try:  # a malformed URL fails here, not at the first command
            self.sync_client()
        except (ValueError, TypeError) as exc:
            raise ValueError(f"not a usable Redis URL {self.name!r}: {exc}") from exc

    def sync_client(self) -> Any:
        """The blocking client (thread-safe: a connection pool)."""
        client = self._sync
        if client is None:
            redis = self._redis
            client = self._sync = redis.Redis.from_url(
                self.url,
                socket_timeout=SOCKET_TIMEOUT,
                retry=redis.retry.Retry(redis.backoff.NoBackoff(), 0),
            )
        return client

    def _aio_client(self) -> Any:
        loop = asyncio.get_running_loop()
        held = self._aio
        if held is not None and held[0] is loop:
            return held[1]
        redis = self._redis
        client = redis.asyncio.Redis.from_url(
            self.url,
            socket_timeout=SOCKET_TIMEOUT,
            retry=redis.asyncio.retry.Retry(redis.backoff.NoBackoff(), 0),
        )
        self._aio = (loop, client)
        return client

    def error(self, what: str, exc: BaseException) -> DurableError:
        """The :class:`DurableError` for ``exc`` raised while doing ``what``."""
        return DurableError(f"{what} failed on the Redis server {self.name}: {exc}")

    def run(self, what: str, op: Callable[[Any], _T]) -> _T:
        """``op(blocking client)`` now (blocking: call it from a thread)."""
        redis = self._redis
        try:
            return op(self.sync_client())
        except (redis.RedisError, OSError) as exc:
            raise self.error(what, exc) from exc

    async def call(self, what: str, op: Callable[[Any], Any]) -> Any:
        """``op(client)`` on the asyncio client under asyncio, else :meth:`run` on a worker
        thread (the event loop never waits for Redis)."""
        if on_asyncio():
            redis = self._redis
            client = self._aio_client()
            try:
                return await op(client)
            except (redis.RedisError, OSError) as exc:
                if isinstance(exc, (redis.ConnectionError, redis.TimeoutError, OSError)):
                    await _reset(client)
                raise self.error(what, exc) from exc
        limiter = self._limiter
        if limiter is None:
            limiter = self._limiter = anyio.CapacityLimiter(self._threads)
        return await anyio.to_thread.run_sync(self.run, what, op, limiter=limiter)

    def close(self) -> None:
        """Close the blocking client. An asyncio client can only be closed on its loop:
        by :meth:`aclose` (which may follow this)."""
        client, self._sync = self._sync, None
        if client is not None:
            client.close()

    async def aclose(self) -> None:
        """Close both clients (the asyncio one if it belongs to the running loop)."""
        held, self._aio = self._aio, None
        if held is not None and on_asyncio() and held[0] is asyncio.get_running_loop():
            await held[1].aclose()
        await anyio.to_thread.run_sync(self.close)


async def _reset(client: Any) -> None:
    """Drop the pooled connections of an asyncio client whose connection was lost."""
    with contextlib.suppress(Exception):  # closing dead sockets
        await client.connection_pool.disconnect()
