"""Replay recordings in your own tests (pytest or any other runner).

A recording made with :func:`toolcall_tracker.recording.record` (timed JSON Lines) is a
regression test waiting to happen: :func:`replay_recording` serves its items as an async
stream, the way the provider sent them, so your adapter, tracker and tools run on
exactly what production saw::

    from toolcall_tracker.adapters import OpenAIChatAdapter, adapt
    from toolcall_tracker.testing import replay_recording

    async def test_the_weather_turn() -> None:
        async with ToolCallTracker() as tracker:
            source = adapt(replay_recording("tests/recordings/weather.jsonl"), OpenAIChatAdapter())
            calls = await run_turn(tracker, source, runner)
        assert calls[0].result == "sunny"

The items are the recorded wire JSON (dicts), which every adapter reads as it reads the
SDKs' objects. ``speed=0`` (the default) replays as fast as possible; ``speed=1`` at the
recorded pace (a test of timeouts or of head start may want it), ``speed=10`` ten times
faster.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio

__all__ = ["Recording", "load_recording", "replay_recording"]


@dataclass(frozen=True)
class Recording:
    """A recording read back.

    Attributes:
        items: the recorded items (wire JSON), in order.
        times: each item's ``t``, seconds since the first item.
        truncated: whether the recording hit its size cap (items after it are missing).
    """

    items: list[Any] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    truncated: bool = False


def load_recording(path: str | os.PathLike[str]) -> Recording:
    """Read a recording (timed JSON Lines, as :func:`~toolcall_tracker.recording.record`
    writes them; blank lines are skipped).

    Raises:
        ValueError: a line is not JSON, or not ``{"t": seconds, "item": ...}`` nor the
            last ``{"truncated": true, ...}`` line (the message names the line).
    """
    items: list[Any] = []
    times: list[float] = []
    truncated = False
    with open(path, encoding="utf-8") as file:
        for number, text in enumerate(file, 1):
            if not text.strip():
                continue
            if truncated:
                raise ValueError(f"{path}: line {number}: a line after the 'truncated' line")
            try:
                line = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: line {number}: not JSON ({exc.msg})") from None
            if isinstance(line, dict) and line.get("truncated") is True:
                truncated = True
                continue
            t = line.get("t") if isinstance(line, dict) else None
            if not (isinstance(line, dict) and line.keys() == {"t", "item"}) or not _seconds(t):
                raise ValueError(
                    f'{path}: line {number}: not a timed item {{"t": seconds, "item": ...}}'
                )
            items.append(line["item"])
            times.append(float(line["t"]))
    return Recording(items, times, truncated)


async def replay_recording(
    recording: str | os.PathLike[str] | Recording, *, speed: float = 0.0
) -> AsyncIterator[Any]:
    """The recording's items as an async stream (for ``adapt(...)`` or ``consume``).

    Args:
        recording: a path, or a :class:`Recording` already loaded.
        speed: ``0`` (default): no waiting; else play ``speed`` times faster than recorded.

    Raises:
        ValueError: ``speed`` is negative or not finite, or the file is not a recording
            (see :func:`load_recording`); raised when the first item is asked for.
    """
    if not (isinstance(speed, int | float) and math.isfinite(speed) and speed >= 0):
        raise ValueError(f"speed must be a finite number >= 0, not {speed!r}")
    loaded = recording if isinstance(recording, Recording) else load_recording(recording)
    started = anyio.current_time()
    for item, t in zip(loaded.items, loaded.times, strict=True):
        if speed:
            await anyio.sleep_until(started + t / speed)
        else:
            await anyio.lowlevel.checkpoint()
        yield item


def _seconds(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )
