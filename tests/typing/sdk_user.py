"""A typed user program: checked with plain ``mypy --strict`` (no plugin) by
``tests/test_typing.py``, never run. It hands the library's tool definitions and feedback
straight to the official OpenAI and Anthropic clients, mixed with the SDKs' own param types.
"""

from __future__ import annotations

from anthropic import Anthropic
from anthropic.types import MessageParam, ToolUnionParam
from openai import OpenAI
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolUnionParam
from openai.types.responses import ResponseInputParam, ToolParam

from toolcall_tracker import Delta, End, Start, ToolCall, ToolCallStateMachine, ToolRunner, tool
from toolcall_tracker.feedback import (
    anthropic_messages,
    openai_chat_messages,
    openai_responses_items,
)
from toolcall_tracker.tools import anthropic_tools, openai_chat_tools, openai_responses_tools


@tool(eager=True)
async def search(query: str, limit: int = 5) -> list[str]:
    """Search the web."""
    return [query] * limit


def events() -> list[Start | Delta | End]:
    return [
        Start(id="t1", name="search"),
        Delta(id="t1", args_text_delta='{"query": "tools"}'),  # the Python name
        End(ok=True, reason="tool_calls"),
    ]


def finished_calls() -> list[ToolCall]:
    machine = ToolCallStateMachine()
    for event in events():
        machine.apply(event)
    return machine.list()


def openai_chat(client: OpenAI, calls: list[ToolCall]) -> None:
    runner = ToolRunner([search])
    history: list[ChatCompletionMessageParam] = [{"role": "user", "content": "find tools"}]
    client.chat.completions.create(
        model="gpt-4.1",
        tools=openai_chat_tools(runner.tools),
        messages=[*history, *openai_chat_messages(calls)],
    )
    history += openai_chat_messages(calls, include_calls=False)
    tools: list[ChatCompletionToolUnionParam] = openai_chat_tools([search])
    tools.append({"type": "function", "function": {"name": "extra"}})
    client.chat.completions.create(model="gpt-4.1", tools=tools, messages=history)


def openai_responses(client: OpenAI, calls: list[ToolCall]) -> None:
    items: ResponseInputParam = openai_responses_items(calls)
    tools: list[ToolParam] = openai_responses_tools([search])
    client.responses.create(model="gpt-4.1", tools=tools, input=items)
    client.responses.create(
        model="gpt-4.1",
        tools=openai_responses_tools([search]),
        input=[{"role": "user", "content": "again"}, *openai_responses_items(calls)],
    )


def anthropic(client: Anthropic, calls: list[ToolCall]) -> None:
    messages: list[MessageParam] = [{"role": "user", "content": "find tools"}]
    messages += anthropic_messages(calls)
    tools: list[ToolUnionParam] = anthropic_tools([search])
    client.messages.create(
        model="claude-sonnet-4-5", max_tokens=1024, tools=tools, messages=messages
    )
    client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=1024,
        tools=anthropic_tools([search]),
        messages=anthropic_messages(calls),
    )
