"""The package root imports lazily: the sync machine and the sans-IO adapters need no anyio."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import toolcall_tracker


def run_isolated(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return result.stdout.strip()


def test_the_machine_and_an_adapter_run_without_anyio() -> None:
    out = run_isolated(
        """
        import sys
        from toolcall_tracker import tool_call_streaming_state_machine
        from toolcall_tracker.adapters import AnthropicAdapter, apply_stream

        machine = tool_call_streaming_state_machine()
        apply_stream(machine, [
            {"type": "content_block_start", "index": 0,
             "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {}}},
            {"type": "content_block_delta", "index": 0,
             "delta": {"type": "input_json_delta", "partial_json": '{"q": 1}'}},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
            {"type": "message_stop"},
        ], AnthropicAdapter())
        assert machine.get("t1").args == {"q": 1}, machine.list()
        loaded = [m for m in ("anyio", "toolcall_tracker.runner", "toolcall_tracker.cli",
                              "toolcall_tracker.tracker") if m in sys.modules]
        print(",".join(loaded) or "none")
        """
    )
    assert out == "none"


def test_every_public_name_resolves_and_is_listed() -> None:
    for name in toolcall_tracker.__all__:
        assert getattr(toolcall_tracker, name) is not None, name
    assert set(toolcall_tracker.__all__) <= set(dir(toolcall_tracker))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchThing"):
        toolcall_tracker.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018


def test_the_aliases_promised_to_go_are_gone() -> None:
    """``events.ToolCall`` / ``events.Status`` warned in 0.1 and went in 0.2.0."""
    from toolcall_tracker import events

    for name in ("ToolCall", "Status"):
        with pytest.raises(AttributeError, match=name):
            getattr(events, name)


DAILY = {
    "ToolCallTracker",
    "ToolCallStateMachine",
    "tool_call_streaming_state_machine",
    "IgnoreReason",
    *("Start", "Delta", "Ready", "Result", "Error", "End", "Event", "EventInput"),
    "parse_event",
    "ToolCall",
    "Status",
    *("ToolRunner", "RunControl", "run_turn", "run_tools", "tool", "Tool"),
    *("Limits", "DEFAULT_LIMITS"),
    *("ToolCallTrackerError", "InvalidEvent", "ToolCallFailed", "UnknownToolCall"),
    *("TrackerClosed", "ApprovalRefused"),
    *("CallFailure", "InvalidArguments", "IncompleteArguments", "ArgumentsTooLarge"),
    *("ValidationFailed", "UnknownTool", "ToolRaised", "CallTimedOut", "NotExecuted"),
    *("CallCancelled", "ApprovalDenied", "ApprovalCheckFailed", "ClaimFailed"),
    "OutcomeInDoubt",
    "adapt",
    "__version__",
}


def test_the_root_exports_exactly_the_daily_names() -> None:
    assert set(toolcall_tracker.__all__) == DAILY
    assert not set(toolcall_tracker.__all__) & set(toolcall_tracker.MOVED)


@pytest.mark.parametrize("name", sorted(toolcall_tracker.MOVED))
def test_a_name_that_left_the_root_warns_and_is_the_same_object(name: str) -> None:
    home = toolcall_tracker.MOVED[name]
    module = __import__(home, fromlist=[name])
    with pytest.warns(DeprecationWarning, match=rf"toolcall_tracker\.{name} moved to {home}"):
        alias = getattr(toolcall_tracker, name)
    assert alias is getattr(module, name)
    # documented where it lives now, unless deprecated there too (FinishedCalls, 0.2.0)
    assert name in module.__all__ or name in getattr(module, "DEPRECATED", ())
    assert name not in dir(toolcall_tracker)


def test_from_import_of_a_moved_name_warns_every_time() -> None:
    for _ in range(2):
        with pytest.warns(DeprecationWarning, match="toolcall_tracker.runner"):
            from toolcall_tracker import PendingApprovals  # noqa: F401


def test_a_root_name_is_the_object_its_module_defines() -> None:
    from toolcall_tracker import adapters, runner

    assert toolcall_tracker.adapt is adapters.adapt
    assert toolcall_tracker.run_turn is runner.run_turn
    assert toolcall_tracker.ToolRunner is runner.ToolRunner


def test_the_changelog_lists_every_name_that_left_the_root() -> None:
    from pathlib import Path

    changelog = (Path(__file__).resolve().parents[1] / "CHANGELOG.md").read_text("utf-8")
    for name in toolcall_tracker.MOVED:
        assert f"`{name}`" in changelog, name


def test_the_version_is_the_packages() -> None:
    import re
    from pathlib import Path

    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text("utf-8")
    match = re.search(r'^version = "([^"]+)"$', pyproject, re.M)
    assert match is not None
    assert toolcall_tracker.__version__ == match.group(1)
    changelog = (Path(__file__).resolve().parents[1] / "CHANGELOG.md").read_text("utf-8")
    assert re.search(
        rf"^## \[{re.escape(match.group(1))}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M
    )


def test_tool_options_is_a_deprecated_alias_of_runner_settings() -> None:
    from toolcall_tracker import runner

    with pytest.warns(DeprecationWarning, match="renamed RunnerSettings"):
        alias = runner.ToolOptions
    assert alias is runner.RunnerSettings
    assert "ToolOptions" not in runner.__all__
    assert "RunnerSettings" in runner.__all__


def test_durable_error_lives_in_the_durable_protocol_not_in_a_backend() -> None:
    from toolcall_tracker import durable
    from toolcall_tracker.durable import _protocol, _redis, _sqlite

    assert durable.DurableError is _protocol.DurableError
    assert durable.DurableError.__module__ == _protocol.__name__
    assert issubclass(durable.TurnSuperseded, durable.DurableError)
    for backend in (_sqlite, _redis):  # a backend uses the error; it is not its home
        assert "DurableError" not in getattr(backend, "__all__", ())


@pytest.mark.parametrize(
    "name", ["CallFailure", "InvalidArguments", "IncompleteArguments", "ArgumentsTooLarge"]
)
def test_an_error_value_lives_in_failures_and_its_old_home_warns(name: str) -> None:
    from toolcall_tracker import errors, failures

    assert name in failures.__all__
    assert name not in errors.__all__
    with pytest.warns(DeprecationWarning, match="moved to toolcall_tracker.failures"):
        alias = getattr(errors, name)
    assert alias is getattr(failures, name) is getattr(toolcall_tracker, name)


def test_fail_call_is_an_exception_of_errors_and_its_old_home_warns() -> None:
    from toolcall_tracker import errors, failures

    assert "FailCall" in errors.__all__
    assert "FailCall" not in failures.__all__
    with pytest.warns(DeprecationWarning, match="moved to toolcall_tracker.errors"):
        alias = failures.FailCall
    assert alias is errors.FailCall
    with pytest.raises(TypeError, match="takes a CallFailure"):
        errors.FailCall("not a failure")  # type: ignore[arg-type]


def test_every_error_value_is_in_failures_and_every_exception_in_errors() -> None:
    from pydantic import BaseModel

    from toolcall_tracker import errors, failures

    for name in errors.__all__:
        assert issubclass(getattr(errors, name), Exception), name
    for name in failures.__all__:
        assert issubclass(getattr(failures, name), BaseModel), name
