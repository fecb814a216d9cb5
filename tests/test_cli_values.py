"""The command line's ``--json`` accepts every value its input accepts and writes strict JSON.

Seed streams (JSON Lines) may carry lone surrogates (as ``\\ud800`` escapes), huge integers,
deep nesting and any JSON value as a result, an error or a tool name; the report must
always be strict JSON (``NaN`` rejected) that round-trips the values.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolcall_tracker.cli import main

surrogates = st.sampled_from(["\ud800", "\udfff", "a\udc80b"])
texts = st.one_of(st.text(max_size=8), surrogates)
values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**40), max_value=10**40),
        st.floats(allow_nan=False, allow_infinity=False),
        texts,
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=12,
)


def reject(name: str) -> Any:
    raise ValueError(f"not strict JSON: {name}")


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=texts.filter(bool), result=values, error=values, args=values)
def test_replay_json_is_strict_whatever_the_values(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    result: Any,
    error: Any,
    args: Any,
) -> None:
    events = [
        {"type": "start", "id": "a", "name": name},
        {"type": "delta", "id": "a", "argsTextDelta": json.dumps(args)},
        {"type": "ready", "id": "a"},
        {"type": "result", "id": "a", "result": result},
        {"type": "start", "id": "b", "name": name},
        {"type": "error", "id": "b", "error": error},
        {"type": "end", "ok": True},
    ]
    path = tmp_path / "values.jsonl"
    path.write_text("\n".join(json.dumps(event) for event in events) + "\n", encoding="ascii")
    for extra in ([], ["--events"]):
        capsys.readouterr()
        code = main(["replay", str(path), "--format", "seed", "--json", *extra])
        out = capsys.readouterr().out
        assert code in (0, 1)
        out.encode("utf-8")  # no raw lone surrogate
        report = json.loads(out, parse_constant=reject)
        calls = {call["id"]: call for call in report["calls"]}
        assert calls["a"]["name"] == name
        assert calls["a"]["result"] == result
        assert calls["a"]["args"] == args
        assert calls["b"]["error"] == error
