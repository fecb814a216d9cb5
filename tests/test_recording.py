"""The recorder (timed JSON Lines that ``replay`` reads): round trips on real recordings,
redaction, the size cap, closing on cancellation; and the testing helper that replays a
recording in a test.

The real recordings live in ``../shared/real-streams/recorded/`` (never copied into the
repository); their round-trip test skips when that folder is absent.
"""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import DEADLINE
from toolcall_tracker import ToolCallTracker
from toolcall_tracker.adapters import OpenAIChatAdapter, adapt
from toolcall_tracker.cli import main
from toolcall_tracker.cli._input import TextReader, read_items
from toolcall_tracker.recording import REDACTED, record, wire_json
from toolcall_tracker.runner import ToolRunner, run_turn
from toolcall_tracker.testing import Recording, load_recording, replay_recording

RECORDED = Path(__file__).resolve().parents[1].parent / "shared" / "real-streams" / "recorded"
FILES = sorted(
    str(path.relative_to(RECORDED))
    for path in RECORDED.glob("*/*")
    if path.suffix in (".sse", ".jsonl", ".json")
)


def ticking(step: float = 0.25) -> Any:
    """A clock that advances ``step`` seconds per reading."""
    ticks = iter(range(1 << 30))
    return lambda: 100.0 + next(ticks) * step


def replay_json(capsys: pytest.CaptureFixture[str], path: Path) -> Any:
    code = main(["replay", "--json", str(path)])
    out, _ = capsys.readouterr()
    assert code in (0, 1), code
    return json.loads(out)


@pytest.mark.skipif(not FILES, reason=f"{RECORDED} is absent")
@pytest.mark.parametrize("name", FILES)
def test_a_recording_replays_as_the_original(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = RECORDED / name
    with original.open("rb") as file:
        _, found = read_items(TextReader(file))
        items = [item.value for item in found]
    target = tmp_path / "turn.jsonl"
    assert list(record(items, target, clock=ticking())) == items  # passed through
    loaded = load_recording(target)
    assert loaded.items == items
    assert loaded.times == [0.25 * n for n in range(len(items))]
    assert not loaded.truncated
    want, got = replay_json(capsys, original), replay_json(capsys, target)
    assert got["container"] == "jsonl"
    for key in ("format", "calls", "end", "events"):
        assert got[key] == want[key], key


def chunks() -> list[dict[str, Any]]:
    return [
        {"id": "c", "choices": [{"index": 0, "delta": {"content": "my secret"}}]},
        {
            "id": "c",
            "choices": [{"index": 0, "delta": {"content": "more"}}],
            "usage": {"total_tokens": 5},
        },
    ]


def test_redaction_replaces_the_paths_in_the_file_only(tmp_path: Path) -> None:
    items = chunks()
    before = json.dumps(items)
    target = tmp_path / "r.jsonl"
    passed = list(record(items, target, redact=["choices.*.delta.content", "usage", "nope.x"]))
    assert json.dumps(passed) == before  # the items the code sees are untouched
    written = load_recording(target).items
    assert [c["choices"][0]["delta"]["content"] for c in written] == [REDACTED, REDACTED]
    assert written[1]["usage"] == REDACTED
    assert "secret" not in target.read_text()
    assert written[0]["id"] == "c"
    with pytest.raises(ValueError, match="empty key"):
        record(items, target, redact=["a..b"])


@pytest.mark.parametrize("cap", [256, 300, 1000, 5000])
def test_the_cap_bounds_the_file_and_ends_it_with_a_truncated_line(
    cap: int, tmp_path: Path
) -> None:
    items = [{"n": n, "pad": "x" * 40} for n in range(200)]
    target = tmp_path / "capped.jsonl"
    assert list(record(items, target, max_bytes=cap)) == items  # the stream goes on
    data = target.read_bytes()
    assert len(data) <= cap
    last = json.loads(data.decode().splitlines()[-1])
    loaded = load_recording(target)
    assert last["truncated"] is True
    assert last["items"] == len(loaded.items)
    assert loaded.truncated
    assert loaded.items == items[: len(loaded.items)]
    with pytest.raises(ValueError, match="at least 256"):
        record(items, target, max_bytes=100)


@pytest.mark.skipif(not FILES, reason=f"{RECORDED} is absent")
def test_replay_ends_a_truncated_recording_not_ok(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = RECORDED / "openai_chat" / "openai_gpt4o_parallel_two_calls.sse"
    with original.open("rb") as file:
        items = [item.value for item in read_items(TextReader(file))[1]]
    target = tmp_path / "capped.jsonl"
    list(record(items, target, max_bytes=2000))
    recorded = load_recording(target)
    assert recorded.truncated
    document = replay_json(capsys, target)
    assert document["items"] == len(recorded.items)  # the truncated line is no item
    assert document["end"] == {"ok": False, "reason": "the recording was truncated at its size cap"}
    assert document["ignored"] == []
    assert all(call["status"] == "error" for call in document["calls"])
    whole = replay_json(capsys, original)
    assert whole["end"]["ok"] is True


def test_a_file_object_is_flushed_and_left_open() -> None:
    out = io.StringIO()
    assert list(record(chunks(), out, clock=ticking(0.5))) == chunks()
    assert not out.closed
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["t"] for line in lines] == [0.0, 0.5]


def test_misuse_names_the_fix(tmp_path: Path) -> None:
    async def make() -> list[int]:
        return []

    coroutine = make()
    with pytest.raises(TypeError, match="await"):
        record(coroutine, tmp_path / "x")  # type: ignore[call-overload]
    coroutine.close()
    with pytest.raises(TypeError, match="iterable"):
        record(42, tmp_path / "x")  # type: ignore[call-overload]


def test_a_sync_consumer_stopping_early_closes_the_file_and_the_stream(tmp_path: Path) -> None:
    closed: list[bool] = []

    def source() -> Iterator[dict[str, int]]:
        try:
            for n in range(10):
                yield {"n": n}
        finally:
            closed.append(True)

    target = tmp_path / "s.jsonl"
    recorded = record(source(), target)
    for item in recorded:
        if item["n"] == 2:
            break
    recorded.close()  # type: ignore[attr-defined]
    assert closed == [True]
    assert load_recording(target).items == [{"n": 0}, {"n": 1}, {"n": 2}]


@pytest.mark.anyio
async def test_a_cancelled_async_recording_closes_cleanly(
    anyio_backend: str, tmp_path: Path
) -> None:
    closed: list[bool] = []
    third = anyio.Event()

    async def source() -> AsyncIterator[dict[str, int]]:
        try:
            for n in range(3):
                yield {"n": n}
            third.set()
            await anyio.sleep_forever()  # the model stalls
        finally:
            closed.append(True)

    target = tmp_path / "a.jsonl"
    seen: list[Any] = []

    async def consume() -> None:
        async for item in record(source(), target):
            seen.append(item)

    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await third.wait()
            tg.cancel_scope.cancel()
    assert closed == [True]
    assert seen == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert load_recording(target).items == seen  # every line complete


@pytest.mark.anyio
async def test_a_recorded_turn_replays_in_a_test(anyio_backend: str, tmp_path: Path) -> None:
    def weather(city: str) -> str:
        return f"sunny in {city}"

    call = {"index": 0, "id": "call_1", "function": {"name": "weather", "arguments": ""}}
    stream = [
        {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
        *(
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {"tool_calls": [{"index": 0, "function": {"arguments": part}}]},
                    }
                ]
            }
            for part in ('{"city"', ': "Oslo"}')
        ),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]

    async def live() -> AsyncIterator[dict[str, Any]]:
        for chunk in stream:
            yield chunk

    target = tmp_path / "turn.jsonl"
    runner = ToolRunner([weather], eager=True)
    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:  # production: record while running
            first = await run_turn(
                tracker, adapt(record(live(), target), OpenAIChatAdapter()), runner
            )
        for speed in (0.0, 1000.0):  # the test: replay the recording
            async with ToolCallTracker() as tracker:
                source = adapt(replay_recording(target, speed=speed), OpenAIChatAdapter())
                again = await run_turn(tracker, source, runner)
            assert [(c.id, c.args, c.result) for c in again] == [
                (c.id, c.args, c.result) for c in first
            ]
    assert first[0].result == "sunny in Oslo"
    with pytest.raises(ValueError, match="speed"):
        await replay_recording(Recording(), speed=-1).__anext__()


def test_load_recording_names_the_bad_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"t": 0, "item": {}}\n{"item": {}}\n')
    with pytest.raises(ValueError, match="line 2"):
        load_recording(bad)
    bad.write_text("nope\n")
    with pytest.raises(ValueError, match="line 1: not JSON"):
        load_recording(bad)


ODD_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.characters(codec=None), max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    items=st.lists(st.dictionaries(st.text(max_size=5), ODD_VALUES, max_size=4), max_size=20),
    cap=st.integers(256, 4000),
)
def test_any_items_record_within_the_cap_and_read_back(
    items: list[dict[str, Any]], cap: int, tmp_path: Path
) -> None:
    """NaN, infinities, lone surrogates: every item records (by the output rules), the
    file never passes the cap, and what was written reads back as a prefix."""
    target = tmp_path / "odd.jsonl"
    assert list(record(items, target, max_bytes=cap)) == items
    assert target.stat().st_size <= cap
    loaded = load_recording(target)
    wire = [wire_json(item) for item in items]
    assert loaded.items == wire[: len(loaded.items)]
    assert loaded.truncated is (len(loaded.items) < len(items))


@pytest.mark.parametrize("cap", range(256, 1400, 7))
def test_the_truncated_line_fits_when_the_count_and_the_time_grow(cap: int, tmp_path: Path) -> None:
    # The room kept for the last line must allow for a later, longer ``t`` and for the
    # item count gaining a digit (9 -> 10): found by hypothesis as a file 1 byte over.
    times = iter([0.0, *(0.5 + k * 1234.567891 for k in range(200))])
    items = [{"k": "x" * 40} for _ in range(30)]
    target = tmp_path / "grow.jsonl"
    assert list(record(items, target, max_bytes=cap, clock=lambda: next(times))) == items
    assert target.stat().st_size <= cap
    loaded = load_recording(target)
    assert loaded.items == items[: len(loaded.items)]
