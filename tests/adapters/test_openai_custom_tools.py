"""OpenAI Responses custom tools: free-text input becomes a call whose text is one JSON
string, answered with ``custom_tool_call_output``; other call-like items are reported,
never dropped silently; the adapter's records stay within ``Limits.max_calls``.

The transcript ``tests/fixtures/openai_responses/custom_tool_call.sse`` is hand-written
from the documented event shapes (no real recording of a custom tool call exists in
``shared/real-streams``); the official client, where installed, reads the same bytes and
must accumulate the same input.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from toolcall_tracker import Limits, Status, ToolCallTracker, tool_call_streaming_state_machine
from toolcall_tracker.adapters import OpenAIResponsesAdapter, adapt, apply_stream
from toolcall_tracker.adapters.openai import OpenAIArgumentsMismatch
from toolcall_tracker.feedback import openai_responses_items

FIXTURE = Path(__file__).parents[1] / "fixtures" / "openai_responses" / "custom_tool_call.sse"
INPUT = "SELECT * FROM users LIMIT 5;"
DEADLINE = 10.0


def items() -> list[dict[str, Any]]:
    return [
        json.loads(line[len("data: ") :])
        for line in FIXTURE.read_text(encoding="utf-8").splitlines()
        if line.startswith("data: ")
    ]


def typed(item: dict[str, Any]) -> Any:
    """The SDK's typed event, nested items included, built as the client builds it (its
    lenient constructor: fields a newer SDK requires may be absent from older streams)."""
    from openai._models import construct_type
    from openai.types.responses import ResponseStreamEvent

    event = construct_type(value=item, type_=ResponseStreamEvent)
    assert type(event).__name__ != "dict"
    return event


def replay(stream: list[Any], limits: Limits | None = None) -> Any:
    machine = tool_call_streaming_state_machine(limits=limits)
    apply_stream(machine, stream, OpenAIResponsesAdapter())
    return machine


def custom_call(call_id: str, text: str, *, index: int = 0) -> list[dict[str, Any]]:
    """A custom tool's call streamed in two fragments, its done events and nothing else."""
    item = {"id": f"ctc_{call_id}", "type": "custom_tool_call", "call_id": call_id, "name": "t"}
    half = len(text) // 2
    return [
        {
            "type": "response.output_item.added",
            "output_index": index,
            "item": {**item, "input": ""},
        },
        *(
            {
                "type": "response.custom_tool_call_input.delta",
                "output_index": index,
                "item_id": f"ctc_{call_id}",
                "delta": part,
            }
            for part in (text[:half], text[half:])
            if part
        ),
        {
            "type": "response.custom_tool_call_input.done",
            "output_index": index,
            "item_id": f"ctc_{call_id}",
            "input": text,
        },
        {
            "type": "response.output_item.done",
            "output_index": index,
            "item": {**item, "input": text},
        },
    ]


COMPLETED = {"type": "response.completed", "response": {"status": "completed", "output": []}}


@pytest.mark.parametrize("shape", ["dict", "typed"])
def test_a_custom_tool_call_is_a_call_whose_text_is_one_json_string(shape: str) -> None:
    stream = items() if shape == "dict" else [typed(item) for item in items()]
    machine = replay(stream)
    (call,) = machine.list()
    assert (call.id, call.name) == ("call_Qx7LmT2vR9sK4pNw", "sql_query")
    assert call.args_text == json.dumps(INPUT)
    assert call.args == INPUT
    assert call.status == Status.RUNNING
    assert machine.end is not None
    assert machine.end.ok


def test_the_official_client_accumulates_the_same_input() -> None:
    openai = pytest.importorskip("openai")
    body = FIXTURE.read_bytes()

    def handler(request: Any) -> Any:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    async def main() -> list[tuple[str, str]]:
        client = openai.AsyncOpenAI(
            api_key="sk-test",
            base_url="http://oracle.test/v1",
            max_retries=0,
            http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
        )
        async with client.responses.stream(model="m", input="hi") as stream:
            async for _ in stream:
                pass
            final = await stream.get_final_response()
        return [(i.name, i.input) for i in final.output if i.type == "custom_tool_call"]

    official = anyio.run(main)
    ours = [(call.name, call.args) for call in replay(items()).list()]
    assert official == ours == [("sql_query", INPUT)]


@pytest.mark.parametrize(
    "text",
    ['say "hi"\n', "back\\slash\ttab", "ünïcødé ☃ \U0001f600", "", "{}", '"quoted"', "\x00"],
)
def test_any_free_text_survives_as_the_calls_args(text: str) -> None:
    machine = replay([*custom_call("c1", text), COMPLETED])
    (call,) = machine.list()
    assert call.status == Status.RUNNING
    assert call.args == text
    assert json.loads(call.args_text) == text


def test_a_final_input_that_disagrees_fails_the_call() -> None:
    stream = custom_call("c1", "SELECT 1")
    stream[-2] = {**stream[-2], "input": "DROP TABLE users"}
    machine = replay([*stream, COMPLETED])
    (call,) = machine.list()
    assert call.status == Status.ERROR
    assert isinstance(call.error, OpenAIArgumentsMismatch)
    assert call.error.source == "response.custom_tool_call_input.done"


def test_a_final_input_that_extends_the_streamed_text_completes_it() -> None:
    stream = custom_call("c1", "SELECT 1")
    stream[-2] = {**stream[-2], "input": "SELECT 1 + 1"}
    stream[-1]["item"]["input"] = "SELECT 1 + 1"
    (call,) = replay([*stream, COMPLETED]).list()
    assert call.args == "SELECT 1 + 1"


def test_an_input_sent_only_at_the_end_is_the_call() -> None:
    item = {"id": "ctc_1", "type": "custom_tool_call", "call_id": "c1", "name": "t", "input": "x"}
    completed = {"type": "response.completed", "response": {"output": [item]}}
    (call,) = replay([completed]).list()
    assert (call.id, call.args, call.status) == ("c1", "x", Status.RUNNING)


def test_feedback_answers_a_custom_call_in_its_own_shape() -> None:
    machine = replay([*custom_call("c1", INPUT), *custom_call("c2", "{}", index=1), COMPLETED])
    for call in machine.list():
        machine.write_result(call.id, "3 rows")
    feedback = openai_responses_items(machine.list())
    assert [(item["type"], item["call_id"]) for item in feedback] == [
        ("custom_tool_call", "c1"),
        ("custom_tool_call", "c2"),
        ("custom_tool_call_output", "c1"),
        ("custom_tool_call_output", "c2"),
    ]
    assert feedback[0]["input"] == INPUT
    assert feedback[1]["input"] == "{}"  # free text that happens to look like JSON
    assert feedback[2]["output"] == "3 rows"


def test_function_calls_are_still_answered_as_function_calls() -> None:
    machine = tool_call_streaming_state_machine()
    machine.write_start("f1", "f")
    machine.write_delta("f1", ' {"a": 1}')
    machine.write_ready("f1")
    machine.write_result("f1", 1)
    kinds = [item["type"] for item in openai_responses_items(machine.list())]
    assert kinds == ["function_call", "function_call_output"]


@pytest.mark.parametrize(
    ("item_type", "level"),
    [("computer_call", logging.WARNING), ("local_shell_call", logging.WARNING)],
)
def test_a_call_item_that_is_not_understood_is_reported(
    item_type: str, level: int, caplog: pytest.LogCaptureFixture
) -> None:
    added = {
        "type": "response.output_item.added",
        "output_index": 0,
        "item": {"type": item_type, "id": "x1", "call_id": "cu_1"},
    }
    with caplog.at_level(logging.DEBUG, logger="toolcall_tracker.adapters.openai"):
        machine = replay([added, COMPLETED])
    assert machine.list() == []
    (record,) = [r for r in caplog.records if item_type in r.getMessage()]
    assert record.levelno == level
    assert "answer it yourself" in record.getMessage()


def test_a_call_the_server_runs_is_not_reported_as_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    added = {
        "type": "response.output_item.added",
        "output_index": 0,
        "item": {"type": "web_search_call", "id": "ws_1"},
    }
    with caplog.at_level(logging.DEBUG, logger="toolcall_tracker.adapters.openai"):
        replay([added, COMPLETED])
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_records_stay_within_max_calls_and_late_events_are_ignored() -> None:
    adapter = OpenAIResponsesAdapter()
    machine = tool_call_streaming_state_machine(limits=Limits(max_calls=10))
    for n in range(500):
        for item in custom_call(f"c{n}", "x", index=n)[:-1]:  # ready at the input's done
            adapter.write(item, machine)
        for call in machine.list():
            if call.status == Status.RUNNING:
                machine.write_result(call.id, "ok")
                machine.forget(call.id)
        assert len(adapter._order) <= 10  # ready calls are released once 10 are kept
    late = custom_call("c3", "x", index=3)[-1]  # output_item.done of a released record
    adapter.write(late, machine)
    adapter.finish(machine)
    assert machine.list() == []
    assert machine.end is not None


@pytest.mark.anyio
async def test_through_a_tracker_on_each_backend(anyio_backend: str) -> None:
    async def source() -> Any:
        for item in items():
            yield item

    with anyio.fail_after(DEADLINE):
        async with ToolCallTracker() as tracker:
            await tracker.consume(adapt(source(), OpenAIResponsesAdapter()))
            (call,) = tracker.machine.list()
            assert call.args == INPUT


def test_the_machine_and_tracker_lend_their_text_instead_of_a_copy() -> None:
    stream = custom_call("c1", "y" * 5000)[:-2]  # streamed, not yet done
    machine = tool_call_streaming_state_machine()
    adapter = OpenAIResponsesAdapter()
    for item in stream:
        adapter.write(item, machine)
    assert machine.args_text("c1") == '"' + "y" * 5000
    assert machine.args_text("nope") is None
    (record,) = adapter._order
    assert record.copy is None  # no second copy: the final input is checked against the sink's
    tracker = ToolCallTracker()
    tracker.write_start("t1", "f")
    tracker.write_delta("t1", "{")
    assert tracker.args_text("t1") == "{"


def test_through_feed_the_adapter_keeps_its_own_copy_to_compare() -> None:
    adapter = OpenAIResponsesAdapter()
    stream = custom_call("c1", "SELECT 1")
    stream[-2] = {**stream[-2], "input": "SELECT 2"}
    events = [event for item in stream for event in adapter.feed(item)]
    assert type(events[-1]).__name__ == "Error"
    assert events[-1].error.kind == "arguments_mismatch"


def test_the_adapters_memory_does_not_grow_with_the_number_of_calls() -> None:
    """The issue's reproduction, scaled down: a stream of many calls while the machine
    tracks 100; what the adapter keeps is bounded, not one record per call."""
    import gc
    import tracemalloc

    def traced(calls: int) -> int:
        limits = Limits(max_calls=100, remember_forgotten=100)  # ids remembered: 200
        machine = tool_call_streaming_state_machine(limits=limits)
        adapter = OpenAIResponsesAdapter()
        gc.collect()
        tracemalloc.start()
        try:
            for n in range(calls):
                for item in custom_call(f"c{n}", "x", index=n):
                    adapter.write(item, machine)
            gc.collect()
            return tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()

    small, large = traced(1_000), traced(10_000)
    assert large < 1.5 * small
