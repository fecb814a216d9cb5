"""``ToolCallTracker.on_close``: callbacks run once, synchronously, when the tracker closes."""

from __future__ import annotations

import logging

import anyio
import pytest

from conftest import DEADLINE
from toolcall_tracker import End, ToolCallTracker

pytestmark = pytest.mark.anyio


async def test_a_callback_runs_once_when_the_tracker_closes(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        told: list[tuple[str, bool, End | None]] = []
        tracker.on_close(lambda: told.append(("a", tracker.closed, tracker.end)))
        tracker.on_close(lambda: told.append(("b", tracker.closed, tracker.end)))
        assert told == []
        await tracker.aclose()
        await tracker.aclose()  # closing twice tells nobody twice
        # In registration order, after the tracker refused events and ended the turn.
        assert [(name, closed) for name, closed, _ in told] == [("a", True), ("b", True)]
        assert all(end is not None and not end.ok for _, _, end in told)


async def test_an_unregistered_callback_is_not_called(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        told: list[str] = []
        unregister = tracker.on_close(lambda: told.append("gone"))
        tracker.on_close(lambda: told.append("kept"))
        unregister()
        unregister()  # twice is harmless
        await tracker.aclose()
        assert told == ["kept"]


async def test_on_a_closed_tracker_the_callback_runs_at_once(anyio_backend: str) -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        await tracker.aclose()
        told: list[str] = []
        unregister = tracker.on_close(lambda: told.append("now"))
        assert told == ["now"]
        unregister()


async def test_a_callback_that_raises_is_logged_and_the_others_run(
    anyio_backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    with anyio.fail_after(DEADLINE):
        tracker = ToolCallTracker()
        told: list[str] = []

        def broken() -> None:
            raise RuntimeError("boom")

        tracker.on_close(broken)
        tracker.on_close(lambda: told.append("after"))
        with caplog.at_level(logging.ERROR, logger="toolcall_tracker"):
            await tracker.aclose()
        assert told == ["after"]
        assert tracker.closed
        assert "a close callback raised" in caplog.text
