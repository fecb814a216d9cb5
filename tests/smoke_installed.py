"""A smoke test of an installed wheel, run by .ci/run in a fresh venv outside the source tree.

It checks that the package imported is the installed one (not a checkout), that its version
matches what .ci/run built, and runs one turn through the public API on asyncio: an adapter,
the tracker, the runner, the feedback builder, and the curated root namespace.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

import toolcall_tracker
from toolcall_tracker import ToolCallTracker, ToolRunner, adapt, run_turn, tool
from toolcall_tracker.adapters import AnthropicAdapter
from toolcall_tracker.feedback import anthropic_messages


@tool(eager=True)
async def get_weather(city: str) -> str:
    """Get the weather for a city."""
    return f"sunny in {city}"


async def stream():  # type: ignore[no-untyped-def]
    block = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
    yield {"type": "content_block_start", "index": 0, "content_block": block}
    delta = {"type": "input_json_delta", "partial_json": '{"city": "Oslo"}'}
    yield {"type": "content_block_delta", "index": 0, "delta": delta}
    yield {"type": "content_block_stop", "index": 0}
    yield {"type": "message_delta", "delta": {"stop_reason": "tool_use"}}


async def main() -> None:
    async with ToolCallTracker() as tracker:
        calls = await run_turn(
            tracker, adapt(stream(), AnthropicAdapter()), ToolRunner([get_weather])
        )
    assert [call.result for call in calls] == ["sunny in Oslo"], calls
    assert anthropic_messages(calls)[-1]["role"] == "user"


if __name__ == "__main__":
    location = Path(toolcall_tracker.__file__).resolve()
    assert "site-packages" in location.parts, f"imported from {location}, not the wheel"
    expected = sys.argv[1] if len(sys.argv) > 1 else None
    assert expected is None or toolcall_tracker.__version__ == expected, (
        toolcall_tracker.__version__,
        expected,
    )
    anyio.run(main)
    print(f"smoke test ok: toolcall-tracker {toolcall_tracker.__version__} from {location.parent}")
