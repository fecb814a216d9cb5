"""The example agent turn runs to completion and shows what the runner did."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import anyio
import pytest

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "agent_loop.py"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_agent_loop_example(backend: str, capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("agent_loop_example", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    anyio.run(module.main, backend=backend)
    out = capsys.readouterr().out
    assert "turn: ok (tool_calls)" in out
    messages = json.loads(out[out.index("[\n") :])
    assert messages[0]["role"] == "assistant"
    replies = {m["tool_call_id"]: m["content"] for m in messages[1:]}
    assert json.loads(replies["call_w2"])["error"]["kind"] == "validation"
    assert replies["call_bk"].startswith("booked 'Trip sync'")
    assert json.loads(replies["call_fx"]) == {"amount": 1344.0, "currency": "NOK"}
    # The slow eager tool started while the model was still streaming.
    assert "'call_w1'" in out.split("still streaming:")[1].splitlines()[0]


APPROVALS = EXAMPLE.parent / "approvals.py"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_approvals_example(backend: str, capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("approvals_example", APPROVALS)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    anyio.run(module.main, backend=backend)
    out = capsys.readouterr().out
    assert "(get_balance is running)" in out  # decided while another tool ran
    assert "c3 transfer     running" in out  # pending at the end of request 1
    assert "retried request 2 (nothing ran again): ['done', 'error']" in out
    messages = json.loads(out[out.index("[\n") :])
    replies = {m["tool_call_id"]: m["content"] for m in messages}
    assert replies["c3"] == "sent 300 to carol"
    assert json.loads(replies["c4"])["error"]["kind"] == "approval_denied"
