"""The command line on the newer formats: Bedrock (dicts and raw event streams), Cohere,
Ollama, Mistral and LiteLLM (as ``openai-chat``).

The recorded transcripts live in ``../shared/real-streams/new-formats/`` (never copied into
the repository); their tests skip when that folder is absent. The event-stream decoder is
also tested on bodies built here.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from toolcall_tracker.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, main

NEW_FORMATS = Path(__file__).resolve().parents[1].parent / "shared" / "real-streams" / "new-formats"
_EXPECTED_FILE = NEW_FORMATS / "expected.json"
EXPECTED: dict[str, Any] = (
    {k: v for k, v in json.loads(_EXPECTED_FILE.read_text()).items() if not k.startswith("_")}
    if _EXPECTED_FILE.is_file()
    else {}
)
needs_shared = pytest.mark.skipif(not EXPECTED, reason=f"{NEW_FORMATS} is absent")

# per folder: the --format to pass, and what --format auto recognises
FOLDER_FORMATS = {
    "bedrock": ("bedrock", "bedrock"),
    "cohere": ("cohere", "cohere"),
    "ollama": ("ollama", "ollama"),
    "mistral": ("mistral", "openai-chat"),  # Mistral's wire chunks are Chat chunks
    "litellm": ("openai-chat", "openai-chat"),
    "anthropic_eager": ("anthropic", "anthropic"),
}


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    """``main(argv)``: the exit code, stdout and stderr."""
    code = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


def replay_json(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, Any]:
    """``replay --json``: the exit code and the document (nothing on stderr)."""
    code, out, err = run(capsys, "replay", "--json", *argv)
    assert err == ""
    return code, json.loads(out)


def check_against_expected(document: Any, expected: dict[str, Any]) -> None:
    """The ready calls and the turn's end are those ``expected.json`` gives."""
    ready = [call for call in document["calls"] if call["status"] == "running"]
    assert [(c["name"], c["args"]) for c in ready] == [
        (c["name"], c["args"]) for c in expected["calls"]
    ]
    for got, want in zip(ready, expected["calls"], strict=True):
        if want["id"] is not None:
            assert got["id"] == want["id"]
    assert document["end"]["ok"] is expected["end_ok"]


@needs_shared
@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("explicit", [False, True], ids=["auto", "explicit"])
def test_replay_new_formats_match_expected(
    name: str, explicit: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    given, recognised = FOLDER_FORMATS[name.split("/")[0]]
    argv = ["--format", given] if explicit else []
    code, document = replay_json(capsys, *argv, NEW_FORMATS / name)
    check_against_expected(document, EXPECTED[name])
    assert document["format"] == (given if explicit else recognised)
    assert document["detected"] is not explicit
    if name.endswith(".eventstream"):
        assert document["container"] == "eventstream"
    assert code == (EXIT_OK if EXPECTED[name]["end_ok"] else EXIT_FAILED)


@needs_shared
def test_eventstream_gives_the_same_calls_as_the_boto3_dicts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bodies = sorted(NEW_FORMATS.glob("bedrock/*.eventstream"))
    assert len(bodies) == 7
    for body in bodies:
        _, raw = replay_json(capsys, body)
        _, dicts = replay_json(capsys, body.with_suffix(".jsonl"))
        assert raw["calls"] == dicts["calls"]
        assert raw["end"] == dicts["end"]
        assert raw["items"] == dicts["items"]


@needs_shared
def test_validate_accepts_the_new_formats(capsys: pytest.CaptureFixture[str]) -> None:
    names = [name for name, want in EXPECTED.items() if want["end_ok"]]
    code, _, err = run(capsys, "validate", *(NEW_FORMATS / name for name in names))
    assert err == ""
    assert code in (EXIT_OK, EXIT_FAILED)  # some recordings carry events the machine ignores
    code, _, err = run(
        capsys, "validate", NEW_FORMATS / "cohere" / "vercel_no_args_call_no_deltas.jsonl"
    )
    assert (code, err) == (EXIT_OK, "")


# -- detection, on items built here ---------------------------------------------------------


def write_lines(path: Path, items: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items))
    return path


FAMILIES: dict[str, list[dict[str, Any]]] = {
    "bedrock": [
        {"messageStart": {"role": "assistant"}},
        {
            "contentBlockStart": {
                "start": {"toolUse": {"toolUseId": "t1", "name": "f"}},
                "contentBlockIndex": 0,
            }
        },
        {"contentBlockDelta": {"delta": {"toolUse": {"input": "{}"}}, "contentBlockIndex": 0}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "tool_use"}},
        {"metadata": {"usage": {}}},
    ],
    "cohere": [
        {"type": "message-start", "delta": {"message": {"role": "assistant"}}},
        {
            "type": "tool-call-start",
            "index": 0,
            "delta": {
                "message": {
                    "tool_calls": {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "f", "arguments": ""},
                    }
                }
            },
        },
        {
            "type": "tool-call-delta",
            "index": 0,
            "delta": {"message": {"tool_calls": {"function": {"arguments": "{}"}}}},
        },
        {"type": "tool-call-end", "index": 0},
        {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}},
    ],
    "ollama": [
        {
            "model": "m",
            "created_at": "2025-01-01T00:00:00Z",
            "done": False,
            "message": {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"function": {"name": "f", "arguments": {}}}],
            },
        },
        {
            "model": "m",
            "created_at": "2025-01-01T00:00:01Z",
            "done": True,
            "done_reason": "stop",
            "message": {"role": "assistant", "content": ""},
        },
    ],
    "mistral": [  # mistralai CompletionEvent objects, dumped
        {
            "data": {
                "id": "x",
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {
                                    "id": "null",
                                    "function": {"name": "f", "arguments": {"a": 1}},
                                    "index": 0,
                                }
                            ]
                        },
                        "finish_reason": "tool_calls",
                    }
                ],
            }
        },
    ],
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_format_detection_per_new_family(
    family: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_lines(tmp_path / f"{family}.jsonl", FAMILIES[family])
    code, document = replay_json(capsys, path)
    assert (document["format"], document["detected"]) == (family, True)
    assert code == EXIT_OK
    assert [call["status"] for call in document["calls"]] == ["running"]


# -- raw event streams, built here ----------------------------------------------------------


def header(name: str, value: str) -> bytes:
    raw = value.encode()
    return bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(raw)) + raw


def message(headers: dict[str, str], payload: dict[str, Any]) -> bytes:
    """One event-stream message, as AWS encodes it."""
    head = b"".join(header(name, value) for name, value in headers.items())
    body = json.dumps(payload).encode()
    total = 12 + len(head) + len(body) + 4
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    data = prelude + head + body
    return data + struct.pack(">I", zlib.crc32(data))


def event(kind: str, payload: dict[str, Any]) -> bytes:
    return message(
        {":event-type": kind, ":content-type": "application/json", ":message-type": "event"},
        payload,
    )


def body(*, stop: str = "tool_use") -> bytes:
    """A Bedrock ConverseStream body: one call, in two input fragments."""
    return b"".join(
        [
            event("messageStart", {"role": "assistant", "p": "abc"}),
            event(
                "contentBlockStart",
                {
                    "contentBlockIndex": 0,
                    "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather"}},
                },
            ),
            event(
                "contentBlockDelta",
                {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"city":'}}},
            ),
            event(
                "contentBlockDelta",
                {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '"Paris"}'}}},
            ),
            event("contentBlockStop", {"contentBlockIndex": 0}),
            event("messageStop", {"stopReason": stop}),
            event("metadata", {"usage": {"inputTokens": 1}}),
        ]
    )


@pytest.mark.parametrize("fmt", ["auto", "bedrock"])
def test_eventstream_body_replays(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "turn.bin"
    path.write_bytes(body())
    code, document = replay_json(capsys, "--format", fmt, path)
    assert code == EXIT_OK
    assert (document["format"], document["container"], document["items"]) == (
        "bedrock",
        "eventstream",
        7,
    )
    assert [(c["id"], c["name"], c["args"], c["status"]) for c in document["calls"]] == [
        ("tooluse_1", "get_weather", {"city": "Paris"}, "running")
    ]
    assert document["end"] == {"ok": True, "reason": "tool_use"}


def test_eventstream_exception_message_ends_the_turn_not_ok(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = body()[: len(event("messageStart", {"role": "assistant", "p": "abc"}))]
    data += message(
        {":exception-type": "ModelStreamErrorException", ":message-type": "exception"},
        {"message": "boom"},
    )
    path = tmp_path / "turn.bin"
    path.write_bytes(data)
    code, document = replay_json(capsys, path)
    assert code == EXIT_FAILED
    assert document["end"]["ok"] is False


def one_line_exit_2(capsys: pytest.CaptureFixture[str], path: Path, *words: str) -> None:
    for argv in (["replay"], ["replay", "--format", "bedrock"], ["validate"]):
        code, out, err = run(capsys, *argv, path)
        assert (code, out) == (EXIT_USAGE, ""), argv
        assert err.startswith(f"toolcall-tracker: error: {path}: "), err
        assert err.count("\n") == 1
        assert "Traceback" not in err
        for word in words:
            assert word in err, err


def test_corrupted_eventstream_payload_fails_its_crc(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = bytearray(body())
    data[len(data) // 2] ^= 0xFF  # inside a later message
    path = tmp_path / "bad.eventstream"
    path.write_bytes(bytes(data))
    one_line_exit_2(capsys, path, "event-stream message", "CRC")


def test_cut_off_eventstream(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cut.eventstream"
    path.write_bytes(body()[:-5])
    one_line_exit_2(capsys, path, "cut off")


def test_eventstream_with_a_bad_later_prelude(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = event("messageStart", {"role": "assistant"})
    path = tmp_path / "junk.eventstream"
    path.write_bytes(first + b"\xff" * 40)
    one_line_exit_2(capsys, path, "message 2", "prelude")


def test_eventstream_with_a_text_format_says_which_to_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "turn.bin"
    path.write_bytes(body())
    code, out, err = run(capsys, "replay", "--format", "anthropic", path)
    assert (code, out) == (EXIT_USAGE, "")
    assert "--format bedrock" in err
    assert err.count("\n") == 1
