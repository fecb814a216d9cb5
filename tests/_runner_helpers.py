"""Helpers shared by the runner and tool tests (not a test module)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from toolcall_tracker import ToolCall, ToolCallTracker


def call_events(call_id: str, name: str, args: Any = None) -> list[dict[str, Any]]:
    """start, one delta per half of the argument text, ready (``args`` as JSON unless str)."""
    text = args if isinstance(args, str) else json.dumps({} if args is None else args)
    half = len(text) // 2
    return [
        {"type": "start", "id": call_id, "name": name},
        {"type": "delta", "id": call_id, "argsTextDelta": text[:half]},
        {"type": "delta", "id": call_id, "argsTextDelta": text[half:]},
        {"type": "ready", "id": call_id},
    ]


async def from_list(events: Iterable[Any]) -> AsyncIterator[Any]:
    """An async source over a list of events."""
    for event in events:
        yield event


def by_id(calls: Iterable[ToolCall]) -> dict[str, ToolCall]:
    return {call.id: call for call in calls}


def snapshot(tracker: ToolCallTracker, call_id: str) -> ToolCall:
    call = tracker.get(call_id)
    assert call is not None, call_id
    return call


def recorder() -> tuple[list[str], Callable[[str], None]]:
    log: list[str] = []
    return log, log.append
