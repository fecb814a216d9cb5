"""Replay the real new-format recordings in ``../shared/real-streams/new-formats/``.

The recordings (Bedrock Converse, Cohere v2, Mistral, Ollama, Anthropic fine-grained tool
streaming, LiteLLM) live outside the repository (see that folder's MANIFEST.md); this
module skips when the folder is absent and never copies them. Each file is fed as plain
dicts through ``apply_stream`` into a fresh machine, as the folder's ``check_project.py``
does, and compared with ``expected.json``: the calls that became ready (name, parsed
arguments, id where the provider sent one), no other call ready, calls the turn cut off
failed with their text kept, and the turn's ``End`` (``ok`` and the provider's reason).
Raw Bedrock ``.eventstream`` bodies are decoded (by hand, and by botocore when installed)
and must give what their ``.jsonl`` sibling gives.
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import toolcall_tracker
from toolcall_tracker import ToolCallStateMachine, tool_call_streaming_state_machine
from toolcall_tracker.adapters import (
    AnthropicAdapter,
    BedrockConverseAdapter,
    CohereAdapter,
    MistralAdapter,
    OllamaAdapter,
    OpenAIChatAdapter,
    apply_stream,
)

NEW_FORMATS = Path(__file__).resolve().parents[2].parent / "shared" / "real-streams" / "new-formats"

pytestmark = pytest.mark.skipif(
    not (NEW_FORMATS / "expected.json").is_file(), reason=f"{NEW_FORMATS} is absent"
)

ADAPTERS: dict[str, Callable[[], Any]] = {
    "bedrock": BedrockConverseAdapter,
    "cohere": CohereAdapter,
    "ollama": OllamaAdapter,
    "anthropic_eager": AnthropicAdapter,
    "litellm": OpenAIChatAdapter,
    "mistral": MistralAdapter,
}
SERVER_TOOLS: dict[str, Callable[[], Any]] = {
    "bedrock": lambda: BedrockConverseAdapter(server_tools=True),
    "anthropic_eager": lambda: AnthropicAdapter(server_tools=True),
}


def expected() -> dict[str, Any]:
    if not (NEW_FORMATS / "expected.json").is_file():
        return {}
    doc: dict[str, Any] = json.loads((NEW_FORMATS / "expected.json").read_text())
    return {key: value for key, value in doc.items() if not key.startswith("_")}


EXPECTED = expected()
FILES = sorted(EXPECTED)
SERVER_FILES = sorted(
    rel for rel, exp in EXPECTED.items() if exp.get("server_calls") and rel.endswith(".jsonl")
)
SERVER_FILES += sorted(
    rel for rel, exp in EXPECTED.items() if exp.get("server_calls") and rel.endswith(".sse")
)
EVENTSTREAMS = [rel for rel in FILES if rel.endswith(".eventstream")]


# -- reading the files ----------------------------------------------------------------


def sse_data(text: str) -> list[str]:
    """The data of each dispatched server-sent event (WHATWG rules)."""
    events: list[str] = []
    data: list[str] = []
    for line in [*re.split(r"\r\n|\r|\n", text), ""]:
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
    return events


def eventstream_events(body: bytes) -> list[dict[str, Any]]:
    """AWS ``application/vnd.amazon.eventstream`` frames decoded by hand: per event frame,
    ``{<:event-type>: <payload JSON>}`` (string headers only, which is all Bedrock sends)."""
    out: list[dict[str, Any]] = []
    pos = 0
    while pos < len(body):
        total, header_len = struct.unpack(">II", body[pos : pos + 8])
        headers: dict[str, str] = {}
        h = pos + 12
        end = h + header_len
        while h < end:
            n = body[h]
            name = body[h + 1 : h + 1 + n].decode()
            h += 1 + n
            assert body[h] == 7, "only string headers are expected"
            (length,) = struct.unpack(">H", body[h + 1 : h + 3])
            headers[name] = body[h + 3 : h + 3 + length].decode()
            h += 3 + length
        payload = body[end : pos + total - 4]
        if headers.get(":message-type") == "event":
            out.append({headers[":event-type"]: json.loads(payload)})
        else:
            out.append({headers.get(":exception-type", "unknownException"): json.loads(payload)})
        pos += total
    return out


def items(rel: str) -> list[Any]:
    path = NEW_FORMATS / rel
    if path.suffix == ".eventstream":
        return eventstream_events(path.read_bytes())
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return [json.loads(data) for data in sse_data(text) if data.strip() != "[DONE]"]


def replay(rel: str, adapter: Any = None) -> ToolCallStateMachine:
    machine = tool_call_streaming_state_machine()
    adapter = adapter if adapter is not None else ADAPTERS[rel.split("/")[0]]()
    apply_stream(machine, items(rel), adapter)
    return machine


def need_adapter(rel: str) -> None:
    if rel.split("/")[0] not in ADAPTERS:
        pytest.fail(f"no adapter for {rel}")


# -- every file agrees with expected.json ----------------------------------------------


@pytest.mark.parametrize("rel", FILES)
def test_replay_matches_expected(rel: str) -> None:
    need_adapter(rel)
    exp = EXPECTED[rel]
    machine = replay(rel)
    calls = machine.list()
    ready = [call for call in calls if call.status == "running"]
    want = exp["calls"]
    assert [(c.name, c.args) for c in ready] == [(w["name"], w["args"]) for w in want]
    for call, w in zip(ready, want, strict=True):
        assert json.loads(call.args_text) == w["args"]
        if w["id"] is not None:
            assert call.id == w["id"]
        else:
            assert call.id  # a synthesised id
    cut = {c["id"]: c for c in exp.get("incomplete_calls", [])}
    for call in calls:
        if call.status != "running":
            assert call.id in cut, f"{call.id} ({call.name}) is {call.status}"
            assert call.status == "error"
            assert call.args_text == cut[call.id]["args_text"]
    end = machine.end
    assert end is not None
    assert end.ok is exp["end_ok"]
    assert end.reason == exp["stop_reason"]


@pytest.mark.parametrize("rel", SERVER_FILES)
def test_server_tools_tracked_on_request(rel: str) -> None:
    """With ``server_tools=True`` the provider-run calls are tracked too, in stream order
    with the client calls, and the turn still ends as expected."""
    exp = EXPECTED[rel]
    machine = replay(rel, SERVER_TOOLS[rel.split("/")[0]]())
    by_id = {call.id: call for call in machine.list()}
    for server in exp["server_calls"]:
        call = by_id[server["id"]]
        assert (call.name, call.args) == (server["name"], server["args"])
        assert call.status in ("running", "done")
    for client in exp["calls"]:
        assert by_id[client["id"]].status == "running"
    end = machine.end
    assert end is not None
    assert end.ok is exp["end_ok"]


@pytest.mark.parametrize("rel", EVENTSTREAMS)
def test_raw_eventstream_equals_boto3_dicts(rel: str) -> None:
    """The raw AWS body decoded by hand gives the calls its ``.jsonl`` sibling gives (the
    dicts boto3 yields; the body's ``"p"`` padding members are ignored by the adapter)."""
    raw = replay(rel)
    decoded = replay(rel.removesuffix(".eventstream") + ".jsonl")
    assert [c.model_dump() for c in raw.list()] == [c.model_dump() for c in decoded.list()]
    assert raw.end == decoded.end


@pytest.mark.parametrize("rel", EVENTSTREAMS)
def test_botocore_parses_to_the_same_calls(rel: str) -> None:
    """Differential: botocore's own event-stream parser over the raw body (in odd-sized
    pieces, as a socket gives them), its event dicts through the adapter."""
    boto3 = pytest.importorskip("boto3")
    from botocore.awsrequest import AWSResponse

    body = (NEW_FORMATS / rel).read_bytes()

    class Raw:
        def stream(self, **_: Any) -> Any:
            for i in range(0, len(body), 97):
                yield body[i : i + 97]

        def read(self, *_: Any) -> bytes:
            return body

        def close(self) -> None:
            pass

    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )
    client.meta.events.register(
        "before-send.bedrock-runtime.ConverseStream",
        lambda request, **_: AWSResponse(
            request.url, 200, {"content-type": "application/vnd.amazon.eventstream"}, Raw()
        ),
    )
    response = client.converse_stream(
        modelId="m", messages=[{"role": "user", "content": [{"text": "x"}]}]
    )
    machine = tool_call_streaming_state_machine()
    apply_stream(machine, response["stream"], BedrockConverseAdapter())
    decoded = replay(rel)
    assert [c.model_dump() for c in machine.list()] == [c.model_dump() for c in decoded.list()]
    assert machine.end == decoded.end


def test_check_project_agrees() -> None:
    """The folder's own ``check_project.py`` finds every file agreeing with this project."""
    src = str(Path(toolcall_tracker.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(
        [sys.executable, str(NEW_FORMATS / "check_project.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
