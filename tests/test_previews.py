"""Previews of streaming arguments: best-effort values, a bounded number of parses per call
whatever the fragments, never an exception, and nothing of them reaches the runner."""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import DEADLINE
from toolcall_tracker import Status, ToolCall, ToolCallStateMachine, ToolCallTracker
from toolcall_tracker.previews import ArgsPreview, ArgsPreviews
from toolcall_tracker.runner import ToolRunner, run_turn


def snapshot(machine: ToolCallStateMachine, call_id: str) -> ToolCall:
    call = machine.get(call_id)
    assert call is not None
    return call


def still_clock() -> Any:
    return lambda: 0.0


def bound(chars: int, growth: float = 0.5) -> int:
    """Parses allowed by growth alone: one at the first fragment, then one per x1.5."""
    return 2 + int(math.log(max(chars, 1)) / math.log(1 + growth))


def feed(machine: ToolCallStateMachine, call_id: str, fragments: list[str]) -> None:
    machine.write_start(call_id, "write_file")
    for fragment in fragments:
        machine.write_delta(call_id, fragment)


@st.composite
def fragmented(draw: Any, text: st.SearchStrategy[str]) -> list[str]:
    whole = draw(text)
    cuts = sorted(draw(st.sets(st.integers(0, len(whole)), max_size=60)))
    bounds = [0, *cuts, len(whole)]
    return [whole[a:b] for a, b in itertools.pairwise(bounds) if b > a]


JSONISH = st.text(alphabet='{}[]":,.-+eE0123456789 tnrufals\\abc\u00e9\ud800\n', max_size=400)
VALID = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
).map(json.dumps)


@settings(max_examples=200, deadline=None)
@given(fragments=fragmented(JSONISH | VALID | st.text(max_size=300)))
def test_previews_never_raise_and_parse_a_bounded_number_of_times(fragments: list[str]) -> None:
    machine = ToolCallStateMachine()
    seen: list[ArgsPreview] = []
    previews = ArgsPreviews(machine, clock=still_clock(), on_preview=seen.append)
    feed(machine, "c", fragments)
    chars = sum(map(len, fragments))
    assert previews.parses("c") <= bound(chars)
    for preview in seen:
        assert preview.call_id == "c"
        assert 0 < preview.chars <= chars


@settings(max_examples=100, deadline=None)
@given(fragments=fragmented(VALID), step=st.floats(0.0, 0.2))
def test_the_interval_adds_at_most_one_parse_per_interval(
    fragments: list[str], step: float
) -> None:
    ticks = iter(range(1 << 30))
    clock = lambda: next(ticks) * step  # noqa: E731
    machine = ToolCallStateMachine()
    previews = ArgsPreviews(machine, interval=0.1, clock=clock)
    feed(machine, "c", fragments)
    readings = next(ticks)  # each clock reading advanced ``step``
    chars = sum(map(len, fragments))
    assert previews.parses("c") <= bound(chars) + readings * step / 0.1 + 1


def test_a_one_megabyte_call_in_one_character_fragments_is_parsed_rarely() -> None:
    machine = ToolCallStateMachine()
    previews = ArgsPreviews(machine, clock=still_clock())
    text = json.dumps({"path": "big.txt", "content": "x" * 1_000_000})
    feed(machine, "big", list(text))
    assert previews.parses("big") <= bound(len(text))  # about 36, not a million
    preview = previews.preview("big")
    assert preview is not None
    assert preview.value["path"] == "big.txt"


def test_a_preview_shows_the_keys_so_far_and_ends_with_the_call() -> None:
    machine = ToolCallStateMachine()
    previews = ArgsPreviews(machine, clock=still_clock())
    feed(machine, "w", ['{"path": "report.md"', ', "content": "# Rep'])
    preview = previews.preview("w")
    assert preview is not None
    assert preview.value["path"] == "report.md"
    assert previews.previews() == {"w": preview}
    assert snapshot(machine, "w").args is None  # the core call never holds a partial value
    machine.write_delta("w", 'ort"}')
    machine.write_ready("w")
    assert previews.preview("w") is None  # ready: its args are the real thing
    assert snapshot(machine, "w").args == {"path": "report.md", "content": "# Report"}
    previews.close()
    feed(machine, "x", ['{"a": 1'])
    assert previews.preview("x") is None


def test_invalid_settings_and_a_failing_callback() -> None:
    machine = ToolCallStateMachine()
    with pytest.raises(ValueError, match="growth"):
        ArgsPreviews(machine, growth=0)
    with pytest.raises(ValueError, match="interval"):
        ArgsPreviews(machine, interval=-1)

    def boom(preview: ArgsPreview) -> None:
        raise RuntimeError("ui crashed")

    previews = ArgsPreviews(machine, on_preview=boom)
    feed(machine, "c", ['{"a": 1', "}"])  # the machine is not disturbed
    assert snapshot(machine, "c").status is Status.PENDING
    assert previews.parses("c") >= 1


@pytest.mark.anyio
async def test_previews_while_the_runner_runs(anyio_backend: str) -> None:
    got: list[Any] = []

    def write_file(path: str, content: str) -> int:
        return len(content)

    async def stream() -> Any:
        yield {"type": "start", "id": "w", "name": "write_file"}
        text = json.dumps({"path": "a.md", "content": "y" * 500})
        for start in range(0, len(text), 7):
            yield {"type": "delta", "id": "w", "argsTextDelta": text[start : start + 7]}
        yield {"type": "ready", "id": "w"}
        yield {"type": "end"}

    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            previews = ArgsPreviews(tracker, on_preview=lambda p: got.append(p.value))
            calls = await run_turn(tracker, stream(), ToolRunner([write_file], eager=True))
    assert calls[0].result == 500
    assert calls[0].args == {"path": "a.md", "content": "y" * 500}
    assert any(value.get("path") == "a.md" for value in got)
    assert previews.previews() == {}
