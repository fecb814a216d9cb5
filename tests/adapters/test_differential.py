"""Differential guard: every adapter on every real recording gives what it gave before.

The snapshot (``tests/fixtures/adapter_differential.json``) was computed by
``_differential.py`` from the adapters as they were before their internals moved onto the
shared call table; each recording present here is fed to every adapter again and must give
the same calls (id, name, argument text, parsed arguments, status, error kind) and the same
``End``. The shared recordings are skipped when ``shared/real-streams`` is absent.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from _differential import ADAPTERS, SNAPSHOT, recordings, views

RECORDINGS = recordings()
# Changes made on purpose, each with its reason: there the adapter must now differ.
INTENDED: dict[tuple[str, str], str] = {
    ("own/fixtures/openai_responses/custom_tool_call.sse", "openai_responses"): (
        "a custom tool's call was dropped silently; it is now a call (issue 21)"
    ),
}
SNAPSHOTTED: dict[str, Any] = json.loads(SNAPSHOT.read_text(encoding="utf-8"))


def test_the_snapshot_covers_every_adapter() -> None:
    for key, entry in SNAPSHOTTED.items():
        assert sorted(entry) == sorted(ADAPTERS), key


def test_the_own_recordings_are_all_snapshotted() -> None:
    own = {key for key in RECORDINGS if key.startswith("own/")}
    assert own <= set(SNAPSHOTTED), sorted(own - set(SNAPSHOTTED))


@pytest.mark.parametrize("key", sorted(RECORDINGS))
def test_every_adapter_gives_what_it_gave_before(key: str) -> None:
    before = SNAPSHOTTED.get(key)
    if before is None:
        pytest.skip(f"{key} is newer than the snapshot")
    after = views(RECORDINGS[key])
    for name in ADAPTERS:
        if (key, name) in INTENDED:
            assert after[name] != before[name], f"{name} on {key}: {INTENDED[key, name]}"
        else:
            assert after[name] == before[name], f"{name} on {key}"
