"""The event models' own route through ``_decode.decode`` (read from the model's fields,
without ``parse_event``) gives exactly what the general route gives, for every model a
user can build, ``model_construct`` with fields of the wrong type included."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolcall_tracker import _decode
from toolcall_tracker.errors import InvalidEvent
from toolcall_tracker.events import Delta, Error, Ready, Result, Start

_VALUES = st.one_of(
    st.none(),
    st.text(max_size=4),
    st.integers(),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
)
_TYPES = st.sampled_from(["start", "delta", "ready", "result", "error", "end", "other"])
_MODELS = st.sampled_from([Start, Delta, Ready, Result, Error])
_FIELDS = ["id", "name", "args_text_delta", "result", "error"]


def _outcome(event: object) -> Any:
    try:
        return ("ok", _decode.decode(event))
    except InvalidEvent as exc:
        return ("invalid", str(exc))


@given(
    model=_MODELS,
    kind=st.one_of(st.none(), _TYPES),
    values=st.dictionaries(st.sampled_from(_FIELDS), _VALUES, max_size=5),
)
def test_a_constructed_model_decodes_as_the_general_route_decodes_it(
    model: type[Any], kind: str | None, values: dict[str, Any]
) -> None:
    fields = {k: v for k, v in values.items() if k == "id" or k in model.model_fields}
    if kind is not None:
        fields["type"] = kind
    event = model.model_construct(**fields)
    fast = _outcome(event)
    saved = dict(_decode._MODEL_FIELD)
    _decode._MODEL_FIELD.clear()  # every model through parse_event, as before
    try:
        general = _outcome(event)
    finally:
        _decode._MODEL_FIELD.update(saved)
    assert fast == general


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (Start(id="a", name="f"), ("start", "a", "f")),
        (Delta(id="a", args_text_delta='{"x"'), ("delta", "a", '{"x"')),
        (Ready(id="a"), ("ready", "a", None)),
        (Result(id="a", result={"n": 1}), ("result", "a", {"n": 1})),
        (Error(id="a", error="boom"), ("error", "a", "boom")),
    ],
)
def test_a_valid_model_is_read_from_its_fields(event: object, expected: tuple[Any, ...]) -> None:
    assert _decode.decode(event) == expected
