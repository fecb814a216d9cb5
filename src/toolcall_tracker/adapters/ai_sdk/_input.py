"""The AI SDK reader's held input (private, for :mod:`toolcall_tracker.adapters.ai_sdk`).

Theory of operation
-------------------
A UI message stream announces a call (``tool-input-start``), streams its input text
(``tool-input-delta``) and then states the input that counts (``tool-input-available``):
the one the server validated, after schema defaults, stripping and ``repairToolCall``.
That input can differ from the streamed text, and the tracker's arguments are the parsed
argument text, which cannot be taken back once written. So the reader *holds* each call's
streamed text (a :class:`Held`) and writes the text of the call only at
``tool-input-available``, choosing it by :func:`input_text`:

- the streamed text, when it parses to the stated input as JSON values (numbers compared
  as JavaScript compares them: an integer beyond 2^53 equals its rounded double, so the
  streamed, exact digits are kept); that parse is handed to a machine, which then does
  not parse the same text again at ``ready`` (see ``AdapterCallTable.append_parsed``);
- else the JSON of the stated input: the server's input counts, and the streamed text is
  dropped (logged at DEBUG);
- for a text-input tool (``inputEncoding: "text"``), whose input is a plain string, the
  JSON string of the stated input (of the streamed text when no input is stated), so that
  ``ready`` parses exactly one JSON value.

A held call is made ``ready`` only once its step stands (the next ``start-step`` after its
``finish-step``, or the turn's end: a ``reset-step`` may follow ``finish-step``), and never
while it waits for approval: see the adapter's docstring for the whole mapping.
"""

from __future__ import annotations

import sys
from collections.abc import Container, Iterable, Mapping
from typing import Any, Final

from pydantic_core import to_json

from ..._json import _ArgumentsError, parse_json
from .._calls import AdapterCall
from .._common import NOT_PARSED, _get, _json_text, logger

__all__ = ["MISSING", "Held", "forget", "input_text", "json_equal", "resize", "settle"]

MISSING: Final[Any] = object()
_EXACT: Final = 2**53


class Held:
    """One call's state while the reader holds it back from ``ready``.

    ``record``: the call's record in the table. ``parts``: the streamed text; ``room``: how
    many more characters it may grow by before it outgrows ``limit`` (the sink's
    ``Limits.max_args_chars``; negative: it has). ``text_input``: the tool takes a plain
    string (``inputEncoding: "text"``). ``available``: its input was stated and written
    (``tool-input-available``), it waits for the end of its step. ``approval_id``: a
    ``tool-approval-request`` holds it until a decision.
    """

    __slots__ = ("approval_id", "available", "limit", "parts", "record", "room", "text_input")

    def __init__(self, record: AdapterCall, text_input: bool, limit: int = sys.maxsize) -> None:
        self.record = record
        self.parts: list[str] = []
        self.limit = self.room = limit
        self.text_input = text_input
        self.available = False
        self.approval_id: str | None = None

    def add(self, text: str) -> bool:
        """Hold ``text``; whether the held text still fits (``False``: it outgrew)."""
        self.parts.append(text)
        room = self.room - len(text)
        self.room = room
        return room >= 0

    def due(self) -> bool:
        """Whether the call is ready at the end of its step: its input was stated, and no
        approval holds it."""
        return self.available and self.approval_id is None

    def text(self) -> str:
        return "".join(self.parts)


def forget(held: dict[str, Held], streams: dict[str, Held], keep: Container[str]) -> None:
    """Forget the held calls whose ids are not in ``keep`` (the table's records), from
    ``held`` (every held call) and ``streams`` (those whose input is not stated yet)."""
    for key in [key for key in held if key not in keep]:
        del held[key]
        streams.pop(key, None)


def resize(streams: Iterable[Held], max_args_chars: int) -> None:
    """Give held calls the room a new ``Limits.max_args_chars`` leaves them (no text read)."""
    for held in streams:
        held.room += max_args_chars - held.limit
        held.limit = max_args_chars


def settle(held: Held, item: Any) -> tuple[str | None, Any, Any]:
    """Settle a held call at its ``tool-input-available`` part ``item``: the argument text
    to write (``None``: the stated input cannot be written as JSON, nothing changed), its
    parse when made here (else ``NOT_PARSED``) and the stated input. Once settled, the call's
    input is available and its fragments are dropped (the text written holds them)."""
    if type(item) is dict:  # the commonest
        given, text_input = item.get("input", MISSING), item.get("inputEncoding") == "text"
    else:
        given = item.get("input", MISSING) if isinstance(item, Mapping) else MISSING
        text_input = _get(item, "inputEncoding") == "text"
    if text_input:
        held.text_input = True
    text, replaced, parsed = input_text(held, given)
    if text is not None:
        if replaced:
            logger.debug(
                "ai_sdk: call %r: the stated input replaces the streamed text %.200r",
                held.record.call_id,
                held.text(),
            )
        held.available = True
        held.parts.clear()
    return text, parsed, given


def input_text(held: Held, given: Any) -> tuple[str | None, bool, Any]:
    """The argument text to write for a call whose input is ``given`` (``MISSING`` if the
    part had none), whether the streamed text was replaced by it, and the text's parse by
    ``parse_json`` when it was made here (else ``NOT_PARSED``). ``None``: ``given`` cannot be
    written as JSON."""
    streamed = held.text()
    if held.text_input:
        value = streamed if given is MISSING else given
        replaced = given is not MISSING and given != streamed and bool(streamed)
        return _json_text(value), replaced, NOT_PARSED
    # no input (or null, as AI SDK v4 writes it); whitespace alone is no text: {} follows
    if given is MISSING or given is None:
        return (streamed if streamed.strip() else streamed + "{}"), False, NOT_PARSED
    if streamed.strip():
        parsed = _parsed_as(streamed, given)
        if parsed is not NOT_PARSED:
            return streamed, False, parsed
    return _json_text(given), bool(streamed.strip()), NOT_PARSED


def _parsed_as(text: str, value: Any) -> Any:
    """The parse of ``text`` if it is ``value`` (see :func:`json_equal`), else
    ``NOT_PARSED``."""
    try:
        parsed = parse_json(text)
    except _ArgumentsError:
        return NOT_PARSED
    try:
        if _plainly_equal(text, parsed, value) or json_equal(parsed, value):
            return parsed
    except RecursionError:
        pass
    return NOT_PARSED


def _plainly_equal(text: str, parsed: Any, value: Any) -> bool:
    """A quick sufficient test of :func:`json_equal` (``False`` proves nothing).

    Python's own equality is JavaScript's on JSON values but for one thing: a boolean
    equals a number (``True == 1``). So it decides when neither side holds a boolean: the
    streamed ``text`` writes none (no ``true`` / ``false`` in it; one inside a string
    only sends the comparison the long way), nor does ``value``'s JSON. Else equal JSON
    texts decide (they tell booleans from numbers, and the equality tells a key ``1``
    from ``"1"``)."""
    if parsed != value:
        return False
    try:
        stated = to_json(value)
    except (TypeError, ValueError):  # not plain JSON values: the full comparison decides
        return False
    if "true" in text or "false" in text:  # it may hold booleans: the JSON texts decide
        return bool(to_json(parsed) == stated)
    return (b"true" not in stated and b"false" not in stated) or to_json(parsed) == stated


def json_equal(a: Any, b: Any) -> bool:
    """JSON-typed equality as JavaScript sees it: a boolean never equals a number
    (``true != 1``), numbers compare by value (``1 == 1.0``) and an integer beyond 2^53
    equals the double it rounds to; objects by keys and values, arrays (lists or tuples)
    item by item, in order."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return bool(a == b) or (_rounds(a) and _rounds(b) and _double(a) == _double(b))
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, Mapping):
        if not isinstance(b, Mapping) or len(a) != len(b):
            return False
        return all(key in b and json_equal(value, b[key]) for key, value in a.items())
    if isinstance(a, list | tuple):
        if not isinstance(b, list | tuple) or len(a) != len(b):
            return False
        return all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _rounds(number: float) -> bool:
    """Whether JavaScript holds ``number`` only approximately (beyond 2^53)."""
    return abs(number) > _EXACT


def _double(number: float) -> float | None:
    try:
        return float(number)
    except OverflowError:
        return None
