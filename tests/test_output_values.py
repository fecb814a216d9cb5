"""Values JSON cannot hold, on every output path: nothing raises, every JSON text is strict.

The core accepts lone surrogates, NaN, huge integers and arbitrary result objects, so the
builders of the next request (``toolcall_tracker.feedback``), the renderers and the tool
definitions must take them all. Hypothesis drives them with such values; the regression
tests below pin each rule (``toolcall_tracker._jsonout``'s docstring has the table).
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import math
import sys
import warnings
from typing import Any

import anyio
from anthropic.types import ContentBlockParam, MessageParam, ToolParam
from google.genai import types as genai
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam
from openai.types.responses import FunctionToolParam, ResponseInputItemParam
from pydantic import BaseModel, ConfigDict

from _runner_helpers import call_events, from_list
from _sdk_types import adapter, check_cohere, check_converse, check_typed
from conftest import DEADLINE
from toolcall_tracker import Status, ToolCall, ToolCallTracker
from toolcall_tracker._jsonout import _json_text, _jsonable, _plain_text
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
from toolcall_tracker.tools import (
    Tool,
    anthropic_tools,
    bedrock_tools,
    cohere_tools,
    gemini_tools,
    openai_chat_tools,
    openai_responses_tools,
)

HUGE = 10**5000  # past Python's default 4,300-digit int <-> str limit
FFFD = "\ufffd"


def reject_constant(name: str) -> Any:
    raise AssertionError(f"{name} is not JSON")


def strict_json(text: str) -> Any:
    """``text`` is strict JSON holding no raw lone surrogate; returns the parsed value.

    Integers are parsed as ``Decimal`` so that one past the digit limit still parses.
    """
    assert isinstance(text, str)
    text.encode("utf-8")  # raises on a raw lone surrogate
    return json.loads(text, parse_constant=reject_constant, parse_int=decimal.Decimal)


def sdk_dumps(value: Any) -> None:
    """What the ``openai`` and ``anthropic`` SDKs do to a request body: raw UTF-8, no NaN."""
    json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")


# -- strategies ------------------------------------------------------------------------------

SURROGATES = st.integers(0xD800, 0xDFFF).map(chr)
TEXT = st.lists(
    st.one_of(
        st.characters(),
        SURROGATES,
        st.sampled_from(['"', "\\", "\x00", "\n", "NaN", "Infinity", "é", "😀", "\u2028"]),
    ),
    max_size=8,
).map("".join)
NAMES = st.one_of(st.sampled_from(["search", "x\ud800", "\udfff", "a\ud83d\ude00b"]), TEXT)
IDS = NAMES.filter(bool)


class Plain:
    """An object pydantic cannot serialise: written as its ``str``."""


class RaisingStr:
    def __str__(self) -> str:
        raise RuntimeError("no str for you")

    __repr__ = __str__


class SurrogateStr:
    def __str__(self) -> str:
        return "bad\ud800str"


class Colour(enum.Enum):
    RED = "r\ud800"
    BLUE = 2


class Reading(BaseModel):
    label: str
    value: float


class Loud(BaseModel):
    model_config = ConfigDict(ser_json_inf_nan="constants")  # writes NaN unless told not to

    value: float


@dataclasses.dataclass
class Point:
    x: Any
    y: Any


FLOATS = st.floats(allow_nan=True, allow_infinity=True)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([5000, 4301, 64, 19]).map(lambda digits: 10**digits),  # repr-safe
    st.sampled_from([-5000, -64]).map(lambda digits: -(10**-digits)),
    FLOATS,
    TEXT,
    st.binary(max_size=8),
    st.binary(max_size=8).map(bytearray),
    st.sampled_from([b"\xff\xfe", b"ok", b"\xed\xa0\x80"]),  # the last: an encoded surrogate
    st.builds(Plain),
    st.builds(RaisingStr),
    st.builds(SurrogateStr),
    st.sampled_from(list(Colour)),
    st.builds(Reading, label=TEXT, value=FLOATS),
    st.builds(Loud, value=FLOATS),
    st.builds(Point, x=FLOATS, y=TEXT),
    st.dates(),
    st.sampled_from([decimal.Decimal("NaN"), decimal.Decimal("1e400"), datetime.timedelta(1)]),
)
HASHABLE = st.one_of(st.none(), st.booleans(), st.integers(), FLOATS, TEXT, st.builds(Plain))
KEYS = st.one_of(TEXT, st.integers(), st.none(), FLOATS, st.tuples(TEXT, st.integers()))


def containers(keys: st.SearchStrategy[Any], hashable: st.SearchStrategy[Any]) -> Any:
    """The ``extend`` of ``st.recursive``: every container kind, with these keys and members."""

    def extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(
            st.lists(children, max_size=4),
            st.lists(children, max_size=3).map(tuple),
            st.dictionaries(keys, children, max_size=4),
            st.frozensets(hashable, max_size=3),
            st.sets(hashable, max_size=3),
            st.builds(Point, x=children, y=children),
        )

    return extend


def with_cycle(value: Any, as_dict: bool) -> Any:
    """A container holding ``value`` and itself."""
    if as_dict:
        cyclic: dict[str, Any] = {"value": value}
        cyclic["self"] = cyclic
        return cyclic
    looped: list[Any] = [value]
    looped.append([looped])
    return looped


ACYCLIC = st.recursive(SCALARS, containers(KEYS, HASHABLE), max_leaves=12)
VALUES = st.one_of(ACYCLIC, st.builds(with_cycle, ACYCLIC, st.booleans()))


@st.composite
def finished_calls(draw: st.DrawFn) -> ToolCall:
    failed = draw(st.booleans())
    args = draw(st.one_of(st.dictionaries(TEXT, VALUES, max_size=3), VALUES))
    return ToolCall(
        id=draw(IDS),
        name=draw(NAMES),
        args_text=draw(TEXT),
        args=args,
        status=Status.ERROR if failed else Status.DONE,
        result=None if failed else draw(VALUES),
        error=draw(VALUES) if failed else None,
    )


CALLS = st.lists(finished_calls(), min_size=1, max_size=3)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check_reply(call: ToolCall, text: str) -> None:
    """The text sent back for ``call`` by the default renderers."""
    text.encode("utf-8")
    if call.status is Status.DONE and isinstance(call.result, str):
        assert text == _plain_text(call.result)  # a str result is sent as it is
        return
    parsed = strict_json(text)
    if call.status is Status.ERROR:
        assert set(parsed) == {"error"}


# -- hypothesis: every output path -----------------------------------------------------------


@SETTINGS
@given(VALUES)
def test_renderers_and_jsonable_take_any_value(value: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pydantic's serialiser warnings are not the point
        text = result_text(value)
        error = error_text(value)
        plain = jsonable(value)
    if isinstance(value, str):
        assert text == _plain_text(value)
    else:
        strict_json(text)
    assert set(strict_json(error)) == {"error"}
    sdk_dumps(plain)  # no surrogate, no NaN, no object JSON cannot hold, no over-long int
    json.dumps(plain)  # google-genai's way


@SETTINGS
@given(CALLS)
def test_openai_chat_messages_take_any_call(calls: list[ToolCall]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        messages = openai_chat_messages(calls)
    sdk_dumps(messages)
    for message in messages:
        check_typed(ChatCompletionMessageParam, message)
    assistant, *replies = messages
    for call, sent in zip(calls, assistant["tool_calls"], strict=True):
        assert sent["id"] == _plain_text(call.id)
        assert sent["function"]["name"] == _plain_text(call.name)
        sent["function"]["arguments"].encode("utf-8")
    for call, reply in zip(calls, replies, strict=True):
        check_reply(call, reply["content"])


@SETTINGS
@given(CALLS)
def test_openai_responses_items_take_any_call(calls: list[ToolCall]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        items = openai_responses_items(calls)
    sdk_dumps(items)
    for item in items:
        check_typed(ResponseInputItemParam, item)
    for call, output in zip(calls, items[len(calls) :], strict=True):
        check_reply(call, output["output"])


@SETTINGS
@given(CALLS)
def test_anthropic_messages_take_any_call(calls: list[ToolCall]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        messages = anthropic_messages(calls)
    sdk_dumps(messages)
    for message in messages:
        shell = adapter(MessageParam).validate_python(message)
        assert set(shell) == set(message)
        for block in message["content"]:
            check_typed(ContentBlockParam, block)
    assistant, user = messages
    assert len(assistant["content"]) == len(calls)
    for use in assistant["content"]:
        assert isinstance(use["input"], dict)
    for call, block in zip(calls, user["content"], strict=True):
        assert block["is_error"] is (call.status is Status.ERROR)
        check_reply(call, block["content"])


@SETTINGS
@given(CALLS, st.booleans())
def test_gemini_contents_take_any_call(calls: list[ToolCall], include_ids: bool) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        contents = gemini_contents(calls, include_ids=include_ids)
    sdk_dumps(contents)
    json.dumps(contents)
    for content in contents:
        parsed = genai.Content.model_validate(content)
        json.dumps(parsed.model_dump(mode="json", exclude_none=True), allow_nan=False)
    for part in contents[1]["parts"]:
        (key,) = part["function_response"]["response"]
        assert key in ("output", "error")


def check_structured_or_text(call: ToolCall, content: list[Any], data_key: str) -> None:
    """A Bedrock / Cohere result: a JSON object as data, anything else as the default text."""
    (block,) = content
    if data_key in block:
        data = block[data_key] if data_key == "json" else block[data_key]["data"]
        assert isinstance(data, dict)
        if call.status is Status.ERROR:
            assert set(data) == {"error"}
    else:
        check_reply(call, block["text"])


@SETTINGS
@given(CALLS, st.booleans())
def test_bedrock_messages_take_any_call(calls: list[ToolCall], nonempty: bool) -> None:
    if nonempty:  # botocore refuses an empty name by its own model, whatever the model sent
        calls = [call.model_copy(update={"name": call.name or "x"}) for call in calls]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        messages = bedrock_messages(calls)
    sdk_dumps(messages)
    json.dumps(messages, allow_nan=False)  # botocore's way
    if all(call.name for call in calls):
        check_converse(messages)
    assistant, user = messages
    for call, block in zip(calls, assistant["content"], strict=True):
        assert block["toolUse"]["toolUseId"] == _plain_text(call.id)
        assert isinstance(block["toolUse"]["input"], dict)
    for call, block in zip(calls, user["content"], strict=True):
        result = block["toolResult"]
        assert result["status"] == ("error" if call.status is Status.ERROR else "success")
        check_structured_or_text(call, result["content"], "json")


@SETTINGS
@given(CALLS)
def test_cohere_messages_take_any_call(calls: list[ToolCall]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        messages = cohere_messages(calls)
    sdk_dumps(messages)
    for message in messages:
        check_cohere("ChatMessageV2", message)
    assistant, *replies = messages
    for call, sent in zip(calls, assistant["tool_calls"], strict=True):
        assert sent["id"] == _plain_text(call.id)
        sent["function"]["arguments"].encode("utf-8")
    for call, reply in zip(calls, replies, strict=True):
        assert reply["tool_call_id"] == _plain_text(call.id)
        check_structured_or_text(call, reply["content"], "document")


@SETTINGS
@given(st.one_of(TEXT, st.none()), st.lists(VALUES, max_size=3), FLOATS)
def test_tool_definitions_take_any_description_and_default(
    description: str | None, defaults: list[Any], number: float
) -> None:
    def probe(a: float = number, b: Any = None) -> None:
        """Probe."""

    probe.__defaults__ = (number, defaults)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pydantic warns about defaults it leaves out
        spec = Tool(probe, description=description)
    for definition in openai_chat_tools([spec]):
        sdk_dumps(definition)
        check_typed(ChatCompletionToolParam, definition)
    for definition in openai_responses_tools([spec]):
        sdk_dumps(definition)
        check_typed(FunctionToolParam, definition)
    for definition in anthropic_tools([spec]):
        sdk_dumps(definition)
        check_typed(ToolParam, definition)
    for definition in gemini_tools([spec]):
        sdk_dumps(definition)
        genai.Tool.model_validate(definition)
    sdk_dumps(bedrock_tools([spec]))
    check_converse(tools=bedrock_tools([spec]))
    for definition in cohere_tools([spec]):
        sdk_dumps(definition)
        check_cohere("ToolV2", definition)


CLEAN_TEXT = st.text(st.characters(codec="utf-8"), max_size=6)  # no surrogates
CLEAN_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), FLOATS, CLEAN_TEXT, st.binary(max_size=4)
)
CLEAN_VALUES = st.recursive(
    CLEAN_SCALARS, containers(st.one_of(CLEAN_TEXT, st.integers()), CLEAN_TEXT), max_leaves=10
)


@SETTINGS
@given(CLEAN_VALUES, TEXT)
def test_json_text_and_jsonable_agree(value: Any, forcing: str) -> None:
    """Both follow the same rules: without surrogates the text parses back to the data, on
    the fast path and on the slow one (a surrogate elsewhere in the value forces it)."""
    assert strict_json(_json_text(value)) is not None or _json_text(value) == "null"
    parsed = json.loads(_json_text(value))
    assert parsed == _jsonable(value)
    slow = json.loads(_json_text([value, "\ud800", forcing]))
    assert slow[0] == parsed
    assert _jsonable([value, "\ud800"])[0] == parsed


# -- regressions, one per rule -----------------------------------------------------------------


def unknown_tool_call(name: str) -> ToolCall:
    """A call of a tool that does not exist, failed by a real runner (``UnknownTool``)."""

    def known() -> str:
        return "ok"

    async def run() -> list[ToolCall]:
        tracker = ToolCallTracker()
        with anyio.fail_after(DEADLINE):
            async with anyio.create_task_group() as tg:
                tg.start_soon(tracker.consume, from_list(call_events("call_1", name, {})))
                return await ToolRunner([known], eager=True).run(tracker)

    (call,) = anyio.run(run)
    assert call.status is Status.ERROR
    assert call.error.kind == "unknown_tool"
    return call


def test_a_surrogate_tool_name_from_the_model_is_fed_back_on_every_provider() -> None:
    call = unknown_tool_call("look\ud800up")
    assert call.error.tool == "look\ud800up"  # the model's name reaches the error value

    chat = openai_chat_messages([call])
    assert chat[0]["tool_calls"][0]["function"]["name"] == f"look{FFFD}up"
    error = strict_json(chat[1]["content"])["error"]
    assert error["tool"] == "look\ud800up"  # escaped in the JSON text, given back by loads
    assert "\\ud800" in chat[1]["content"]

    responses = openai_responses_items([call])
    assert responses[0]["name"] == f"look{FFFD}up"
    assert strict_json(responses[1]["output"])["error"]["kind"] == "unknown_tool"

    anthropic = anthropic_messages([call])
    assert anthropic[0]["content"][0]["name"] == f"look{FFFD}up"
    assert strict_json(anthropic[1]["content"][0]["content"])["error"]["tool"] == "look\ud800up"

    gemini = gemini_contents([call])
    assert gemini[1]["parts"][0]["function_response"]["name"] == f"look{FFFD}up"
    assert gemini[1]["parts"][0]["function_response"]["response"]["error"]["tool"] == (
        f"look{FFFD}up"
    )
    bedrock = bedrock_messages([call])
    assert bedrock[0]["content"][0]["toolUse"]["name"] == f"look{FFFD}up"
    error = bedrock[1]["content"][0]["toolResult"]["content"][0]["json"]["error"]
    assert error["tool"] == f"look{FFFD}up"  # a JSON value handed to the SDK: U+FFFD
    cohere = cohere_messages([call])
    assert cohere[0]["tool_calls"][0]["function"]["name"] == f"look{FFFD}up"
    assert cohere[1]["content"][0]["document"]["data"]["error"]["tool"] == f"look{FFFD}up"
    for built in (chat, responses, anthropic, gemini, bedrock, cohere):
        sdk_dumps(built)


def test_surrogates_in_ids_results_and_arguments() -> None:
    call = ToolCall(
        id="call_\udc00",
        name="search",
        args_text='{"q": "\ud800"}',
        args={"q": "\ud800"},
        status=Status.DONE,
        result={"hit\udfff": ["\ud800"]},
    )
    assistant, reply = openai_chat_messages([call])
    assert assistant["tool_calls"][0]["id"] == f"call_{FFFD}"
    arguments = assistant["tool_calls"][0]["function"]["arguments"]
    assert arguments == '{"q": "\\ud800"}'  # argument text is JSON: escaped, value kept
    assert json.loads(arguments) == call.args
    assert reply["tool_call_id"] == f"call_{FFFD}"
    assert reply["content"] == '{"hit\\udfff":["\\ud800"]}'
    assert json.loads(reply["content"]) == call.result
    use = anthropic_messages([call])[0]["content"][0]
    assert use["input"] == {"q": FFFD}  # a JSON value handed to the SDK: U+FFFD
    # A str result is sent as it is, so it is a plain string: U+FFFD.
    assert result_text("a\ud800b") == f"a{FFFD}b"
    assert result_text("plain") == "plain"


def test_a_custom_renderer_s_surrogates_are_replaced() -> None:
    call = ToolCall(id="a", name="greet", status=Status.DONE, result=1, args_text="{}")
    (message,) = openai_chat_messages(
        [call], include_calls=False, render_result=lambda value: f"R\ud800{value}"
    )
    assert message["content"] == f"R{FFFD}1"


def test_bytes_are_their_utf8_text_and_invalid_bytes_are_replaced() -> None:
    assert result_text(b"caf\xc3\xa9") == '"café"'
    assert result_text(b"\xff\xfeok") == f'"{FFFD}{FFFD}ok"'  # was UnicodeDecodeError
    assert result_text(bytearray(b"\xff")) == f'"{FFFD}"'
    assert jsonable({"raw": b"\xed\xa0\x80"}) == {"raw": FFFD * 3}  # an encoded surrogate
    assert strict_json(error_text(b"\x80")) == {"error": FFFD}


def test_nan_and_infinities_are_null_and_integers_stay_exact() -> None:
    value = {"nan": math.nan, "inf": math.inf, "ninf": -math.inf, "big": 2**200, "n": [1.5]}
    text = result_text(value)
    assert text == f'{{"nan":null,"inf":null,"ninf":null,"big":{2**200},"n":[1.5]}}'  # was NaN
    assert jsonable(value) == {"nan": None, "inf": None, "ninf": None, "big": 2**200, "n": [1.5]}
    assert result_text(Loud(value=math.inf)) == '{"value":null}'  # despite the model's config
    assert jsonable(Loud(value=math.nan)) == {"value": None}
    huge = result_text([HUGE, "\ud800"])  # the slow path writes it exactly too
    assert huge.startswith("[1" + "0" * 5000 + ",")
    assert strict_json(huge)[0] == decimal.Decimal(HUGE)
    # Python's JSON writers refuse an int past the digit limit, so data gets its digits.
    assert jsonable([HUGE]) == ["1" + "0" * 5000]
    assert jsonable([-HUGE, 10**50]) == ["-1" + "0" * 5000, 10**50]


def test_objects_json_cannot_hold_never_raise() -> None:
    looped: list[Any] = [1]
    looped.append(looped)
    mapping: dict[str, Any] = {}
    mapping["self"] = mapping
    assert result_text(looped) == '[1,"<cycle>"]'  # was ValueError
    assert result_text(mapping) == '{"self":"<cycle>"}'
    assert result_text(RaisingStr()) == '"<RaisingStr>"'  # was RuntimeError
    assert result_text([RaisingStr(), "\ud800"]) == '["<RaisingStr>","\\ud800"]'
    assert result_text(SurrogateStr()) == '"bad\\ud800str"'
    assert jsonable(SurrogateStr()) == f"bad{FFFD}str"
    assert result_text({1, 2}) in ("[1,2]", "[2,1]")
    assert jsonable(Point(x={3}, y=(1, b"\xff"))) == {"x": [3], "y": [1, FFFD]}
    assert result_text(Reading(label="t", value=math.nan)) == '{"label":"t","value":null}'
    assert strict_json(result_text(Plain())).startswith("<")
    shared = [1]
    assert jsonable([shared, shared]) == [[1], [1]]  # repeated, not a cycle


def test_nesting_past_the_limit_is_cut_not_raised() -> None:
    deep: list[Any] = []
    inner = deep
    for _ in range(sys.getrecursionlimit() * 3):
        inner.append([])
        inner = inner[0]
    text = result_text(deep)
    assert '"<too deep>"' in text
    strict_json(text)
    assert isinstance(jsonable(deep), list)


def test_tool_definitions_take_surrogates_and_nan() -> None:
    def probe(ratio: float = math.nan, label: str = "x\ud800", data: bytes = b"\xff") -> None:
        """Probe \udfff the values.

        Args:
            ratio: a \ud800 ratio.
        """

    def unprintable(value: Any = RaisingStr()) -> None:  # noqa: B008
        """Has a default whose str raises."""

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = Tool(probe)
        odd = Tool(unprintable)  # was RuntimeError
    assert "default" not in odd.parameters["properties"]["value"]
    properties = spec.parameters["properties"]
    assert properties["ratio"]["default"] is None
    assert properties["ratio"]["description"] == f"a {FFFD} ratio."
    assert properties["label"]["default"] == f"x{FFFD}"
    assert spec.description == "Probe \udfff the values."  # the tool keeps what it was given
    (chat,) = openai_chat_tools([spec])
    assert chat["function"]["description"] == f"Probe {FFFD} the values."
    check_typed(ChatCompletionToolParam, chat)
    renderers = (
        openai_chat_tools,
        openai_responses_tools,
        anthropic_tools,
        gemini_tools,
        bedrock_tools,
        cohere_tools,
    )
    for render in renderers:
        sdk_dumps(render([spec, odd]))
