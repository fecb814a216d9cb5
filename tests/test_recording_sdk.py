"""The recorder on the official SDKs' typed stream objects (openai ``ChatCompletionChunk``
and Responses events, anthropic events, google-genai responses): each real recording,
turned into the objects the SDK streams yield, records to the original wire JSON (no
warning, Gemini's bytes in standard base64) and replays as the original does."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from _typed import typed
from conftest import DEADLINE
from test_recording import FILES, RECORDED, replay_json, ticking
from toolcall_tracker.cli._input import TextReader, read_items
from toolcall_tracker.recording import record
from toolcall_tracker.testing import load_recording

SDK_FORMATS = ("openai_chat", "openai_responses", "anthropic", "gemini")
SDK_FILES = [name for name in FILES if name.partition("/")[0] in SDK_FORMATS]


def originals(name: str) -> list[Any]:
    with (RECORDED / name).open("rb") as file:
        _, found = read_items(TextReader(file))
        return [item.value for item in found]


def sdk_objects(name: str) -> tuple[list[Any], list[Any]]:
    """The recording's plain items and the SDK objects for them (skips without the SDK)."""
    items = originals(name)
    fmt = name.partition("/")[0].replace("_", "-")
    objects = [typed(fmt, item) for item in items]
    if any(obj is None for obj in objects):
        pytest.skip(f"the {fmt} SDK is not installed or rejects an item of {name}")
    assert not any(isinstance(obj, dict) for obj in objects)
    return items, objects


@pytest.mark.skipif(not SDK_FILES, reason=f"{RECORDED} is absent")
@pytest.mark.parametrize("name", SDK_FILES)
def test_sdk_objects_record_as_the_wire_json_and_replay_alike(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items, objects = sdk_objects(name)
    target = tmp_path / "turn.jsonl"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pydantic's serializer warnings would be errors
        passed = list(record(objects, target, clock=ticking()))
    assert passed == objects  # the very objects go through
    assert all(a is b for a, b in zip(passed, objects, strict=True))
    assert load_recording(target).items == items  # byte for byte the provider's JSON
    want, got = replay_json(capsys, RECORDED / name), replay_json(capsys, target)
    for key in ("format", "calls", "end", "events"):
        assert got[key] == want[key], key


ONE_PER_FORMAT = [
    next((name for name in SDK_FILES if name.startswith(f"{fmt}/")), f"{fmt}/-")
    for fmt in SDK_FORMATS
]


@pytest.mark.parametrize("name", ONE_PER_FORMAT)
async def test_an_async_sdk_stream_records_alike(
    name: str, anyio_backend: str, tmp_path: Path
) -> None:
    if name.endswith("/-"):
        pytest.skip(f"no recording of {name.partition('/')[0]} in {RECORDED}")
    items, objects = sdk_objects(name)

    async def stream() -> AsyncIterator[Any]:
        for obj in objects:
            yield obj

    target = tmp_path / "turn.jsonl"
    with anyio.fail_after(DEADLINE):
        passed = [obj async for obj in record(stream(), target, clock=ticking())]
    assert passed == objects
    assert load_recording(target).items == items
