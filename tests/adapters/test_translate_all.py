"""``apply_stream`` reads a whole stream through an adapter's ``_translate_all`` (one loop,
no call per item); ``feed`` / ``write`` read one item at a time through ``_translate``.
Both routes must give the same calls and the same end, for every adapter on every
recording, and a subclass that rewrites items in its own ``_translate`` must see every item
whichever route is taken."""

from __future__ import annotations

from typing import Any

import pytest
from _differential import ADAPTERS, load_items, recordings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolcall_tracker import tool_call_streaming_state_machine
from toolcall_tracker.adapters import (
    AISDKAdapter,
    AnthropicAdapter,
    BedrockConverseAdapter,
    CohereAdapter,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
    apply_stream,
)
from toolcall_tracker.adapters._drive import _probe_for
from toolcall_tracker.adapters._protocol import SinkAdapter
from toolcall_tracker.machine import ToolCallStateMachine

RECORDINGS = recordings()
WRONG_ADAPTER = "these items look like "  # apply_stream's check only: not in item-by-item


def _calls(machine: ToolCallStateMachine) -> list[Any]:
    return [
        (c.id, c.name, c.args_text, repr(c.args), c.status, repr(c.error), repr(c.result))
        for c in machine.list()
    ]


def _whole(adapter: Any, items: list[Any]) -> tuple[Any, ...]:
    machine = tool_call_streaming_state_machine()
    try:
        apply_stream(machine, items, adapter)
    except Exception as exc:
        return _calls(machine), machine.end, type(exc)
    return _calls(machine), machine.end, None


def _one_by_one(adapter: Any, items: list[Any]) -> tuple[Any, ...]:
    machine = tool_call_streaming_state_machine()
    try:
        for item in items:
            adapter.write(item, machine)
        adapter.finish(machine)
    except Exception as exc:
        return _calls(machine), machine.end, type(exc)
    return _calls(machine), machine.end, None


@pytest.mark.parametrize("key", sorted(RECORDINGS))
def test_a_whole_stream_reads_as_its_items_one_by_one(key: str) -> None:
    items = load_items(RECORDINGS[key])
    for name, make in ADAPTERS.items():
        calls, end, raised = _whole(make(), items)
        calls_1, end_1, raised_1 = _one_by_one(make(), items)
        assert (calls, raised) == (calls_1, raised_1), f"{name} on {key}"
        if end is None or end_1 is None:
            assert end is end_1, f"{name} on {key}"
            continue
        assert end.ok == end_1.ok, f"{name} on {key}"
        if not end.reason.startswith(WRONG_ADAPTER):
            assert end.reason == end_1.reason, f"{name} on {key}"


HOT = [
    AISDKAdapter,
    AnthropicAdapter,
    BedrockConverseAdapter,
    CohereAdapter,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
]


@pytest.mark.parametrize("cls", HOT, ids=lambda cls: cls.__name__)
def test_the_hot_adapters_read_a_stream_in_one_loop(cls: type[SinkAdapter]) -> None:
    assert cls._translate_all is not SinkAdapter._translate_all


@pytest.mark.parametrize("cls", HOT, ids=lambda cls: cls.__name__)
def test_a_subclass_that_rewrites_items_sees_every_item(cls: type[SinkAdapter]) -> None:
    seen: list[Any] = []

    class Rewriting(cls):  # type: ignore[misc, valid-type]
        def _translate(self, item: Any) -> None:
            seen.append(item)
            super()._translate(item)

    assert Rewriting._translate_all is SinkAdapter._translate_all
    items: list[Any] = [{"type": "unknown"}, {"type": "unknown", "n": 2}, {}]
    apply_stream(tool_call_streaming_state_machine(), items, Rewriting())
    assert seen == items


STREAMS = [
    load_items(path)[:80] for key, path in sorted(RECORDINGS.items()) if key.startswith("own/")
]
JUNK: list[Any] = [None, 1, "x", b"", [], {}, {"type": 5}, {"type": None, "index": [0]}]
_REMOVED = object()
MIXED: dict[str, Any] = {
    **{cls.__name__: cls for cls in HOT},
    "AISDKAdapter(ready='input')": lambda: AISDKAdapter(ready="input"),
    "OpenAIChatAdapter(eager=False)": lambda: OpenAIChatAdapter(eager=False),
}


@st.composite
def _mixes(draw: st.DrawFn) -> list[Any]:
    """A real stream with items broken (a field removed, or of another type) and junk put
    in at random places: what a stream may hand over."""
    items = list(draw(st.sampled_from(STREAMS)))
    for _ in range(draw(st.integers(0, 6))):
        if not items:
            break
        at = draw(st.integers(0, len(items) - 1))
        item = items[at]
        if isinstance(item, dict) and item and draw(st.booleans()):
            key = draw(st.sampled_from(sorted(item)))
            value = draw(st.sampled_from([None, [1], 7, {}, _REMOVED]))
            items[at] = {k: v for k, v in item.items() if k != key}
            if value is not _REMOVED:
                items[at][key] = value
        else:
            items.insert(at, draw(st.sampled_from(JUNK + items)))
    return items


@pytest.mark.parametrize("name", sorted(MIXED))
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_mix_of_items_reads_alike_either_way(name: str, data: Any) -> None:
    """The one-loop reading keeps nothing from one item to the next that the per-item
    reading would not: on any mix of real, broken and junk items both agree."""
    cls = MIXED[name]
    items = data.draw(_mixes())
    calls, end, raised = _whole(cls(), items)
    calls_1, end_1, raised_1 = _one_by_one(cls(), items)
    assert (calls, raised) == (calls_1, raised_1)
    assert (end is None) == (end_1 is None)
    if end is not None and end_1 is not None:
        verdict = _verdict(cls(), items)  # apply_stream's check, which writes ok=False
        if verdict is not None and end.reason == verdict:
            assert not end.ok
        else:
            assert (end.ok, end.reason) == (end_1.ok, end_1.reason)


def _verdict(adapter: Any, items: list[Any]) -> str | None:
    """What ``apply_stream``'s wrong-adapter check says of ``items`` (``None``: nothing)."""
    probe = _probe_for(adapter)
    assert probe is not None
    for item in items:
        if not probe.see(item):
            break
    return probe.verdict()
