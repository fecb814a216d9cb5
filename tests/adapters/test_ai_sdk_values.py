"""The AI SDK encoder's SSE lines are strict JSON, whatever the values the core accepted."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolcall_tracker.adapters import AISDKEncoder

odd = st.one_of(
    st.sampled_from(["\ud800", "a\udfffb", math.nan, math.inf, -math.inf, 10**400 // 3]),
    st.binary(max_size=6),
    st.text(max_size=6),
    st.floats(),
    st.integers(),
)
values = st.recursive(
    odd,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=10,
)


def reject(name: str) -> Any:
    raise ValueError(name)


@settings(max_examples=150, deadline=None)
@given(
    name=st.one_of(st.text(min_size=1, max_size=6), st.just("t\ud800")), result=values, error=values
)
def test_every_sse_line_is_strict_json(name: str, result: Any, error: Any) -> None:
    encoder = AISDKEncoder()
    events = [
        {"type": "start", "id": "a", "name": name},
        {"type": "delta", "id": "a", "argsTextDelta": '{"q": "\\ud800", "n": 1e400}'},
        {"type": "ready", "id": "a"},
        {"type": "result", "id": "a", "result": result},
        {"type": "start", "id": "b", "name": name},
        {"type": "error", "id": "b", "error": error},
        {"type": "end", "ok": True},
    ]
    for event in events:
        text = encoder.encode_sse(event)
        text.encode("utf-8")  # no raw lone surrogate
        for line in text.split("\n"):  # SSE lines end at LF only (not at U+0085)
            if line.startswith("data: "):
                json.loads(line[len("data: ") :], parse_constant=reject)
