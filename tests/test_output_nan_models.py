"""NaN and infinities inside pydantic models, on every output path that hands plain data to a
JSON writer (``jsonable``, ``bedrock_messages``, ``cohere_messages``, ``gemini_contents``).

The one output rule (``toolcall_tracker._jsonout``) writes them as ``null``. Before, the
plain-data path returned the model's Python form, which kept the float NaN, and botocore
then wrote ``NaN`` into the request body. Each path is driven by hypothesis with results,
errors and arguments that hold such models, nested in containers.
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict

from toolcall_tracker import Status, ToolCall
from toolcall_tracker.feedback import bedrock_messages, cohere_messages, gemini_contents, jsonable


class Reading(BaseModel):
    value: float
    values: list[float] = []


class Loud(BaseModel):
    model_config = ConfigDict(ser_json_inf_nan="constants")

    value: float


class Wrapper(BaseModel):
    inner: Reading
    extra: dict[str, float] = {}


NON_FINITE = st.sampled_from([math.nan, math.inf, -math.inf])
FLOATS = st.one_of(NON_FINITE, st.floats(allow_nan=True, allow_infinity=True))
MODELS = st.one_of(
    st.builds(Reading, value=FLOATS, values=st.lists(FLOATS, max_size=3)),
    st.builds(Loud, value=FLOATS),
    st.builds(
        Wrapper,
        inner=st.builds(Reading, value=FLOATS),
        extra=st.dictionaries(st.text(max_size=3), FLOATS, max_size=2),
    ),
)
VALUES = st.recursive(
    st.one_of(MODELS, FLOATS, st.text(max_size=4)),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def calls(draw: st.DrawFn) -> list[ToolCall]:
    out = []
    for index in range(draw(st.integers(1, 3))):
        failed = draw(st.booleans())
        out.append(
            ToolCall(
                id=f"c{index}",
                name="measure",
                args_text="{}",
                args={"model": draw(MODELS)},
                status=Status.ERROR if failed else Status.DONE,
                result=None if failed else {"data": draw(VALUES)},
                error={"error": draw(VALUES)} if failed else None,
            )
        )
    return out


def botocore_dumps(value: Any) -> str:
    """What botocore's JSON serialiser would write; refuses NaN and infinities."""
    return json.dumps(value, allow_nan=False, ensure_ascii=False)


SETTINGS = settings(max_examples=120, deadline=None)


@SETTINGS
@given(VALUES)
def test_jsonable_writes_nan_inside_models_as_null(value: Any) -> None:
    botocore_dumps(jsonable(value))


@SETTINGS
@given(calls())
def test_bedrock_messages_never_carry_nan_from_a_model(batch: list[ToolCall]) -> None:
    botocore_dumps(bedrock_messages(batch))


@SETTINGS
@given(calls())
def test_cohere_messages_never_carry_nan_from_a_model(batch: list[ToolCall]) -> None:
    botocore_dumps(cohere_messages(batch))


@SETTINGS
@given(calls(), st.booleans())
def test_gemini_contents_never_carry_nan_from_a_model(
    batch: list[ToolCall], include_ids: bool
) -> None:
    botocore_dumps(gemini_contents(batch, include_ids=include_ids))


def test_a_model_with_nan_becomes_null_on_the_plain_data_path() -> None:
    assert jsonable(Reading(value=math.nan, values=[math.inf, 1.5])) == {
        "value": None,
        "values": [None, 1.5],
    }
    assert jsonable({"m": Loud(value=-math.inf)}) == {"m": {"value": None}}
