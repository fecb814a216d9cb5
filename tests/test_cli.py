"""The command line (``toolcall_tracker.cli``): replay, validate, formats, hostile files.

Every test calls ``main(argv)`` in-process and checks its exit code and what it printed.
The expected calls are computed independently: the recorded items are decoded here and fed
through the adapter straight into a machine, and the CLI's ``--json`` must agree.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from toolcall_tracker import ToolCall, tool_call_streaming_state_machine
from toolcall_tracker.adapters import (
    AISDKAdapter,
    AnthropicAdapter,
    GeminiAdapter,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
)
from toolcall_tracker.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, main

FIXTURES = Path(__file__).parent / "fixtures"
FAMILIES = {
    "openai_chat": ("openai-chat", OpenAIChatAdapter),
    "openai_responses": ("openai-responses", OpenAIResponsesAdapter),
    "anthropic": ("anthropic", AnthropicAdapter),
    "gemini": ("gemini", GeminiAdapter),
    "ai_sdk": ("ai-sdk", AISDKAdapter),
}
PROVIDER_FIXTURES = sorted(
    path
    for family in FAMILIES
    for path in (FIXTURES / family).iterdir()
    if path.suffix in (".sse", ".json")
)
SEED_INTERLEAVED = FIXTURES / "seed" / "interleaved.jsonl"
SEED_TWO_CALLS = FIXTURES / "seed" / "two_calls.json"


@pytest.fixture(autouse=True)
def _wide_output(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests check content: lay it out wide (long tmp paths stay on one line)."""
    monkeypatch.setenv("COLUMNS", "250")


def fixture_id(path: Path) -> str:
    """``family/name.sse``: a readable test id."""
    return f"{path.parent.name}/{path.name}"


def decode_items(path: Path) -> list[dict[str, Any]]:
    """The recorded items, decoded independently of the CLI (data: lines or a JSON array)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        items = json.loads(text)
        assert isinstance(items, list)
        return items
    return [
        json.loads(line[len("data:") :])
        for line in text.splitlines()
        if line.startswith("data:") and line[len("data:") :].strip() != "[DONE]"
    ]


def expected(path: Path) -> tuple[list[ToolCall], bool, str | None]:
    """``(calls, end.ok, end.reason)`` from feeding the fixture's adapter directly."""
    adapter = FAMILIES[path.parent.name][1]()
    machine = tool_call_streaming_state_machine()
    for item in decode_items(path):
        for event in adapter.feed(item):
            machine.apply(event)
    for event in adapter.end():
        machine.apply(event)
    assert machine.end is not None
    return machine.list(), machine.end.ok, machine.end.reason


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    """``main(argv)``: the exit code, stdout and stderr."""
    code = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, Any]:
    """``replay --json``: the exit code and the parsed document (nothing on stderr)."""
    code, out, err = run(capsys, "replay", "--json", *argv)
    assert err == ""
    return code, json.loads(out)


# -- the recorded provider fixtures --------------------------------------------------------


@pytest.mark.parametrize("path", PROVIDER_FIXTURES, ids=fixture_id)
def test_replay_json_matches_the_machine(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    calls, ok, reason = expected(path)
    code, document = run_json(capsys, path)
    assert document["format"] == FAMILIES[path.parent.name][0]
    assert document["detected"] is True
    assert document["calls"] == [c.model_dump(mode="json", by_alias=True) for c in calls]
    assert document["end"] == {"ok": ok, "reason": reason}
    assert document["ignored"] == []
    all_ok = ok and all(call.status != "error" for call in calls)
    assert document["ok"] is all_ok
    assert code == (EXIT_OK if all_ok else EXIT_FAILED)


@pytest.mark.parametrize("path", PROVIDER_FIXTURES, ids=fixture_id)
def test_replay_table_lists_every_call(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    calls, ok, _ = expected(path)
    code, out, err = run(capsys, "replay", path)
    assert err == ""
    fmt = FAMILIES[path.parent.name][0]
    assert out.startswith(f"{path}: {fmt} (detected), ")
    for call in calls:
        row = next(line for line in out.splitlines() if line.strip().startswith(call.id))
        assert call.name in row
        assert f" {call.status.value} " in row
    assert ("turn: ok" if ok else "turn: NOT ok") in out
    assert "ignored: none" in out
    assert out.rstrip().endswith("result: ok" if code == EXIT_OK else ")")


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_format_detection_per_family(family: str, capsys: pytest.CaptureFixture[str]) -> None:
    fmt = FAMILIES[family][0]
    for path in sorted((FIXTURES / family).iterdir()):
        _, auto = run_json(capsys, path)
        _, given = run_json(capsys, "--format", fmt, path)
        assert auto["format"] == given["format"] == fmt, path
        assert given["detected"] is False
        assert auto["calls"] == given["calls"]


def test_gemini_stream_as_json_lines_and_sse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = FIXTURES / "gemini" / "streamed_args.json"
    items = decode_items(source)
    jsonl = tmp_path / "chunks.jsonl"
    jsonl.write_text("".join(json.dumps(item) + "\n" for item in items))
    sse = tmp_path / "chunks.sse"  # as the REST API sends it with alt=sse, CRLF lines
    sse.write_text("".join(f"data: {json.dumps(item)}\r\n\r\n" for item in items), newline="")
    _, reference = run_json(capsys, source)
    for path, container in ((jsonl, "jsonl"), (sse, "sse")):
        _, document = run_json(capsys, path)
        assert (document["container"], document["format"]) == (container, "gemini")
        assert document["calls"] == reference["calls"]


def test_anthropic_timeline(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "replay", FIXTURES / "anthropic" / "parallel_calls.sse", "--events")
    assert code == EXIT_OK
    lines = out.splitlines()
    assert "  #1   toolu_01A09q90qw90lq917835lq9   get_weather" in lines
    header = next(line for line in lines if line.strip().startswith("item  event"))
    assert header.split()[-3:] == ["#1", "#2", "#3"]
    rows = [line.split() for line in lines[lines.index(header) + 1 :] if line.strip()]
    rows = rows[: next(i for i, row in enumerate(rows) if row[0] == "calls")]
    assert rows[0] == ["5", "start", "#1", "get_weather", "[pending]"]
    assert rows[3] == ["9", "ready", "#1", "[running]"]
    assert rows[4] == ["11", "start", "#2", "get_weather", "running", "[pending]"]
    assert rows[-1] == ["22", "end", "ok", "(tool_use)", "running", "running", "running"]


def test_cut_off_timeline_shows_calls_failing(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "replay", FIXTURES / "openai_chat" / "cut_off_length.sse", "--events"
    )
    assert code == EXIT_FAILED
    rows = [line.split() for line in out.splitlines()]
    # The first call was complete when the second started, so it became ready then; the
    # second is cut off by "length".
    failing = [row for row in rows if row[:2] == ["16", "error"]]
    assert len(failing) == 1
    assert failing[0][2] == "#2"
    assert failing[0][-2:] == ["running", "[error]"]
    assert ["eof", "end", "NOT", "ok", "(length)", "running", "."] in rows
    assert "result: FAILED (1 call failed, the turn did not end ok)" in out


# -- seed streams ---------------------------------------------------------------------------


def test_seed_interleaved_table_and_ignored(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "replay", SEED_INTERLEAVED)
    assert (code, err) == (EXIT_FAILED, "")
    assert out.startswith(f"{SEED_INTERLEAVED}: events (detected), 18 items (jsonl), ")
    lines = out.splitlines()
    assert '  t1  search  done    {"q":"tool calls"} -> {"hits":3}' in lines
    assert '  t2  fetch   done    {"url":"https://example.com"} -> "<html>...</html>"' in lines
    calc = next(line for line in lines if line.startswith("  t3  calc"))
    assert "error   invalid_arguments: invalid JSON" in calc
    assert "turn: ok (tool_calls)" in lines
    ignored = lines[lines.index("ignored (4):") + 1 : lines.index("ignored (4):") + 5]
    assert [line.split()[:3] for line in ignored] == [
        ["item", "5", "duplicate_start"],
        ["item", "12", "not_pending"],
        ["item", "15", "already_finished"],
        ["item", "16", "unknown_id"],
    ]
    assert lines[-1] == "result: FAILED (1 call failed)"


def test_seed_interleaved_timeline(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "replay", SEED_INTERLEAVED, "--events")
    rows = {line.split()[0]: line for line in out.splitlines() if line[:6].strip().isdigit()}
    assert rows["5"].split()[-3:] == ["duplicate_start)", "[pending]", "pending"]
    assert rows["11"].split()[-3:] == ["running", "pending", "[error]"]
    assert rows["12"].split()[-3:] == ["[running]", "pending", "."]
    assert "(ignored: unknown_id)" in rows["16"]
    assert "t9" in rows["16"]
    assert rows["17"].split()[1:4] == ["end", "ok", "(tool_calls)"]
    assert rows["18"].split()[-3:] == [".", "[done]", "."]  # a result after the end applies


def test_seed_json_matches_the_machine(capsys: pytest.CaptureFixture[str]) -> None:
    machine = tool_call_streaming_state_machine()
    for line in SEED_INTERLEAVED.read_text().splitlines():
        machine.apply(json.loads(line))
    code, document = run_json(capsys, SEED_INTERLEAVED, "--events")
    assert code == EXIT_FAILED
    assert document["calls"] == [c.model_dump(mode="json", by_alias=True) for c in machine.list()]
    assert document["ignored"][0] == {
        "item": 5,
        "reason": "duplicate_start",
        "event": {"type": "start", "id": "t1", "name": "search"},
    }
    assert [entry["reason"] for entry in document["ignored"]] == [
        "duplicate_start",
        "not_pending",
        "already_finished",
        "unknown_id",
    ]
    timeline = document["timeline"]
    assert len(timeline) == document["events"] == 18
    assert timeline[10] == {
        "item": 11,
        "event": {"type": "ready", "id": "t3"},
        "ignored": None,
        "status": "error",
    }
    assert timeline[15]["status"] is None  # t9 never started


def test_seed_without_end_ends_when_exhausted(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "replay", SEED_TWO_CALLS, "--events")
    assert code == EXIT_OK
    assert "turn: ok (source exhausted)" in out
    assert any(line.split()[:2] == ["eof", "end"] for line in out.splitlines())
    assert out.splitlines()[-1] == "result: ok"


def test_oversized_arguments_fail_in_the_timeline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "huge.jsonl"
    events = [
        {"type": "start", "id": "big", "name": "upload"},
        {"type": "delta", "id": "big", "argsTextDelta": '{"data": "'},
        {"type": "delta", "id": "big", "argsTextDelta": "x" * 8_388_608},
        {"type": "delta", "id": "big", "argsTextDelta": '"}'},
    ]
    path.write_text("\n".join(json.dumps(event) for event in events))
    code, out, _ = run(capsys, "replay", path, "--events")
    assert code == EXIT_FAILED
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line[:6].strip()}
    assert rows["2"][-1] == "[pending]"
    assert rows["3"][-1] == "[error]"
    assert rows["4"][-2:] == ["already_finished)", "[error]"]
    assert "arguments_too_large" in out


# -- validate -------------------------------------------------------------------------------


def test_validate_passes_clean_streams(capsys: pytest.CaptureFixture[str]) -> None:
    paths = [FIXTURES / "anthropic" / "one_call.sse", SEED_TWO_CALLS]
    code, out, err = run(capsys, "validate", *paths)
    assert (code, err) == (EXIT_OK, "")
    assert out.splitlines() == [
        f"{paths[0]}: ok   anthropic, 1 call, turn ended ok",
        f"{paths[1]}: ok   events, 2 calls, turn ended ok",
    ]


def test_validate_fails_on_errors_and_ignored_events(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "validate", SEED_INTERLEAVED, FIXTURES / "gemini" / "safety.json")
    assert code == EXIT_FAILED
    lines = out.splitlines()
    assert lines[0] == f"{SEED_INTERLEAVED}: FAIL events, 5 problems"
    assert lines[1].startswith(f"{SEED_INTERLEAVED}:   call t3 (calc) failed: invalid_arguments:")
    assert lines[2] == f"{SEED_INTERLEAVED}:   item 5: ignored (duplicate_start): start  t1 search"
    safety = FIXTURES / "gemini" / "safety.json"
    assert f"{safety}:   the turn did not end ok: NOT ok (SAFETY)" in lines
    assert all(line.startswith((f"{SEED_INTERLEAVED}: ", f"{safety}: ")) for line in lines)


def test_validate_reports_unreadable_files_and_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.sse"
    code, out, err = run(capsys, "validate", missing, SEED_TWO_CALLS)
    assert code == EXIT_USAGE
    assert f"{missing}: cannot read the file" in err
    assert out.startswith(f"{SEED_TWO_CALLS}: ok   ")


# -- malformed and hostile input ------------------------------------------------------------

GOOD_SSE = (FIXTURES / "anthropic" / "one_call.sse").read_bytes()
GOOD_ARRAY = (FIXTURES / "gemini" / "one_call.json").read_bytes()

MALFORMED: dict[str, tuple[bytes, str]] = {
    "binary garbage": (bytes(range(256)) * 4, "not UTF-8 text"),
    "binary with NUL": (b'{"type": "start"}\x00\x01\x02', "NUL character"),
    "empty": (b"", "the file is empty"),
    "whitespace only": (b" \n\r\n\t\n", "the file is empty"),
    "truncated JSON array": (GOOD_ARRAY[: len(GOOD_ARRAY) // 2], "invalid JSON"),
    "truncated SSE data": (GOOD_SSE[:900], "invalid JSON in the SSE data"),
    "truncated JSON lines": (
        b'{"type": "start", "id": "a", "name": "x"}\n{"type": "delta", "id": "a", "ar',
        "line 2, column",
    ),
    "NaN is not JSON": (b'[{"type": "result", "id": "a", "result": NaN}]', "NaN"),
    "nested too deeply": (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    "integer too long": (b'[{"n": ' + b"9" * 5000 + b"}]", "4300 digits"),
    "items not objects": (b"[1, 2, 3]", "must be a JSON object, not a number"),
    "an array of arrays": (b"[[1], [2]]", "item 1: a stream item must be a JSON object, not an"),
    "a JSON string": (b'"hello"', "not a recorded stream"),
    "JSON lines of arrays": (b"[1]\n[2]\n", "line 2, column 1: invalid JSON: Extra data"),
    "plain text": (b"hello, world\n", "not a recorded stream"),
    "garbage among SSE lines": (GOOD_SSE[:400] + b"\nrm -rf /\n", "not a server-sent-event"),
    "unrecognised items": (b'{"hello": 1}\n{"world": 2}\n', "cannot recognise"),
    "invalid seed event": (
        b'{"type": "start", "id": "a", "name": "x"}\n'
        b'{"type": "delta", "id": "a", "argsTextDelta": 5}\n',
        "item 2 (line 2): invalid 'delta' event",
    ),
    "seed id too long": (
        b'[{"type": "start", "id": "' + b"i" * 300 + b'", "name": "x"}]',
        "Limits.max_id_chars",
    ),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_input_exits_2_without_traceback(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    content, message = MALFORMED[name]
    path = tmp_path / "input.txt"
    path.write_bytes(content)
    for argv in (["replay", path], ["replay", path, "--events", "--json"], ["validate", path]):
        code, out, err = run(capsys, *argv)
        assert code == EXIT_USAGE
        assert out == ""
        assert err.startswith(f"toolcall-tracker: error: {path}: ")
        assert message in err
        assert err.count("\n") == 1
        assert "Traceback" not in err


def test_unreadable_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for path, message in ((tmp_path / "nope.sse", "No such file"), (tmp_path, "directory")):
        code, out, err = run(capsys, "replay", path)
        assert (code, out) == (EXIT_USAGE, "")
        assert message in err


def test_ambiguous_items_ask_for_a_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_text('{"type": "message_stop"}\n{"type": "response.completed"}\n')
    code, _, err = run(capsys, "replay", path)
    assert code == EXIT_USAGE
    assert "equally well; pass --format" in err


def test_terminal_control_characters_are_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile = "x\x1b[31mRED\u202e\x07"
    events = [
        {"type": "start", "id": "a\x1b[2J", "name": hostile},
        {"type": "delta", "id": "a\x1b[2J", "argsTextDelta": '{"k": "\\u001b]0;pwn"}'},
        {"type": "ready", "id": "a\x1b[2J"},
        {"type": "result", "id": "a\x1b[2J", "result": hostile},
        {"type": "end", "reason": hostile},
    ]
    path = tmp_path / "hostile.jsonl"
    path.write_text("\n".join(json.dumps(event) for event in events))
    for argv in (["replay", path, "--events"], ["validate", path], ["replay", path, "--json"]):
        _, out, err = run(capsys, *argv)
        assert err == ""
        assert not any(char in out for char in "\x1b\x07\u202e")
    _, out, _ = run(capsys, "replay", path)
    assert "a\\x1b[2J" in out
    assert "\\u202e" in out


def test_output_survives_an_ascii_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    buffer = io.BytesIO()
    stdout = io.TextIOWrapper(buffer, encoding="ascii")
    monkeypatch.setattr(sys, "stdout", stdout)
    code = main(["replay", str(FIXTURES / "anthropic" / "mixed_text_thinking.sse")])
    stdout.flush()
    assert code == EXIT_OK
    assert "caf\\xe9" in buffer.getvalue().decode("ascii")


def test_standard_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stdin = io.TextIOWrapper(io.BytesIO(SEED_TWO_CALLS.read_bytes()))
    monkeypatch.setattr(sys, "stdin", stdin)
    code, out, _ = run(capsys, "replay", "-")
    assert code == EXIT_OK
    assert out.startswith("-: events (detected), 8 items (json)")


# -- usage ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [[], ["replay"], ["replay", "x.sse", "--format", "bogus"], ["frobnicate"], ["validate"]],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == EXIT_USAGE
    out, err = capsys.readouterr()
    assert out == ""
    assert "usage: toolcall-tracker" in err


def test_help_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == EXIT_OK
    assert "replay" in out
    assert "Exit codes" in out
    code, out, _ = run(capsys, "replay", "--help")
    assert code == EXIT_OK
    assert "--events" in out
    code, out, _ = run(capsys, "--version")
    assert code == EXIT_OK
    assert out.startswith("toolcall-tracker ")


def test_python_dash_m() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolcall_tracker", "validate", str(SEED_TWO_CALLS)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr) == (EXIT_OK, "")
    assert done.stdout.startswith(f"{SEED_TWO_CALLS}: ok   ")
