"""The wrong-adapter check: every (format, adapter) pair, on real recordings.

Each real recording (the project's own under ``tests/fixtures/recorded/``, and those of
``../shared/real-streams/`` when that folder is there; ``TOOLCALL_REAL_STREAMS`` may point
at it) is fed to every registered adapter:

- an adapter that reads the recording's format (its own, or one it accepts: LiteLLM's and
  Mistral's chunks through the Chat adapter) never warns, and its turn's end reason is its
  own;
- any other adapter warns once, at WARNING, and ends the turn not ok with the reason that
  names the adapter to use ("these items look like Anthropic events; use AnthropicAdapter").
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from test_real_streams import load_items as load_decoded

from conftest import DEADLINE
from toolcall_tracker import ToolCallTracker, tool_call_streaming_state_machine
from toolcall_tracker._recognise import WINDOW, item_format, reads, tally
from toolcall_tracker._registry import Provider, get, providers
from toolcall_tracker.adapters import AnthropicAdapter, OpenAIChatAdapter, adapt, apply_stream

OWN = Path(__file__).parents[1] / "fixtures" / "recorded"
SHARED = Path(
    os.environ.get("TOOLCALL_REAL_STREAMS")
    or Path(__file__).parents[2].parent / "shared" / "real-streams"
)
SUFFIXES = (".sse", ".jsonl", ".json", ".txt")


def load_items(path: Path) -> list[Any]:
    """The items: JSON values decoded, or a line protocol's lines (``.txt``) as text."""
    if path.suffix == ".txt":
        return [line for line in path.read_text(encoding="utf-8").splitlines() if line]
    return load_decoded(path)


def recordings() -> list[Path]:
    roots = [OWN, SHARED / "recorded", SHARED / "new-formats"]
    found: list[Path] = []
    for root in roots:
        if root.is_dir():
            found += sorted(p for p in root.glob("*/*") if p.suffix in SUFFIXES)
    return found


def fmt_of(items: list[Any]) -> str:
    """The recording's format: what most of its items are distinctive of."""
    votes = tally(items)
    assert votes, "no item of the recording is recognised"
    return max(votes, key=lambda fmt: votes[fmt])


ADAPTED = [provider for provider in providers() if provider.adapter is not None]
RECORDINGS = recordings()
ROOT = {OWN: "own", SHARED: "shared"}


def _name(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def test_the_project_s_own_recordings_are_there() -> None:
    assert len([p for p in RECORDINGS if OWN in p.parents]) >= 31


@pytest.mark.parametrize("adapter", ADAPTED, ids=lambda provider: provider.format)
@pytest.mark.parametrize("path", RECORDINGS, ids=_name)
def test_every_format_through_every_adapter(
    path: Path, adapter: Provider, caplog: pytest.LogCaptureFixture
) -> None:
    items = load_items(path)
    fmt = fmt_of(items)
    machine = tool_call_streaming_state_machine()
    right = get(fmt)
    reason = f"these items look like {right.title}; use {right.adapter_name}"
    if isinstance(items[0], str) and adapter.format.startswith("openai"):
        # the OpenAI adapters refuse text lines outright: the TypeError names the fix
        with pytest.raises(TypeError, match=f"; {re.escape(reason)}$"):
            apply_stream(machine, items, adapter.load("adapter")())
        return
    with caplog.at_level(logging.WARNING, logger="toolcall_tracker"):
        apply_stream(machine, items, adapter.load("adapter")())
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert machine.end is not None
    if reads(adapter, fmt):
        assert warnings == []
        assert "look like" not in (machine.end.reason or "")
        return
    assert warnings == [reason]
    assert machine.end.ok is False
    assert machine.end.reason == reason


def test_the_check_covers_every_format_and_adapter() -> None:
    """Every adapter's own format is among the recordings, so every pair is tested."""
    if not (SHARED / "recorded").is_dir():
        pytest.skip(f"{SHARED} is absent")
    formats = {fmt_of(load_items(path)) for path in RECORDINGS}
    assert {provider.format for provider in ADAPTED} <= formats | {"mistral", "ai-sdk-v4"}


def test_items_of_no_known_format_say_so(caplog: pytest.LogCaptureFixture) -> None:
    machine = tool_call_streaming_state_machine()
    lines = [f"data: {n}" for n in range(20)]
    with caplog.at_level(logging.WARNING, logger="toolcall_tracker"):
        apply_stream(machine, lines, AnthropicAdapter())
    reason = (
        f"none of the first {WINDOW} items is one AnthropicAdapter reads (Anthropic events), "
        "nor one of any format this library knows"
    )
    assert [r.getMessage() for r in caplog.records] == [reason]
    assert machine.end is not None
    assert machine.end.reason == reason


def test_one_understood_item_in_the_window_silences_the_check(
    caplog: pytest.LogCaptureFixture,
) -> None:
    chunk = {"object": "chat.completion.chunk", "choices": []}
    items: list[Any] = [{"unknown": n} for n in range(WINDOW - 1)] + [chunk]
    with caplog.at_level(logging.WARNING, logger="toolcall_tracker"):
        apply_stream(tool_call_streaming_state_machine(), items, OpenAIChatAdapter())
    assert caplog.records == []


def test_seed_events_through_an_adapter_point_at_consume(
    caplog: pytest.LogCaptureFixture,
) -> None:
    machine = tool_call_streaming_state_machine()
    with caplog.at_level(logging.WARNING, logger="toolcall_tracker"):
        apply_stream(machine, [{"type": "start", "id": "a", "name": "f"}], OpenAIChatAdapter())
    assert machine.end is not None
    assert machine.end.reason == (
        "these items look like tracker events; pass them to tracker.consume() without adapt()"
    )


@pytest.mark.anyio
async def test_adapt_warns_once_and_ends_the_turn_with_the_reason(
    anyio_backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    anthropic = [
        {"type": "message_start", "message": {"id": "m"}},
        {"type": "ping"},
    ] * WINDOW  # more than the window: still one warning
    with anyio.fail_after(DEADLINE), caplog.at_level(logging.WARNING, logger="toolcall_tracker"):
        async with ToolCallTracker() as tracker:
            await tracker.consume(adapt(anthropic, OpenAIChatAdapter()))
        events = [event async for event in adapt(anthropic, OpenAIChatAdapter())]
    reason = "these items look like Anthropic events; use AnthropicAdapter"
    assert tracker.end is not None
    assert tracker.end.ok is False
    assert tracker.end.reason == reason
    assert events[-1].type == "end"
    assert events[-1].reason == reason  # type: ignore[union-attr]
    assert [r.getMessage() for r in caplog.records] == [reason, reason]  # once per stream


def test_recognition_never_raises_on_odd_items() -> None:
    class Hostile:
        def __getattr__(self, name: str) -> Any:
            raise RuntimeError(name)

    for value in (None, 1, "0:x", b"{}", [], {}, Hostile(), {"type": 3}, {"choices": 1}):
        item_format(value)  # no exception: at most "nothing"


@pytest.mark.anyio
async def test_text_lines_through_an_openai_adapter_name_the_fit(anyio_backend: str) -> None:
    lines = ['9:{"toolCallId":"c1","toolName":"f","args":{}}', 'd:{"finishReason":"stop"}']
    fix = "these items look like AI SDK v4 data stream lines; use AISDKDataStreamAdapter"
    with anyio.fail_after(DEADLINE):
        with pytest.raises(TypeError, match=f"got str: .*; {fix}$"):
            [event async for event in adapt(lines, OpenAIChatAdapter())]
        async with ToolCallTracker() as tracker:
            with pytest.raises(TypeError, match=f"; {fix}$"):
                await tracker.consume(adapt(lines, OpenAIChatAdapter()))
