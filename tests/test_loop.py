"""ToolLoop: steps over run_turn, fed back with the provider's builder, stopping in the
documented order (cut off, pending approvals, max_steps, a condition, no tool calls), and
resuming from a serialised LoopState."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import DEADLINE
from toolcall_tracker import Status
from toolcall_tracker.cli._input import TextReader, read_items
from toolcall_tracker.runner import LoopState, LoopStep, ToolLoop, ToolRunner
from toolcall_tracker.tools import Tool, tool

pytestmark = pytest.mark.anyio

SECRET = b"a test secret of 32 bytes long!!"


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def calling(*calls: tuple[str, str, dict[str, Any]], finish: str = "tool_calls") -> list[Any]:
    """An OpenAI Chat stream asking for ``calls`` (id, name, args), ending with ``finish``."""
    items = [chunk({"content": "Let me check."})]
    for index, (call_id, name, args) in enumerate(calls):
        head = {"index": index, "id": call_id, "function": {"name": name, "arguments": ""}}
        items.append(chunk({"tool_calls": [head]}))
        text = json.dumps(args)
        for part in (text[: len(text) // 2], text[len(text) // 2 :]):
            piece = {"index": index, "function": {"arguments": part}}
            items.append(chunk({"tool_calls": [piece]}))
    items.append(chunk({}, finish))
    return items


def answering(text: str) -> list[Any]:
    return [chunk({"content": text}), chunk({}, "stop")]


class Model:
    """A scripted model: each step's stream, and every message list it was given."""

    def __init__(self, *streams: list[Any]) -> None:
        self.streams = list(streams)
        self.seen: list[list[Any]] = []

    async def __call__(self, messages: list[Any]) -> AsyncIterator[Any]:
        self.seen.append(messages)
        return self._stream(self.streams.pop(0))

    async def _stream(self, items: list[Any]) -> AsyncIterator[Any]:
        for item in items:
            yield item


ran: list[str] = []


def get_weather(city: str) -> str:
    """The weather."""
    ran.append(f"weather {city}")
    return f"sunny in {city}"


def send_mail(to: str) -> str:
    """Send a mail (gated: side effects)."""
    ran.append(f"mail {to}")
    return "sent"


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


def runner(**options: Any) -> ToolRunner[Any]:
    tools: list[Tool[..., Any]] = [
        tool(get_weather, eager=True),
        tool(send_mail, eager=False, needs_approval=options.pop("approve_mail", False)),
    ]
    return ToolRunner(tools, approval_secret=SECRET, **options)


USER = [{"role": "user", "content": "weather in Oslo?"}]


async def test_two_steps_feed_back_and_stop_without_tool_calls(anyio_backend: str) -> None:
    model = Model(calling(("c1", "get_weather", {"city": "Oslo"})), answering("Sunny."))
    loop = ToolLoop(model, "openai-chat", runner())
    steps: list[LoopStep] = []
    with anyio.fail_after(DEADLINE):
        async for step in loop.steps(USER):
            steps.append(step)
    assert [(s.index, [c.id for c in s.calls], s.stopped) for s in steps] == [
        (0, ["c1"], None),
        (1, [], "no_tool_calls"),
    ]
    state = loop.state
    assert state.stopped == "no_tool_calls"
    assert state.steps == 2
    assert model.seen[0] == USER
    sent = model.seen[1]
    assert sent[:1] == USER
    assert sent[1]["role"] == "assistant"
    assert sent[1]["tool_calls"][0]["id"] == "c1"
    assert sent[2] == {"role": "tool", "tool_call_id": "c1", "content": "sunny in Oslo"}
    assert state.messages == sent  # the final answer asked for nothing to feed back


async def test_a_cut_off_step_never_runs_its_gated_tool(anyio_backend: str) -> None:
    model = Model(
        calling(
            ("w", "get_weather", {"city": "Rome"}), ("m", "send_mail", {"to": "x"}), finish="length"
        )
    )
    with anyio.fail_after(DEADLINE):
        state = await ToolLoop(model, "openai-chat", runner()).run(USER)
    assert state.stopped == "cut_off"
    assert state.end is not None
    assert not state.end.ok
    assert "mail x" not in ran  # gated: the cut-off turn never runs it
    calls = {c.id: c for c in state.calls}
    assert calls["m"].status is Status.ERROR
    assert calls["m"].error.kind in ("turn_cut_off", "not_executed")
    assert state.messages == USER  # nothing fed back
    assert len(model.seen) == 1


async def test_pending_approvals_stop_and_a_serialised_state_resumes(anyio_backend: str) -> None:
    model = Model(
        calling(("w", "get_weather", {"city": "Oslo"}), ("m", "send_mail", {"to": "ada"})),
        answering("Mail sent."),
    )
    the_runner = runner(approve_mail=True)
    with anyio.fail_after(DEADLINE):
        state = await ToolLoop(model, "openai-chat", the_runner).run(USER)
        assert state.stopped == "pending_approvals"
        assert state.pending is not None
        assert [p.call_id for p in state.pending.calls] == ["m"]
        assert ran == ["weather Oslo"]  # the mail waits for a human
        assert state.messages == USER
        wire = state.model_dump_json()  # to the client and back, in a later request
        back = LoopState.model_validate_json(wire)
        assert back.pending is not None
        decision = back.pending.approve("m")
        later = ToolLoop(model, "openai-chat", the_runner)
        final = await later.run(back, [decision])
    assert ran == ["weather Oslo", "mail ada"]
    assert final.stopped == "no_tool_calls"
    assert final.steps == 2
    fed = model.seen[1]
    results = {m["tool_call_id"]: m["content"] for m in fed if m.get("role") == "tool"}
    assert results == {"w": "sunny in Oslo", "m": "sent"}


async def test_max_steps_then_resume_from_the_state(anyio_backend: str) -> None:
    model = Model(
        *(calling((f"c{n}", "get_weather", {"city": f"C{n}"})) for n in range(3)),
        answering("done"),
    )
    with anyio.fail_after(DEADLINE):
        state = await ToolLoop(model, "openai-chat", runner(), max_steps=2).run(USER)
        assert state.stopped == "max_steps"
        assert state.steps == 2
        assert ran == ["weather C0", "weather C1"]
        assert len([m for m in state.messages if m.get("role") == "tool"]) == 2  # fed back
        again = LoopState.model_validate_json(state.model_dump_json())
        final = await ToolLoop(model, "openai-chat", runner(), max_steps=5).run(again)
    assert final.stopped == "no_tool_calls"
    assert final.steps == 4
    assert ran == ["weather C0", "weather C1", "weather C2"]


async def test_a_condition_stops_after_feeding_back(anyio_backend: str) -> None:
    model = Model(calling(("c1", "get_weather", {"city": "Oslo"})), answering("never asked"))

    def stop(step: LoopStep) -> bool:
        return any(call.result == "sunny in Oslo" for call in step.calls)

    with anyio.fail_after(DEADLINE):
        state = await ToolLoop(model, "openai-chat", runner(), stop_when=stop).run(USER)
    assert state.stopped == "condition"
    assert len(model.seen) == 1
    assert state.messages[-1]["content"] == "sunny in Oslo"


async def test_max_steps_takes_precedence_over_the_condition(anyio_backend: str) -> None:
    model = Model(calling(("c1", "get_weather", {"city": "Oslo"})))
    with anyio.fail_after(DEADLINE):
        state = await ToolLoop(
            model, "openai-chat", runner(), max_steps=1, stop_when=lambda step: True
        ).run(USER)
    assert state.stopped == "max_steps"


def test_misuse_names_the_fix() -> None:
    with pytest.raises(ValueError, match="unknown format"):
        ToolLoop(Model(), "openai", runner())
    with pytest.raises(ValueError, match="max_steps"):
        ToolLoop(Model(), "openai-chat", runner(), max_steps=0)
    with pytest.raises(ValueError, match="adapter or no result messages"):
        ToolLoop(Model(), "ai-sdk", runner())


RECORDED = Path(__file__).resolve().parents[1].parent / "shared" / "real-streams" / "recorded"
CALCULATOR = [
    RECORDED / "openai_responses" / f"openai_reasoning_calculator_{n}.sse" for n in (1, 2, 3)
]
needs_recordings = pytest.mark.skipif(
    not all(path.is_file() for path in CALCULATOR), reason=f"{RECORDED} is absent"
)


def recorded_items(path: Path) -> list[Any]:
    with path.open("rb") as file:
        _, found = read_items(TextReader(file))
        return [item.value for item in found]


def calculator(a: int, b: int, op: str) -> int:
    """Calculate (gated: the runner's default)."""
    ran.append(f"{a} {op} {b}")
    return {"add": a + b, "multiply": a * b}[op]


@needs_recordings
async def test_a_recorded_three_step_responses_run(anyio_backend: str) -> None:
    """Three real Responses API steps: each step's call uses the previous result, and each
    result is fed back as the builder writes it."""
    model = Model(*(recorded_items(path) for path in CALCULATOR))
    loop = ToolLoop(model, "openai-responses", ToolRunner([calculator]), max_steps=3)
    with anyio.fail_after(DEADLINE):
        steps = [step async for step in loop.steps([{"role": "user", "content": "compute"}])]
    assert [s.calls[0].result for s in steps] == [19, 57, 570]
    assert ran == ["12 add 7", "19 multiply 3", "57 multiply 10"]
    assert loop.state.stopped == "max_steps"
    outputs = [m for m in loop.state.messages if m.get("type") == "function_call_output"]
    assert [o["output"] for o in outputs] == ["19", "57", "570"]
    assert [o["call_id"] for o in outputs] == [s.calls[0].id for s in steps]
    assert model.seen[2][-1] == outputs[1]  # step 3 was sent step 2's result


@needs_recordings
async def test_a_recorded_step_cut_off_before_its_end_runs_no_gated_tool(
    anyio_backend: str,
) -> None:
    items = recorded_items(CALCULATOR[0])
    kinds = [item.get("type") for item in items]
    cut = kinds.index("response.function_call_arguments.done") + 1  # args complete, no end
    model = Model(items[:cut])
    with anyio.fail_after(DEADLINE):
        state = await ToolLoop(model, "openai-responses", ToolRunner([calculator])).run([])
    assert state.stopped == "cut_off"
    assert ran == []
    assert state.calls[0].status is Status.ERROR
    assert state.calls[0].args == {"a": 12, "b": 7, "op": "add"}  # ready, but gated


async def test_a_state_with_odd_results_still_serialises(anyio_backend: str) -> None:
    class Opaque:
        def __str__(self) -> str:
            return "opaque"

    def odd(city: str) -> Any:
        return {"value": float("nan"), "object": Opaque(), "text": "\ud800"}

    model = Model(calling(("c1", "odd", {"city": "x"})))
    with anyio.fail_after(DEADLINE):
        state = await ToolLoop(
            model, "openai-chat", ToolRunner([odd], eager=True), max_steps=1
        ).run(USER)
    back = LoopState.model_validate_json(state.model_dump_json())
    assert back.calls[0].result == {"value": None, "object": "opaque", "text": "\ufffd"}
    assert back.stopped == "max_steps"
