"""Every registered adapter: a turn makes no reference cycle.

An adapter, its call table and the machine they write into are freed by reference
counting as soon as the turn is dropped, instead of waiting for the garbage collector
with everything they hold (the failure factory the table keeps must not be a bound
method of the adapter, say). The tests run with the collector off: whatever is still
alive then is held by a cycle. Empty turns suffice: a cycle between the adapter and its
table is there from the adapter's construction.
"""

from __future__ import annotations

import weakref
from typing import Any

import pytest

from toolcall_tracker import ToolCallTracker
from toolcall_tracker._registry import providers
from toolcall_tracker.adapters import apply_stream

_ADAPTERS = sorted((p.format, p.load("adapter")) for p in providers() if p.adapter is not None)


def test_every_built_in_adapter_is_checked() -> None:
    assert len(_ADAPTERS) >= 10


@pytest.mark.usefixtures("no_collector")
@pytest.mark.parametrize(("name", "adapter_class"), _ADAPTERS, ids=[n for n, _ in _ADAPTERS])
def test_a_turn_written_into_a_tracker_is_freed_at_once(name: str, adapter_class: Any) -> None:
    tracker, adapter = ToolCallTracker(), adapter_class()
    apply_stream(tracker, [], adapter)
    assert tracker.end is not None
    refs = [weakref.ref(adapter), weakref.ref(tracker.machine)]
    del tracker, adapter
    assert [ref() for ref in refs] == [None, None]


@pytest.mark.usefixtures("no_collector")
@pytest.mark.parametrize(("name", "adapter_class"), _ADAPTERS, ids=[n for n, _ in _ADAPTERS])
def test_an_adapter_used_through_feed_is_freed_at_once(name: str, adapter_class: Any) -> None:
    adapter = adapter_class()
    adapter.end()
    ref = weakref.ref(adapter)
    del adapter
    assert ref() is None
