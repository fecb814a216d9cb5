"""The command line's terminal output: the live view (rich), the plain fallback, widths,
the SVG timeline, ``demo``, the format-mismatch hint and the README's examples.

Everything runs in-process through ``main(argv)``; the live view is forced with ``--live``
(rich's ``Console(force_terminal=True)``), or chosen by a stdout that says it is a TTY.
"""

from __future__ import annotations

import glob
import io
import itertools
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from toolcall_tracker import tool_call_streaming_state_machine
from toolcall_tracker.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, main
from toolcall_tracker.cli._input import Item
from toolcall_tracker.cli._watch import ReplayWatch

ROOT = Path(__file__).parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
ALL_FIXTURES = sorted(
    path for path in FIXTURES.glob("*/*") if path.suffix in (".sse", ".json", ".jsonl")
)
SEED_INTERLEAVED = FIXTURES / "seed" / "interleaved.jsonl"
SVG = "{http://www.w3.org/2000/svg}"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")
CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def fixture_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


def document(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, Any]:
    """The fixture's ``--json`` document (the reference for the other outputs)."""
    code, out, _ = run(capsys, "replay", "--json", path)
    assert code in (EXIT_OK, EXIT_FAILED)
    result: dict[str, Any] = json.loads(out)
    return result


def words(text: str) -> str:
    """Whitespace-normalised text: wrapped lines joined back."""
    return " ".join(text.split())


class FakeTTY(io.StringIO):
    """A stdout that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")


# -- the live view and the plain fallback --------------------------------------------------


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=fixture_id)
def test_live_view_on_every_fixture(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reference = document(capsys, path)
    code, raw, err = run(capsys, "replay", "--live", "--events", path)
    assert err == ""
    assert code == (EXIT_OK if reference["ok"] else EXIT_FAILED)
    assert "\x1b[" in raw  # drawn for a terminal
    out = ANSI.sub("", raw)
    assert "replaying" in out  # the live table's title
    assert " pending " in out.replace("\n", " ") or not reference["calls"]
    flat = out.replace("\n", "")
    for call in reference["calls"]:
        assert call["id"][:16] in flat
        assert call["status"] in out
    verdict = "result: ok" if reference["ok"] else "result: FAILED"
    assert verdict in out
    assert ("calls: none" in out) == (not reference["calls"])


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=fixture_id)
def test_plain_output_on_every_fixture(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reference = document(capsys, path)
    code, out, err = run(capsys, "replay", "--plain", path)
    assert err == ""
    assert "\x1b" not in out
    assert code == (EXIT_OK if reference["ok"] else EXIT_FAILED)
    for call in reference["calls"]:
        assert any(line.strip().startswith(call["id"][:14]) for line in out.splitlines())


def test_a_terminal_gets_the_live_view_and_a_pipe_plain_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stdout", tty)
    assert main(["replay", str(SEED_INTERLEAVED)]) == EXIT_FAILED
    assert "\x1b[" in tty.getvalue()
    pipe = io.StringIO()
    monkeypatch.setattr(sys, "stdout", pipe)
    assert main(["replay", str(SEED_INTERLEAVED)]) == EXIT_FAILED
    assert "\x1b" not in pipe.getvalue()
    assert pipe.getvalue().splitlines()[-1] == "result: FAILED (1 call failed)"


def test_without_rich_a_terminal_gets_plain_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rich", None)  # `import rich` fails
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stdout", tty)
    assert main(["replay", str(SEED_INTERLEAVED)]) == EXIT_FAILED
    assert "\x1b" not in tty.getvalue()
    assert "calls (3):" in tty.getvalue()
    assert main(["demo", "--fast"]) == EXIT_OK
    assert "pending -> error" in tty.getvalue()


def test_without_rich_live_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "rich", None)
    code, out, err = run(capsys, "replay", "--live", SEED_INTERLEAVED)
    assert (code, out) == (EXIT_USAGE, "")
    assert err.count("\n") == 1
    assert "toolcall-tracker[cli]" in err


def test_rich_is_imported_only_when_wanted() -> None:
    script = (
        "import sys\n"
        "from toolcall_tracker.cli import main\n"
        f"main(['replay', '--plain', {str(SEED_INTERLEAVED)!r}])\n"
        f"main(['validate', {str(SEED_INTERLEAVED)!r}])\n"
        "print('rich' in sys.modules, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert done.stderr.strip() == "False"


def test_live_summary_shows_the_parse_error_at_its_position(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, raw, _ = run(capsys, "replay", "--live", SEED_INTERLEAVED)
    lines = ANSI.sub("", raw).splitlines()
    at = next(i for i, line in enumerate(lines) if "stop parsing at character 11" in line)
    assert lines[at + 1].strip() == '{"expr": 1+}'
    assert lines[at + 2].index("^") == lines[at + 1].index("+")
    assert any("6 items" in line and "t1" in line for line in lines)  # t1 pending 6 items


def test_plain_summary_shows_the_parse_error_at_its_position(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out, _ = run(capsys, "replay", SEED_INTERLEAVED)
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if "stop parsing at character 11" in line)
    assert lines[at + 1].strip() == '{"expr": 1+}'
    assert lines[at + 2].index("^") == lines[at + 1].index("+")


def test_hostile_text_cannot_drive_the_terminal_in_the_live_view(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile = "x\x1b[2J\x1b]0;pwn\x07[bold red]RED[/]\u202e"
    events = [
        {"type": "start", "id": "a" + hostile, "name": "n" + hostile},
        {"type": "delta", "id": "a" + hostile, "argsTextDelta": '{"k": 1'},
        {"type": "ready", "id": "a" + hostile},
        {"type": "end", "reason": hostile},
    ]
    path = tmp_path / "hostile.jsonl"
    path.write_text("\n".join(json.dumps(event) for event in events))
    svg = tmp_path / "hostile.svg"
    code, out, err = run(capsys, "replay", "--live", "--events", path, "--svg", svg)
    assert (code, err) == (EXIT_FAILED, "")
    for bad in ("\x1b[2J", "\x1b]0;", "\x07", "\u202e"):
        assert bad not in out
    assert "[bold red]RED[/]" in out  # shown as text, not taken as markup
    ET.fromstring(svg.read_text(encoding="utf-8"))  # escaped for XML too


# -- widths -----------------------------------------------------------------------------------


@pytest.mark.parametrize("columns", [60, 80, 200])
@pytest.mark.parametrize("path", ALL_FIXTURES, ids=fixture_id)
def test_output_fits_the_width(
    path: Path, columns: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = document(capsys, path)
    monkeypatch.setenv("COLUMNS", str(columns))
    outputs = [
        run(capsys, "replay", "--events", path)[1],
        run(capsys, "validate", path)[1],
        # A live frame ends with a carriage return before the next one is drawn over it.
        CSI.sub("", run(capsys, "replay", "--live", path)[1]).replace("\r", "\n"),
    ]
    for out in outputs[::2]:
        for line in out.splitlines():
            assert len(line.rstrip()) <= columns, line
    for line in outputs[1].splitlines():  # validate: one record a line, never wrapped
        assert line.startswith(f"{path}: "), line
    for call in reference["calls"]:
        error = call["error"]
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            message = words(f"{error['kind']}: {error['message']}")
            for out in outputs[:2]:  # plain: the whole error, wrapped at words
                assert message in words(out)
            if columns == 200 and len(message) < 120:  # wide: on one line
                assert any(message in line for line in outputs[0].splitlines())


def test_a_narrow_timeline_drops_columns_it_cannot_fit(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "50")
    _, out, _ = run(capsys, "replay", "--events", SEED_INTERLEAVED)
    assert "(the column of call #3 does not fit in 50 columns)" in words(out)
    monkeypatch.setenv("COLUMNS", "200")
    _, out, _ = run(capsys, "replay", "--events", SEED_INTERLEAVED)
    assert "do not fit" not in out
    assert "(ignored: duplicate_start)" in out


# -- the SVG timeline -------------------------------------------------------------------------


def bars(root: ET.Element) -> list[ET.Element]:
    return root.findall(f"{SVG}g[@class='call']")


def segments(group: ET.Element) -> list[tuple[str, float, float]]:
    """``(state, x, x + width)`` of a call's state segments, in document order."""
    out = []
    for rect in group.findall(f"{SVG}rect"):
        classes = rect.get("class", "").split()
        if classes[:1] == ["state"]:
            x = float(rect.get("x", "nan"))
            out.append((classes[1], x, x + float(rect.get("width", "nan"))))
    return out


def check_geometry(root: ET.Element, calls: list[dict[str, Any]]) -> None:
    """One bar per call, its state segments in order along x, ending in its status."""
    groups = bars(root)
    assert [group.get("data-id") for group in groups] == [call["id"] for call in calls]
    stream = root.find(f"{SVG}rect[@class='stream']")
    assert stream is not None
    left = float(stream.get("x", "nan"))
    right = left + float(stream.get("width", "nan"))
    for group, call in zip(groups, calls, strict=True):
        parts = segments(group)
        states = [state for state, _, _ in parts]
        assert states[0] == "pending"
        assert states[-1] == call["status"]
        assert len(states) == len(set(states))
        assert set(states) <= {"pending", "running", "done", "error"}
        for (_, x0, x1), (_, nx0, _) in itertools.pairwise(parts):
            assert x0 <= x1 <= nx0 + 0.01
        assert parts[0][1] >= left - 0.01  # calls start inside the stream's span
        assert parts[0][1] <= right + 0.01


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=fixture_id)
def test_svg_geometry_on_every_fixture(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = document(capsys, path)
    target = tmp_path / "timeline.svg"
    code, _, err = run(capsys, "replay", path, "--svg", target)
    assert err == ""
    assert code == (EXIT_OK if reference["ok"] else EXIT_FAILED)
    root = ET.fromstring(target.read_text(encoding="utf-8"))
    assert root.get("data-axis") == "items"
    check_geometry(root, reference["calls"])
    for group in bars(root):  # a replay runs no tool
        assert group.findall(f"{SVG}rect[@class='tool']") == []


def test_svg_of_a_timed_recording_is_in_seconds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = [json.loads(line) for line in SEED_INTERLEAVED.read_text().splitlines()]
    timed = tmp_path / "timed.jsonl"
    timed.write_text(
        "".join(json.dumps({"t": i * 0.002, "item": e}) + "\n" for i, e in enumerate(events))
    )
    target = tmp_path / "timed.svg"
    code, _, _ = run(capsys, "replay", "--live", "--speed", "0", timed, "--svg", target)
    assert code == EXIT_FAILED
    root = ET.fromstring(target.read_text(encoding="utf-8"))
    assert root.get("data-axis") == "seconds"
    machine = tool_call_streaming_state_machine()
    for event in events:
        machine.apply(event)
    check_geometry(root, [call.model_dump(mode="json") for call in machine.list()])
    t1 = dict((s, (a, b)) for s, a, b in segments(bars(root)[0]))
    rects = {r.get("class"): r for r in bars(root)[0].findall(f"{SVG}rect")}
    pending = rects["state pending"]
    assert float(pending.get("data-from", "nan")) == 0.0  # t1 started with item 1 (t=0)
    assert float(pending.get("data-to", "nan")) == pytest.approx(0.012)  # ready at item 7
    assert t1["pending"][1] < t1["running"][1]


def test_a_timed_replay_runs_at_recorded_speed() -> None:
    """The watch paces a live replay by the items' times (a fake clock: no real sleep)."""
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    class View:
        frames = 0

        def draw(self, log: Any, done: int, total: int | None) -> None:
            View.frames += 1

    class Reader:
        bytes_read, size = 0, None

    watch = ReplayWatch(View(), speed=2.0, clock=lambda: now[0], sleep=sleep)
    watch.attach(tool_call_streaming_state_machine(), Reader())  # type: ignore[arg-type]
    for number, time in enumerate([10.0, 10.5, 12.0, 12.0, 11.0], 1):
        watch.item(Item(number, number, {}, 0, time))
    assert now[0] == pytest.approx(1.0)  # 2 s recorded, twice as fast (11.0 < 12.0 waits 0)
    assert max(slept) <= 0.1  # redrawn while waiting
    assert watch.log.now == 2.0
    assert View.frames > 5


# -- demo -------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_demo_without_a_terminal(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "demo.svg"
    code, out, err = run(capsys, "demo", "--fast", "--backend", backend, "--svg", target)
    assert (code, err) == (EXIT_OK, "")
    assert "\x1b" not in out
    lines = out.splitlines()
    assert any("call_3" in line and "pending -> error" in line for line in lines)
    for call_id in ("call_1", "call_2", "call_4"):
        assert any(call_id in line and "running -> done" in line for line in lines)
    assert any("call_1" in line and "before the stream ended" in line for line in lines)
    assert "stop parsing at character" in out
    assert "turn: ok (tool_calls)" in out
    root = ET.fromstring(target.read_text(encoding="utf-8"))
    assert root.get("data-axis") == "seconds"
    groups = {group.get("data-id"): group for group in bars(root)}
    assert list(groups) == ["call_1", "call_2", "call_3", "call_4"]
    for call_id, group in groups.items():
        tool = group.find(f"{SVG}rect[@class='tool']")
        assert (tool is None) == (call_id == "call_3")  # tool bars only where tools ran
        if tool is not None:
            running = next(s for s in segments(group) if s[0] == "running")
            assert running[1] <= float(tool.get("x", "nan")) + 0.01
            tool_end = float(tool.get("x", "nan")) + float(tool.get("width", "nan"))
            assert tool_end <= running[2] + 0.01
    headstarts = [g.get("data-id") for g in groups.values() if g.find(f"{SVG}line") is not None]
    assert {"call_1", "call_2"} <= set(headstarts)
    assert "call_4" not in headstarts  # gated: it ran after the end


def test_demo_live(capsys: pytest.CaptureFixture[str]) -> None:
    code, raw, err = run(capsys, "demo", "--fast", "--live")
    assert (code, err) == (EXIT_OK, "")
    out = ANSI.sub("", raw)
    assert "tool ran" in out
    assert "stop parsing at character" in out
    assert "turn: ok (tool_calls)" in out


# -- the format-mismatch hint ---------------------------------------------------------------

WRONG = {
    "openai_chat": "gemini",
    "gemini": "anthropic",
    "anthropic": "events",
    "openai_responses": "ai-sdk",
    "ai_sdk": "openai-responses",
    "seed": "openai-chat",
}


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=fixture_id)
def test_a_wrong_format_names_the_one_that_fits(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    right = document(capsys, path)["format"]
    wrong = WRONG[path.parent.name]
    for argv in (["replay", "--format", wrong, path], ["validate", "--format", wrong, path]):
        code, out, err = run(capsys, *argv)
        assert (code, out) == (EXIT_USAGE, "")
        assert err.count("\n") == 1
        assert f"of the {wrong} format" in err
        assert f"(pass --format {right})" in err


def test_mismatch_message_for_the_issue_example(capsys: pytest.CaptureFixture[str]) -> None:
    path = FIXTURES / "openai_chat" / "interleaved.sse"
    _, _, err = run(capsys, "replay", "--format", "gemini", path)
    assert err == (
        f"toolcall-tracker: error: {path}: none of the 6 items is of the gemini format; "
        "6 of 6 look like openai-chat (pass --format openai-chat)\n"
    )


# -- the docs (docs/cli.md) ---------------------------------------------------------------


def test_readme_validate_example_passes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    command = next(
        line.split("#")[0].split()
        for line in readme.splitlines()
        if line.startswith("toolcall-tracker validate ")
    )
    monkeypatch.chdir(ROOT)
    files = [name for pattern in command[2:] for name in sorted(glob.glob(pattern))]
    assert len(files) >= 8
    code, out, _ = run(capsys, "validate", *files)
    assert code == EXIT_OK, out
    assert len(out.splitlines()) == len(files)


def test_readme_replay_example_is_what_replay_prints(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Debugging a stream") :]
    block = section[section.index("```console\n") + len("```console\n") :]
    block = block[: block.index("```")]
    command, *expected = block.splitlines()
    assert command.startswith("$ toolcall-tracker replay ")
    monkeypatch.chdir(ROOT)
    code, out, _ = run(capsys, *command.split()[2:])
    assert code == EXIT_FAILED
    assert out.splitlines() == expected
    assert (ROOT / "docs" / "demo-timeline.svg").is_file()
    assert "](demo-timeline.svg)" in section


def test_a_long_file_gets_a_progress_bar(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolcall_tracker.cli import _live

    monkeypatch.setattr(_live, "PROGRESS_BYTES", 100)
    _, raw, _ = run(capsys, "replay", "--live", SEED_INTERLEAVED)
    assert "MiB read" in ANSI.sub("", raw)
    monkeypatch.setattr(_live, "PROGRESS_BYTES", 10**9)
    _, raw, _ = run(capsys, "replay", "--live", SEED_INTERLEAVED)
    assert "MiB read" not in ANSI.sub("", raw)
