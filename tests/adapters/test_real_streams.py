"""Replay every real recorded stream in ``../shared/real-streams/recorded/``.

The recordings live outside the repository (see that folder's MANIFEST.md); this module
skips when the folder is absent and never copies them. Per recording, the adapter's calls
(through ``apply_stream`` into a machine) are compared with what is expected: the entry of
the folder's ``expected.json`` when there is one, otherwise what the official client
(openai, anthropic, google-genai; the AI SDK's reading rules for UI streams) accumulates
from the same bytes, computed by the folder's own ``check.py``. Compared: the number of
calls, their names, the parsed arguments of the calls that may run (a call the turn cut
off must not run), and whether the turn ended ok.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from toolcall_tracker import tool_call_streaming_state_machine
from toolcall_tracker.adapters import (
    AISDKAdapter,
    AnthropicAdapter,
    GeminiAdapter,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
    apply_stream,
)

RECORDED = Path(__file__).parents[2].parent / "shared" / "real-streams" / "recorded"
FORMATS = {
    "openai_chat": OpenAIChatAdapter,
    "openai_responses": OpenAIResponsesAdapter,
    "anthropic": AnthropicAdapter,
    "gemini": GeminiAdapter,
    "ai_sdk": AISDKAdapter,
}
NOT_RUN = "<must not run>"


def recordings() -> list[str]:
    if not RECORDED.is_dir():
        return []
    return [
        f"{fmt}/{path.name}"
        for fmt in FORMATS
        for path in sorted((RECORDED / fmt).glob("*"))
        if path.suffix in (".sse", ".jsonl", ".json")
    ]


def sse_data(text: str) -> list[str]:
    """The data of each dispatched server-sent event (WHATWG rules, as check.py reads it)."""
    events: list[str] = []
    data: list[str] = []
    for line in re.split(r"\r\n|\r|\n", text):
        if line == "":
            if data:
                events.append("\n".join(data))
            data = []
            continue
        if line.startswith(":"):
            continue
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
    if data:
        events.append("\n".join(data))
    return events


def load_items(path: Path) -> list[Any]:
    """The stream's items as the plain dicts the provider's JSON decodes to."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    if path.suffix == ".json":
        value = json.loads(text)
        return value if isinstance(value, list) else [value]
    items = []
    for data in sse_data(text):
        if data.strip() == "[DONE]":
            break
        items.append(json.loads(data))
    return items


def load_check() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_recorded_check", RECORDED / "check.py")
    if spec is None or spec.loader is None:
        pytest.skip("check.py cannot be loaded")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as exc:  # check.py needs httpx (and the official clients)
        pytest.skip(f"check.py cannot run here: {exc}")
    return module


def expected_for(rel: str) -> tuple[list[tuple[str, Any]], bool]:
    """``([(name, args or NOT_RUN)...], end_ok)`` for recording ``rel``."""
    entries = json.loads((RECORDED / "expected.json").read_text(encoding="utf-8"))
    entry = entries.get(rel)
    if entry is not None:
        calls = [
            (e["name"], e["args"] if "args" in e and e.get("runs", True) else NOT_RUN)
            for e in entry["calls"]
        ]
        return calls, bool(entry["end_ok"])
    fmt = rel.split("/")[0]
    if fmt == "gemini":
        pytest.importorskip("google.genai")
    check = load_check()
    oracle = asyncio.run(check.ORACLES[fmt](check.wire_body(RECORDED / rel)))
    calls = []
    for call in oracle["calls"]:
        args = call["args"]
        if args is check.MISSING:
            # Empty Chat argument text is read as {} (README); otherwise the client's text
            # does not parse (the turn cut it): the call must not run.
            empty = fmt == "openai_chat" and call.get("args_text") in (None, "")
            args = {} if empty else NOT_RUN
        elif oracle["end_ok"] is False:
            args = NOT_RUN  # a cut-off turn: the project fails its calls rather than run them
        calls.append((call["name"], args))
    return calls, bool(oracle["end_ok"])


@pytest.mark.skipif(not RECORDED.is_dir(), reason="the recorded streams are not available")
@pytest.mark.parametrize("rel", recordings() or ["(none)"])
def test_recorded_stream_gives_the_expected_calls(rel: str) -> None:
    fmt = rel.split("/")[0]
    machine = tool_call_streaming_state_machine()
    apply_stream(machine, load_items(RECORDED / rel), FORMATS[fmt]())
    got = [
        (call.name, call.args if call.status.value in ("running", "done") else NOT_RUN)
        for call in machine.list()
    ]
    expected, end_ok = expected_for(rel)
    assert len(got) == len(expected)
    assert [name for name, _ in got] == [name for name, _ in expected]
    assert got == expected
    assert machine.end is not None
    assert machine.end.ok is end_ok
