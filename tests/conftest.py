"""Shared fixtures: every async test runs on asyncio and on trio.

Async tests are written with pytest-asyncio's plugin disabled for them: they are plain
functions marked ``@pytest.mark.anyio`` and take the ``anyio_backend`` fixture, which runs
each test once per backend. Bound every async test with ``anyio.fail_after`` (the
``deadline`` constant below) so that a hang fails the test instead of stalling CI.
"""

from __future__ import annotations

import pytest

DEADLINE = 10.0
"""Seconds an async test may take before ``anyio.fail_after`` fails it."""


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)
