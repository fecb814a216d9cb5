"""Shared fixtures: every async test runs on asyncio and on trio.

Async tests are written with pytest-asyncio's plugin disabled for them: they are plain
functions marked ``@pytest.mark.anyio`` and take the ``anyio_backend`` fixture, which runs
each test once per backend. Bound every async test with ``anyio.fail_after`` (the
``deadline`` constant below) so that a hang fails the test instead of stalling CI.
"""

from __future__ import annotations

import gc
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

DEADLINE = 10.0
"""Seconds an async test may take before ``anyio.fail_after`` fails it."""


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def no_collector() -> Iterator[None]:
    """The garbage collector off for the test (collected once first): what the test's
    objects leave alive then is held by a reference cycle."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


# -- Redis ----------------------------------------------------------------------------------

REDIS_URL_ENV = "TOOLCALL_TRACKER_REDIS_URL"
"""A Redis server the tests may use (``.ci/run`` sets it to the server it started)."""
REQUIRE_REDIS_ENV = "TOOLCALL_TRACKER_REQUIRE_REDIS"
"""Set (as in CI): the Redis tests fail, rather than skip, without a server."""


def _no_redis(reason: str) -> None:
    if os.environ.get(REQUIRE_REDIS_ENV) or os.environ.get("CI") == "true":
        pytest.fail(f"{reason}, and {REQUIRE_REDIS_ENV} or CI=true requires it", pytrace=False)
    pytest.skip(f"no Redis: {reason}")


def need_redis_server() -> None:
    """Skip (or fail, in CI) unless redis-py and a ``redis-server`` binary are here: for
    tests that start (and kill) private servers of their own."""
    try:
        import redis  # noqa: F401
    except ImportError:
        _no_redis("redis-py is not installed (pip install 'toolcall-tracker[redis]')")
    from _redis import redis_server_binary

    if redis_server_binary() is None:
        _no_redis("no redis-server on PATH (apt-get install redis-server)")


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A Redis server's URL: ``$TOOLCALL_TRACKER_REDIS_URL``, else a private
    ``redis-server`` on a free loopback port for this session, else a skip (a failure
    when ``$TOOLCALL_TRACKER_REQUIRE_REDIS`` is set or ``CI=true``). Tests share it: each
    one keeps its keys under its own ``redis_prefix``; never flush it."""
    try:
        import redis  # noqa: F401
    except ImportError:
        _no_redis("redis-py is not installed (pip install 'toolcall-tracker[redis]')")
    url = os.environ.get(REDIS_URL_ENV)
    if url:
        yield url
        return
    from _redis import RedisServer, redis_server_binary

    if redis_server_binary() is None:
        _no_redis(f"no redis-server on PATH and {REDIS_URL_ENV} is not set")
    with RedisServer() as server:
        yield server.url


@pytest.fixture
def redis_prefix(redis_url: str) -> Iterator[str]:
    """A key prefix of this test's own on the shared server; its keys are deleted after."""
    import redis

    prefix = f"toolcall-tracker-test:{uuid.uuid4().hex}:"
    yield prefix
    client = redis.Redis.from_url(redis_url)
    try:
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        if keys:
            client.delete(*keys)
    except redis.RedisError:  # a test that killed the server: its keys went with it
        pass
    finally:
        client.close()


@pytest.fixture(params=["sqlite", "redis"])
async def durable(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    """The journals and stores of one backend (``_backends.Durable``): each test using it
    runs on SQLite and on Redis (a real server; skipped or failed as ``redis_url``).
    Only for async tests (anyio): what it made is closed on the test's event loop."""
    from _backends import Durable

    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
        made = Durable("redis", tmp_path, url, request.getfixturevalue("redis_prefix"))
    else:
        made = Durable("sqlite", tmp_path)
    yield made
    await made.aclose()
