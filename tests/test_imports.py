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


def test_the_snapshot_names_moved_with_a_deprecated_alias() -> None:
    from toolcall_tracker import Status, ToolCall, events

    with pytest.warns(DeprecationWarning, match="toolcall_tracker.calls"):
        assert events.ToolCall is ToolCall
    with pytest.warns(DeprecationWarning, match="events.Status"):
        assert events.Status is Status
