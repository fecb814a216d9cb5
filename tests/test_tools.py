"""Tool specs: names, descriptions, argument models and the provider tool definitions.

The definitions are checked against the official SDKs' request types (openai, anthropic,
google-genai), so what the helpers return can be sent as-is.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal

import anyio
import pytest
from anthropic.types import ToolParam
from google.genai import types as genai
from openai.types.chat import ChatCompletionToolParam
from openai.types.responses import FunctionToolParam
from pydantic import BaseModel, Field, ValidationError

from _runner_helpers import call_events, from_list
from _sdk_types import check_cohere, check_converse, check_typed
from conftest import DEADLINE
from toolcall_tracker import Status, ToolCallTracker, _signature
from toolcall_tracker.runner import ToolRunner
from toolcall_tracker.tools import (
    Tool,
    anthropic_tools,
    bedrock_tools,
    cohere_tools,
    gemini_tools,
    openai_chat_tools,
    openai_responses_tools,
    tool,
    tools_by_name,
)


class Location(BaseModel):
    """A place."""

    city: str
    country: str = "NO"


async def weather(
    location: Location,
    unit: Literal["C", "F"] = "C",
    days: Annotated[int, Field(ge=1, le=7, description="How many days (1-7).")] = 1,
) -> dict[str, Any]:
    """Get the weather forecast.

    Longer explanation for the model.

    Args:
        location: where to look.
        unit (str): the temperature unit,
            Celsius or Fahrenheit.
        days: ignored, the annotation's description wins.

    Returns:
        The forecast.
    """
    return {"city": location.city, "unit": unit, "days": days}


def lookup(title: str, schema: int = 0, model_config: str = "x") -> str:
    """Look a title up.

    :param title: the title to look up.
    :param int schema: a parameter named like a pydantic attribute.
    :returns: what was found.
    """
    return f"{title}/{schema}/{model_config}"


def no_doc(x):  # type: ignore[no-untyped-def]
    return x


# -- specs ----------------------------------------------------------------------------------


def test_name_description_and_parameter_docs_come_from_the_function() -> None:
    spec = Tool(weather)
    assert spec.name == "weather"
    assert spec.description == "Get the weather forecast.\n\nLonger explanation for the model."
    assert spec.is_async
    props = spec.parameters["properties"]
    assert props["location"]["description"] == "where to look."
    assert props["unit"]["description"] == "the temperature unit, Celsius or Fahrenheit."
    assert props["days"]["description"] == "How many days (1-7)."
    assert spec.parameters["required"] == ["location"]

    rest = Tool(lookup)
    assert not rest.is_async
    assert rest.description == "Look a title up."
    assert rest.parameters["properties"]["title"]["description"] == "the title to look up."
    assert set(rest.parameters["properties"]) == {"title", "schema", "model_config"}


def test_schema_has_no_generated_titles_but_keeps_a_property_called_title() -> None:
    schema = Tool(lookup).parameters
    assert "title" not in schema
    assert "title" in schema["properties"]
    assert "title" not in schema["properties"]["title"]
    nested = Tool(weather).parameters
    assert "title" not in nested["$defs"]["Location"]
    assert nested["additionalProperties"] is False
    assert nested["properties"]["unit"] == {
        "default": "C",
        "description": "the temperature unit, Celsius or Fahrenheit.",
        "enum": ["C", "F"],
        "type": "string",
    }


def test_parameters_is_a_fresh_copy() -> None:
    spec = Tool(lookup)
    spec.parameters["properties"].clear()
    assert spec.parameters["properties"]


def test_bind_validates_and_applies_defaults() -> None:
    spec = Tool(weather)
    args, kwargs = spec.bind({"location": {"city": "Oslo"}, "days": "3"})
    assert args == ()
    assert kwargs == {"location": Location(city="Oslo"), "unit": "C", "days": 3}
    with pytest.raises(ValidationError) as info:
        spec.bind({"location": {}, "unit": "K", "days": 9, "nope": 1})
    locs = {tuple(error["loc"]) for error in info.value.errors()}
    assert locs == {("location", "city"), ("unit",), ("days",), ("nope",)}
    with pytest.raises(ValidationError):
        spec.bind(None)


def test_bind_handles_positional_only_var_keyword_and_unannotated() -> None:
    def f(a: int, /, b: str, *rest: int, **extra: Any) -> str:
        return f"{a}{b}{rest}{extra}"

    spec = Tool(f)
    args, kwargs = spec.bind({"a": "1", "b": "x", "more": [1]})
    assert args == (1,)
    assert kwargs == {"b": "x", "more": [1]}
    assert f(*args, **kwargs) == "1x(){'more': [1]}"
    assert spec.parameters.get("additionalProperties") is not False

    loose = Tool(no_doc)
    assert loose.bind({"x": [1, {"y": None}]}) == ((), {"x": [1, {"y": None}]})
    assert loose.description == ""


def test_tool_forms_and_options() -> None:
    @tool
    def plain(x: int) -> int:
        return x

    @tool(name="renamed", eager=True, timeout=2.5, description="Custom.")
    async def fancy(x: int) -> int:
        return x

    assert isinstance(plain, Tool)
    assert plain(3) == 3  # still callable directly
    assert (plain.name, plain.eager, plain.timeout) == ("plain", None, None)
    assert (fancy.name, fancy.eager, fancy.timeout) == ("renamed", True, 2.5)
    assert fancy.description == "Custom."
    gated = tool(fancy, eager=False)
    assert (gated.name, gated.eager, gated.timeout) == ("renamed", False, 2.5)
    assert "gated" in repr(gated)


def test_async_detection_sees_through_partials_and_callable_objects() -> None:
    class Service:
        async def __call__(self, q: str) -> str:
            return q

    assert Tool(functools.partial(weather, unit="F"), name="weather_f").is_async
    assert Tool(Service(), name="service").is_async
    assert Tool(Service(), name="service").parameters["required"] == ["q"]


def test_invalid_names_and_options_are_rejected() -> None:
    with pytest.raises(ValueError, match="invalid tool name"):
        Tool(lambda: None)
    with pytest.raises(ValueError, match="invalid tool name"):
        Tool(lookup, name="has space")
    with pytest.raises(ValueError, match="invalid tool name"):
        Tool(lookup, name="x" * 65)
    with pytest.raises(ValueError, match="timeout"):
        Tool(lookup, timeout=0)
    with pytest.raises(TypeError, match="already a Tool"):
        Tool(Tool(lookup))
    assert Tool(lambda: None, name="anon").name == "anon"


@pytest.mark.parametrize(
    "name",
    [
        "search\n",  # was accepted: re.match with "$" allows a trailing newline
        "\nsearch",
        "has space",
        "x" * 65,
        "",
        "1st_tool",  # Gemini wants a letter or "_" first
        "-x",
        "web.search",  # Gemini takes dots and colons, OpenAI and Anthropic do not
        "ns:search",
        "caf\u00e9",
        "x\ud800",
    ],
)
def test_a_name_a_provider_would_refuse_is_rejected(name: str) -> None:
    with pytest.raises(ValueError, match="1 to 64 ASCII letters, digits, '_' or '-'") as info:
        Tool(lookup, name=name)
    assert "starting with a letter or '_'" in str(info.value)
    with pytest.raises(ValueError, match="invalid tool name"):
        tool(lookup, name=name)
    with pytest.raises(ValueError, match="invalid tool name"):
        tools_by_name({name: lookup})


@pytest.mark.parametrize("name", ["a", "_private", "get_weather", "send-mail", "A9", "x" * 64])
def test_names_every_provider_accepts_are_kept(name: str) -> None:
    spec = Tool(lookup, name=name)
    assert spec.name == name
    assert openai_chat_tools([spec])[0]["function"]["name"] == name
    check_typed(ChatCompletionToolParam, openai_chat_tools([spec])[0])


def test_tools_by_name_accepts_lists_and_mappings() -> None:
    listed = tools_by_name([weather, tool(lookup, name="find")])
    assert list(listed) == ["weather", "find"]
    mapped = tools_by_name({"w": weather, "l": tool(lookup, eager=True)})
    assert list(mapped) == ["w", "l"]
    assert mapped["l"].name == "l"
    assert mapped["l"].eager is True
    with pytest.raises(ValueError, match="two tools"):
        tools_by_name([lookup, tool(weather, name="lookup")])
    with pytest.raises(TypeError, match="callable"):
        tools_by_name(["lookup"])  # type: ignore[list-item]


@pytest.mark.anyio
async def test_argument_models_are_built_once_per_tool(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with anyio.fail_after(DEADLINE):
        built: list[str] = []
        real = _signature.create_model

        def counting(name: str, **kwargs: Any) -> Any:
            built.append(name)
            return real(name, **kwargs)

        monkeypatch.setattr(_signature, "create_model", counting)
        runner = ToolRunner([lookup, weather], eager=True)
        assert built == ["lookup_arguments", "weather_arguments"]
        events = [
            event
            for i in range(5)
            for event in call_events(f"c{i}", "lookup", {"title": f"t{i}", "schema": i})
        ]
        tracker = ToolCallTracker()
        async with anyio.create_task_group() as tg:
            tg.start_soon(tracker.consume, from_list(events))
            calls = await runner.run(tracker)
        assert [call.result for call in calls] == [f"t{i}/{i}/x" for i in range(5)]
        assert all(call.status is Status.DONE for call in calls)
        assert built == ["lookup_arguments", "weather_arguments"]


# -- provider definitions, checked against the SDKs' request types --------------------------


TOOLS = [weather, lookup, tool(no_doc, name="no_doc")]


def test_openai_chat_tools() -> None:
    defs = openai_chat_tools(TOOLS)
    assert [d["function"]["name"] for d in defs] == ["weather", "lookup", "no_doc"]
    for definition in defs:
        check_typed(ChatCompletionToolParam, definition)
    assert defs[0]["type"] == "function"
    assert defs[0]["function"]["parameters"] == Tool(weather).parameters
    assert "description" not in defs[2]["function"]


def test_openai_responses_tools() -> None:
    defs = openai_responses_tools(TOOLS)
    for definition in defs:
        check_typed(FunctionToolParam, definition)
    assert defs[1] == {
        "type": "function",
        "name": "lookup",
        "description": "Look a title up.",
        "parameters": Tool(lookup).parameters,
        "strict": False,
    }


def test_anthropic_tools() -> None:
    defs = anthropic_tools(TOOLS)
    for definition in defs:
        check_typed(ToolParam, definition)
    assert defs[0]["input_schema"]["type"] == "object"
    assert defs[0]["description"].startswith("Get the weather")


def test_gemini_tools() -> None:
    defs = gemini_tools(TOOLS)
    assert len(defs) == 1
    parsed = genai.Tool.model_validate(defs[0])  # the SDK's models forbid unknown keys
    declarations = parsed.function_declarations or []
    assert [d.name for d in declarations] == ["weather", "lookup", "no_doc"]
    assert declarations[0].parameters_json_schema == Tool(weather).parameters
    assert declarations[1].description == "Look a title up."


def test_bedrock_tools() -> None:
    defs = bedrock_tools(TOOLS)
    check_converse(tools=defs)  # botocore's own model of the Converse request
    assert [d["toolSpec"]["name"] for d in defs] == ["weather", "lookup", "no_doc"]
    assert defs[1] == {
        "toolSpec": {
            "name": "lookup",
            "description": "Look a title up.",
            "inputSchema": {"json": Tool(lookup).parameters},
        }
    }
    assert "description" not in defs[2]["toolSpec"]  # Bedrock refuses an empty one


def test_cohere_tools() -> None:
    defs = cohere_tools(TOOLS)
    for definition in defs:
        check_cohere("ToolV2", definition)
    assert defs[0] == {
        "type": "function",
        "function": {
            "name": "weather",
            "description": Tool(weather).description,
            "parameters": Tool(weather).parameters,
        },
    }
    assert "description" not in defs[2]["function"]


def test_a_runner_s_tools_feed_the_definitions() -> None:
    runner = ToolRunner({"wx": weather, "find": lookup})
    names = [d["name"] for d in anthropic_tools(runner.tools)]
    assert names == ["wx", "find"]
