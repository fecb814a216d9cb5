"""examples/durable.py runs on both backends, with its journal and store in SQLite (the
default) and on a real Redis server (``--redis URL``): a turn killed with SIGKILL,
restored and finished in another process, with the lookup kept and the gated refund never
run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "durable.py"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("where", ["sqlite", "redis"])
def test_the_durable_example(backend: str, where: str, request: pytest.FixtureRequest) -> None:
    options = []
    if where == "redis":
        url, prefix = request.getfixturevalue("redis_url"), request.getfixturevalue("redis_prefix")
        options = ["--redis", url, "--prefix", prefix]
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--backend", backend, *options],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "process 1 killed (exit -9)" in out
    assert "stream cut: True" in out
    assert "c1 lookup_order: done -> {'order': 'A-17', 'total': 42.5}" in out
    assert "c2 refund: error -> not_executed" in out
    assert "tools that really ran: ['lookup_order A-17']" in out
    if where == "redis":
        assert f"journal: Redis stream {prefix}turn:turn-" in out
    else:
        assert "replay it: toolcall-tracker replay sqlite:///" in out
