"""ToolLoop against a model of its rules (hypothesis): for any script of steps (answers,
eager or gated calls, cut-off steps, calls awaiting approval, a step function that raises)
and any ``max_steps``, the loop stops where the rules' precedence says, after the steps
the model predicts, and never runs a gated tool of a cut-off step."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import DEADLINE
from toolcall_tracker.runner import ToolLoop, ToolRunner
from toolcall_tracker.tools import tool

KINDS = ("answer", "eager", "gated", "cut_gated", "approval", "raises")


class StepFailed(Exception):
    pass


def stream_for(kind: str, n: int) -> list[Any]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    if kind == "answer":
        return [chunk({"content": "done"}), chunk({}, "stop")]
    name = {"eager": "look", "gated": "act", "cut_gated": "act", "approval": "ask"}[kind]
    call = {
        "index": 0,
        "id": f"c{n}",
        "function": {"name": name, "arguments": json.dumps({"n": n})},
    }
    return [
        chunk({"tool_calls": [call]}),
        chunk({}, "length" if kind == "cut_gated" else "tool_calls"),
    ]


def predict(script: list[str], max_steps: int) -> tuple[str | None, int]:
    """(stop reason, steps taken), or ("raises", steps before) when the step function raises."""
    for taken, kind in enumerate(script[:max_steps], 1):
        if kind == "raises":
            return "raises", taken - 1
        if kind == "cut_gated":
            return "cut_off", taken
        if kind == "approval":
            return "pending_approvals", taken
        if taken == max_steps:
            return "max_steps", taken
        if kind == "answer":
            return "no_tool_calls", taken
    raise AssertionError("scripts end with an answer")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=60, deadline=None)
@given(
    script=st.lists(st.sampled_from(KINDS), max_size=6).map(lambda s: [*s, "answer"]),
    max_steps=st.integers(1, 8),
)
def test_the_loop_follows_its_rules(backend: str, script: list[str], max_steps: int) -> None:
    ran: list[str] = []

    def look(n: int) -> int:
        ran.append(f"look {n}")
        return n

    def act(n: int) -> int:
        ran.append(f"act {n}")
        return n

    def ask(n: int) -> int:
        ran.append(f"ask {n}")
        return n

    runner = ToolRunner(
        [tool(look, eager=True), act, tool(ask, needs_approval=True)],
        approval_secret=b"x" * 32,
    )
    position = iter(range(len(script)))

    async def step(messages: list[Any]) -> AsyncIterator[Any]:
        n = next(position)
        if script[n] == "raises":
            raise StepFailed(n)
        return served(stream_for(script[n], n))

    async def served(items: list[Any]) -> AsyncIterator[Any]:
        for item in items:
            yield item

    async def main() -> tuple[str | None, int]:
        loop = ToolLoop(step, "openai-chat", runner, max_steps=max_steps)
        with anyio.fail_after(DEADLINE):
            try:
                state = await loop.run([{"role": "user", "content": "go"}])
            except StepFailed:
                return "raises", loop.state.steps
        return state.stopped, state.steps

    reason, steps = anyio.run(main, backend=backend)
    assert (reason, steps) == predict(script, max_steps)
    for n, kind in enumerate(script[:steps]):
        if kind in ("cut_gated", "approval"):  # never ran: cut off, or awaiting a human
            assert not any(entry.endswith(f" {n}") for entry in ran), (n, kind, ran)
        elif kind in ("eager", "gated"):
            assert f"{'look' if kind == 'eager' else 'act'} {n}" in ran
