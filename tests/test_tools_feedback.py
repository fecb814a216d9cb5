"""Feeding results back: the message builders, checked against the SDKs' request types."""

from __future__ import annotations

import dataclasses
import datetime
import json

import anyio
import pytest
from anthropic.types import ContentBlockParam, MessageParam
from google.genai import types as genai
from openai.types.chat import ChatCompletionMessageParam
from openai.types.responses import ResponseInputItemParam
from pydantic import BaseModel, TypeAdapter

from _runner_helpers import call_events, from_list
from _sdk_types import check_cohere, check_converse, check_typed
from conftest import DEADLINE
from toolcall_tracker import ToolCall, ToolCallTracker
from toolcall_tracker.feedback import (
    anthropic_messages,
    bedrock_messages,
    cohere_messages,
    error_text,
    gemini_contents,
    jsonable,
    openai_chat_messages,
    openai_responses_items,
    result_text,
)
from toolcall_tracker.runner import ToolRunner


class Forecast(BaseModel):
    city: str
    high: float


@dataclasses.dataclass
class Stamp:
    at: datetime.date


async def forecast(city: str) -> Forecast:
    return Forecast(city=city, high=21.5)


def stamp() -> Stamp:
    return Stamp(at=datetime.date(2024, 5, 1))


def greet(name: str) -> str:
    return f"hello {name}"


def fail() -> None:
    raise ValueError("nope")


async def finished_calls() -> list[ToolCall]:
    events = [
        *call_events("call_1", "forecast", {"city": "Oslo"}),
        *call_events("call_2", "greet", {"name": "Ann"}),
        *call_events("call_3", "stamp"),
        *call_events("call_4", "fail"),
        *call_events("call_5", "greet", {"name": 3}),
        *call_events("call_6", "greet", '{"name": '),
    ]
    tracker = ToolCallTracker()
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, from_list(events))
            return await ToolRunner([forecast, greet, stamp, fail], eager=True).run(tracker)


@pytest.fixture(scope="module")
def calls() -> list[ToolCall]:
    # The builders are synchronous; the calls are made once, on one backend.
    return anyio.run(finished_calls)


# -- rendering ------------------------------------------------------------------------------


def test_result_and_error_text() -> None:
    assert result_text("plain text") == "plain text"
    assert json.loads(result_text(Forecast(city="x", high=1))) == {"city": "x", "high": 1.0}
    assert json.loads(result_text(Stamp(at=datetime.date(2024, 1, 2)))) == {"at": "2024-01-02"}
    assert json.loads(result_text({"set": {1}})) == {"set": [1]}
    assert json.loads(result_text(object()))  # unknown objects fall back to str
    assert json.loads(error_text("bad")) == {"error": "bad"}
    assert jsonable(None) is None


# -- the four providers -------------------------------------------------------------------


def test_openai_chat_messages(calls: list[ToolCall]) -> None:
    messages = openai_chat_messages(calls)
    for message in messages:
        check_typed(ChatCompletionMessageParam, message)
    assistant, *replies = messages
    assert assistant["role"] == "assistant"
    assert [c["id"] for c in assistant["tool_calls"]] == [c.id for c in calls]
    assert assistant["tool_calls"][1]["function"] == {
        "name": "greet",
        "arguments": '{"name": "Ann"}',
    }
    assert [r["role"] for r in replies] == ["tool"] * 6
    by_id = {r["tool_call_id"]: r["content"] for r in replies}
    assert json.loads(by_id["call_1"]) == {"city": "Oslo", "high": 21.5}
    assert by_id["call_2"] == "hello Ann"
    assert json.loads(by_id["call_3"]) == {"at": "2024-05-01"}
    assert json.loads(by_id["call_4"])["error"]["kind"] == "tool_exception"
    bad = json.loads(by_id["call_5"])["error"]
    assert bad["kind"] == "validation"
    assert bad["errors"][0]["path"] == ["name"]
    assert json.loads(by_id["call_6"])["error"]["kind"] == "invalid_arguments"
    assert openai_chat_messages(calls, include_calls=False) == replies
    assert openai_chat_messages([]) == []


def test_openai_responses_items(calls: list[ToolCall]) -> None:
    items = openai_responses_items(calls)
    for item in items:
        check_typed(ResponseInputItemParam, item)
    assert [i["type"] for i in items] == ["function_call"] * 6 + ["function_call_output"] * 6
    assert items[0] == {
        "type": "function_call",
        "call_id": "call_1",
        "name": "forecast",
        "arguments": '{"city": "Oslo"}',
    }
    assert items[7] == {"type": "function_call_output", "call_id": "call_2", "output": "hello Ann"}
    assert openai_responses_items(calls, include_calls=False) == items[6:]


def test_anthropic_messages(calls: list[ToolCall]) -> None:
    messages = anthropic_messages(calls)
    for message in messages:
        # pydantic validates MessageParam's Iterable content lazily, and iterating that
        # validator panics in pydantic-core here, so the blocks are checked one by one.
        shell = TypeAdapter(MessageParam).validate_python(message)
        assert set(shell) == set(message)
        for block in message["content"]:
            check_typed(ContentBlockParam, block)
    assistant, user = messages
    assert assistant["content"][0] == {
        "type": "tool_use",
        "id": "call_1",
        "name": "forecast",
        "input": {"city": "Oslo"},
    }
    # Its arguments never parsed: the raw text goes back wrapped, as Anthropic advises.
    assert assistant["content"][5]["input"] == {"INVALID_JSON": '{"name": '}
    assert user["role"] == "user"
    flags = {block["tool_use_id"]: block["is_error"] for block in user["content"]}
    assert flags == {
        "call_1": False,
        "call_2": False,
        "call_3": False,
        "call_4": True,
        "call_5": True,
        "call_6": True,
    }
    assert user["content"][3]["content"].startswith('{"error":{"kind":"tool_exception"')
    assert anthropic_messages(calls, include_calls=False) == [user]


def test_gemini_contents(calls: list[ToolCall]) -> None:
    contents = gemini_contents(calls)
    parsed = [genai.Content.model_validate(content) for content in contents]
    model, user = parsed
    assert model.role == "model"
    assert user.role == "user"
    assert model.parts is not None
    assert user.parts is not None
    call = model.parts[0].function_call
    assert call is not None
    assert (call.name, call.args, call.id) == ("forecast", {"city": "Oslo"}, None)
    responses = [part.function_response for part in user.parts]
    assert all(r is not None for r in responses)
    assert responses[0].response == {"output": {"city": "Oslo", "high": 21.5}}  # type: ignore[union-attr]
    assert responses[1].response == {"output": "hello Ann"}  # type: ignore[union-attr]
    assert responses[3].response["error"]["kind"] == "tool_exception"  # type: ignore[index,union-attr]
    with_ids = gemini_contents(calls, include_ids=True, include_calls=False)
    assert len(with_ids) == 1
    part = genai.Content.model_validate(with_ids[0]).parts[0]  # type: ignore[index]
    assert part.function_response.id == "call_1"  # type: ignore[union-attr]


def test_bedrock_messages(calls: list[ToolCall]) -> None:
    messages = bedrock_messages(calls, notes={"call_1": "edited", "call_2": "kept"})
    check_converse(messages)  # botocore's own model of the Converse request
    assistant, user = messages
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {
        "toolUse": {"toolUseId": "call_1", "name": "forecast", "input": {"city": "Oslo"}}
    }
    assert assistant["content"][5]["toolUse"]["input"] == {}  # its arguments never parsed
    assert user["role"] == "user"
    results = [block["toolResult"] for block in user["content"]]
    assert [r["toolUseId"] for r in results] == [c.id for c in calls]
    assert [r["status"] for r in results] == ["success"] * 3 + ["error"] * 3
    assert results[0]["content"] == [
        {"json": {"city": "Oslo", "high": 21.5}},
        {"text": "(Note: edited)"},
    ]
    assert results[1]["content"] == [{"text": "hello Ann\n\n(Note: kept)"}]  # a str: text
    assert results[2]["content"] == [{"json": {"at": "2024-05-01"}}]
    assert results[3]["content"][0]["json"]["error"]["kind"] == "tool_exception"
    assert bedrock_messages(calls, include_calls=False) == [bedrock_messages(calls)[1]]
    assert bedrock_messages([]) == []
    rendered = bedrock_messages(
        calls[2:4], render_result=lambda v: f"R:{v}", render_error=lambda v: "E"
    )
    check_converse(rendered)
    texts = [block["toolResult"]["content"] for block in rendered[1]["content"]]
    assert texts == [[{"text": "R:Stamp(at=datetime.date(2024, 5, 1))"}], [{"text": "E"}]]


def test_cohere_messages(calls: list[ToolCall]) -> None:
    messages = cohere_messages(calls, notes={"call_1": "edited"})
    for message in messages:
        check_cohere("ChatMessageV2", message)
    assistant, *replies = messages
    assert assistant["role"] == "assistant"
    assert assistant["tool_calls"][1] == {
        "id": "call_2",
        "type": "function",
        "function": {"name": "greet", "arguments": '{"name": "Ann"}'},
    }
    assert [r["role"] for r in replies] == ["tool"] * 6
    assert [r["tool_call_id"] for r in replies] == [c.id for c in calls]
    assert replies[0]["content"] == [
        {"type": "document", "document": {"data": {"city": "Oslo", "high": 21.5}}},
        {"type": "text", "text": "(Note: edited)"},
    ]
    assert replies[1]["content"] == [{"type": "text", "text": "hello Ann"}]
    error = replies[3]["content"][0]["document"]["data"]["error"]
    assert error["kind"] == "tool_exception"
    assert cohere_messages(calls, include_calls=False, notes={"call_1": "edited"}) == replies
    assert cohere_messages([]) == []
    bare = ToolCall(id="c", name="stamp", status="done", result=None, args_text="")
    (sent, reply) = cohere_messages([bare])
    assert sent["tool_calls"][0]["function"]["arguments"] == "{}"  # no arguments streamed
    assert reply["content"] == [{"type": "text", "text": "null"}]


def test_unfinished_calls_are_refused() -> None:
    running = ToolCall(id="x", name="greet", status="running")
    for build in (
        openai_chat_messages,
        openai_responses_items,
        anthropic_messages,
        bedrock_messages,
        cohere_messages,
    ):
        with pytest.raises(ValueError, match="still running"):
            build([running])
    with pytest.raises(ValueError, match="still running"):
        gemini_contents([running])


def test_custom_renderers() -> None:
    done = ToolCall(id="a", name="greet", status="done", result={"x": 1}, args_text="{}")
    failed = ToolCall(id="b", name="greet", status="error", error="boom", args_text="{}")
    messages = openai_chat_messages(
        [done, failed],
        include_calls=False,
        render_result=lambda value: f"R:{value}",
        render_error=lambda value: f"E:{value}",
    )
    assert [m["content"] for m in messages] == ["R:{'x': 1}", "E:boom"]
