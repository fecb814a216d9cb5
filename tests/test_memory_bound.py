"""A call's memory stays near the size of its text, whatever the fragment size.

Measured with tracemalloc on one pending call: tiny fragments (one character each) used to
cost about 60 bytes per character in list slots and string headers; the machine now joins
small fragments as they accumulate, so a pending call holds at most about 4 bytes per
character of text (the widest string kind, for characters outside the BMP) plus a constant.
"""

from __future__ import annotations

import tracemalloc

import pytest

from toolcall_tracker import Limits, Status, tool_call_streaming_state_machine

CHARS = 100_000
CONSTANT = 64 * 1024  # bytes: the joined-tail scratch and list slots, per call


@pytest.mark.parametrize("char", ["x", "\u4e2d", "\U0001f600"], ids=["ascii", "cjk", "astral"])
@pytest.mark.parametrize("size", [1, 7, 300])
def test_a_pending_call_holds_about_its_text(char: str, size: int) -> None:
    width = 1 if char.isascii() else (2 if ord(char) < 0x10000 else 4)
    machine = tool_call_streaming_state_machine(limits=Limits(max_args_chars=CHARS))
    machine.write_start("a", "f")
    fragment = char * size
    count = CHARS // size
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(count):
            machine.write_delta("a", fragment)
        held = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    text = count * size
    assert held <= text * width * 1.1 + CONSTANT, (held, text)
    machine.write_delta("a", "")
    assert machine.status("a") is Status.PENDING
    assert machine.get("a").args_text == fragment * count  # type: ignore[union-attr]


def test_a_hostile_call_past_its_limit_releases_its_text() -> None:
    machine = tool_call_streaming_state_machine(limits=Limits(max_args_chars=100_000))
    machine.write_start("a", "f")
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(300_000):  # three times the limit, one character at a time
            machine.write_delta("a", "y")
        left = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert machine.status("a") is Status.ERROR
    assert left < CONSTANT
