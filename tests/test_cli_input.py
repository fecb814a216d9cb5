"""The command line's input handling under hostile input: bounded reads, caps, streaming.

The caps are module constants of ``toolcall_tracker.cli._input`` (and the spool's memory
size of ``toolcall_tracker.cli._spool``); the tests lower them with ``monkeypatch`` instead
of writing huge files. Every failure must be one line on stderr, nothing on stdout and
exit code 2.
"""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolcall_tracker.cli import EXIT_OK, EXIT_USAGE, _input, _spool, main

FIXTURES = Path(__file__).parent / "fixtures"
ARGVS = (["replay"], ["replay", "--events", "--json"], ["replay", "--events"], ["validate"])


def seed_lines(count: int, start: int = 0) -> Iterator[bytes]:
    """``count`` calls' worth of seed JSON Lines (4 lines per call)."""
    for number in range(start, start + count):
        call = f"c{number}"
        yield json.dumps({"type": "start", "id": call, "name": "tool"}).encode() + b"\n"
        yield json.dumps({"type": "delta", "id": call, "argsTextDelta": "{}"}).encode() + b"\n"
        yield json.dumps({"type": "ready", "id": call}).encode() + b"\n"
        yield json.dumps({"type": "result", "id": call, "result": 1}).encode() + b"\n"


def assert_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], path: Path | str, message: str
) -> None:
    """Every command on ``path`` exits 2 with one line on stderr holding ``message``."""
    for argv in ARGVS:
        code = main([*argv, str(path)])
        out, err = capsys.readouterr()
        assert (code, out) == (EXIT_USAGE, ""), argv
        assert err.startswith(f"toolcall-tracker: error: {path}: "), err
        assert message in err, err
        assert err.count("\n") == 1
        assert "Traceback" not in err


class GeneratedStdin(io.RawIOBase):
    """A binary standard input whose bytes come from a generator, pulled as they are read."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._pending = b""
        self.produced = 0  # bytes handed out so far

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            try:
                self._pending = next(self._chunks)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        self.produced += size
        return size


def use_stdin(monkeypatch: pytest.MonkeyPatch, chunks: Iterator[bytes]) -> GeneratedStdin:
    """Make standard input read from ``chunks``; returns the raw stream (for its count)."""
    raw = GeneratedStdin(chunks)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(raw)))
    return raw


# -- binary and endless input ----------------------------------------------------------------


def test_a_file_of_nul_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "zeros.bin"
    path.write_bytes(bytes(1 << 20))
    assert_one_line_exit_2(capsys, path, "not a text file: a NUL character at offset 0")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_dev_zero_fails_on_its_first_chunk(capsys: pytest.CaptureFixture[str]) -> None:
    assert_one_line_exit_2(capsys, "/dev/zero", "NUL character at offset 0")


@pytest.mark.skipif(
    not (sys.platform.startswith("linux") and os.path.exists("/dev/zero")),
    reason="needs RLIMIT_AS and /dev/zero",
)
def test_dev_zero_under_a_memory_limit() -> None:
    """The issue's reproduction: this printed a MemoryError traceback."""
    script = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "from toolcall_tracker.cli import main\n"
        "sys.exit(main(['replay', '/dev/zero']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert done.returncode == EXIT_USAGE
    assert done.stdout == ""
    assert done.stderr == (
        "toolcall-tracker: error: /dev/zero: not a text file: a NUL character at offset 0\n"
    )


def test_random_binary_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "random.bin"
    path.write_bytes(random.Random(7).randbytes(200_000))
    assert_one_line_exit_2(capsys, path, "(is this a binary file?)")


def test_binary_after_the_first_chunk(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Good lines, then garbage: the offset is the garbage's, in the whole file."""
    good = b"".join(seed_lines(2000))
    assert len(good) > _input.CHUNK_BYTES
    path = tmp_path / "tail.jsonl"
    path.write_bytes(good + b"\xff\xfe garbage\n")
    assert_one_line_exit_2(capsys, path, f"byte 0xff at offset {len(good)}")


def test_endless_input_stops_at_the_first_bad_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An endless standard input is read as the replay goes, not first: it stops at line 4001."""

    def endless() -> Iterator[bytes]:
        yield from seed_lines(1000)
        yield b"not json\n"
        number = 1000
        while True:
            yield from seed_lines(1, number)
            number += 1

    raw = use_stdin(monkeypatch, endless())
    code = main(["replay", "-", "--events"])
    out, err = capsys.readouterr()
    assert (code, out) == (EXIT_USAGE, "")
    assert err == "toolcall-tracker: error: -: line 4001, column 1: invalid JSON: Expecting value\n"
    assert raw.produced < 4001 * 100 + 2 * _input.CHUNK_BYTES


# -- caps ---------------------------------------------------------------------------------------


def test_a_line_without_a_newline_past_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_input, "MAX_LINE_CHARS", 1000)
    path = tmp_path / "long.jsonl"
    path.write_bytes(b'{"type": "delta", "id": "a", "argsTextDelta": "' + b"x" * 100_000)
    assert_one_line_exit_2(capsys, path, "line 1: longer than 1,000 characters")


def test_a_long_line_later_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_input, "MAX_LINE_CHARS", 1000)
    path = tmp_path / "long.jsonl"
    lines = b"".join(seed_lines(1))
    path.write_bytes(lines + b'{"pad": "' + b"y" * 1200 + b'"}\n' + lines)
    assert_one_line_exit_2(capsys, path, "line 5: longer than 1,000 characters")


def test_leading_blank_space_is_capped_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_input, "MAX_LINE_CHARS", 1000)
    path = tmp_path / "spaces.jsonl"
    path.write_bytes(b"\n\n" + b" " * 5000)
    assert_one_line_exit_2(capsys, path, "line 3: longer than 1,000 characters")


def test_an_sse_event_past_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Many short data lines in one event add up; the error names the line past the cap."""
    monkeypatch.setattr(_input, "MAX_LINE_CHARS", 1000)
    path = tmp_path / "event.sse"
    path.write_bytes(b"event: x\n" + b"data: " + b"z" * 90 + b"\n" + b"data: 1\n" * 100)
    assert_one_line_exit_2(capsys, path, "line 17: an SSE event longer than 1,000 characters")


def test_a_json_document_past_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_input, "MAX_DOCUMENT_CHARS", 10_000)
    items = [{"type": "start", "id": f"c{number}", "name": "tool"} for number in range(500)]
    path = tmp_path / "big.json"
    path.write_text(json.dumps(items))  # one line, longer than MAX_LINE_CHARS is fine
    monkeypatch.setattr(_input, "MAX_LINE_CHARS", 100)
    assert_one_line_exit_2(capsys, path, "a JSON document longer than 10,000 characters")
    monkeypatch.setattr(_input, "MAX_DOCUMENT_CHARS", 100_000)
    assert main(["replay", str(path)]) != EXIT_USAGE  # a document is not capped as a line
    assert capsys.readouterr().err == ""


def test_a_pretty_printed_object_past_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_input, "MAX_DOCUMENT_CHARS", 1000)
    path = tmp_path / "object.json"
    path.write_text(json.dumps({"type": "end", "reason": "r" * 2000}, indent=2))
    assert_one_line_exit_2(capsys, path, "a JSON document longer than 1,000 characters")


def test_errors_past_the_detection_window_print_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Input read during the replay (after --format auto's window) still fails cleanly."""
    path = tmp_path / "late.jsonl"
    path.write_bytes(b"".join(seed_lines(400)) + b'{"type": "delta", "id": "c1", "ar\n')
    assert_one_line_exit_2(capsys, path, "line 1601, column 31: invalid JSON")


# -- chunk boundaries ---------------------------------------------------------------------------

CHUNKED = sorted(
    path
    for family in ("anthropic", "openai_chat", "gemini", "seed")
    for path in (FIXTURES / family).iterdir()
    if path.suffix in (".sse", ".json", ".jsonl")
)


@pytest.mark.parametrize("path", CHUNKED, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_tiny_chunks_change_nothing(
    path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Multi-byte characters and CRLF split across reads decode and count lines the same."""
    main(["replay", "--json", "--events", str(path)])
    reference = json.loads(capsys.readouterr().out)
    monkeypatch.setattr(_input, "CHUNK_BYTES", 3)
    main(["replay", "--json", "--events", str(path)])
    assert json.loads(capsys.readouterr().out) == reference
    text = path.read_bytes().replace(b"\r\n", b"\n")
    for newline in (b"\r\n", b"\r"):
        monkeypatch.setattr(
            sys, "stdin", io.TextIOWrapper(io.BytesIO(text.replace(b"\n", newline)))
        )
        main(["replay", "--json", "--events", "-"])
        document = json.loads(capsys.readouterr().out)
        assert document["calls"] == reference["calls"], newline
        assert document["timeline"] == reference["timeline"]


def test_line_numbers_across_chunks_and_crlf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_input, "CHUNK_BYTES", 4)
    path = tmp_path / "crlf.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b"".join(seed_lines(2)).replace(b"\n", b"\r\n") + b"[1]\r\n")
    assert_one_line_exit_2(capsys, path, "item 9 (line 9): a stream item must be a JSON object")


# -- bounded memory: the input and the report rows are streamed ---------------------------------


def ignored_events(count: int) -> Iterator[bytes]:
    """A seed stream: one call, then ``count`` fragments for an id that never started.

    Every fragment is a tracker event (a timeline row) and an ignored event, while the
    machine holds nothing for it: what a replay holds beyond the machine is what is left.
    """
    yield b'{"type": "start", "id": "a", "name": "tool"}\n'
    yield b'{"type": "delta", "id": "a", "argsTextDelta": "{}"}\n'
    yield b'{"type": "ready", "id": "a"}\n'
    line = b'{"type": "delta", "id": "gone", "argsTextDelta": "{\\"k\\": [1, 2, 3]}"}\n'
    for _ in range(count):
        yield line


@pytest.mark.parametrize("argv", [["--events", "--json"], ["--events"]])
def test_long_streams_are_replayed_in_bounded_memory(
    argv: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Items read from a generator-backed stdin, rows and ignored events not held in memory.

    The 3,000 items decoded take about 1.5 MB, and their rows and ignored entries held in
    memory 0.5-1 MB; the replay's peak is about 0.2 MB.
    """
    count = 3000
    monkeypatch.setattr(_spool, "MAX_MEMORY_CHARS", 4096)
    use_stdin(monkeypatch, ignored_events(count))
    output = tmp_path / "out.txt"
    with output.open("w", encoding="utf-8") as stdout:
        monkeypatch.setattr(sys, "stdout", stdout)
        tracemalloc.start()
        try:
            code = main(["replay", "-", "--format", "seed", *argv])
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert (code, capsys.readouterr().err) == (EXIT_OK, "")
    assert peak < 400_000, peak
    out = output.read_text(encoding="utf-8")
    if "--json" in argv:
        document = json.loads(out)
        assert (document["items"], document["events"]) == (count + 3, count + 4)  # + the end
        assert len(document["timeline"]) == count + 4
        assert len(document["ignored"]) == count
        assert document["ignored"][-1]["item"] == count + 3
    else:
        assert len([line for line in out.splitlines() if "(ignored: unknown_id)" in line]) == (
            count
        )
        assert f"ignored ({count}):" in out
        assert out.splitlines()[-1] == "result: ok"
