"""The ``replay --json`` document.

Its ``ignored`` and ``timeline`` entries are serialised one by one as the replay produces
them, one compact line each, into a :class:`~._spool.Spool`, and the document is written at
the end: memory stays bounded however long the stream is. A value that cannot be JSON
falls back to a text description, entry by entry.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import IO, Any

from pydantic import BaseModel

from .._jsonout import _json_text
from ..calls import ToolCall
from ..reducer import IgnoreReason
from ._replay import Replay
from ._spool import Spool
from ._text import write
from ._timeline import Step


def _plain(value: Any) -> Any:
    """``value`` as plain JSON data by the library's output rules (NaN and infinities are
    ``null``, odd objects their text; lone surrogates kept, to be written as escapes)."""
    return json.loads(_json_text(value))


def _event_json(event: Any) -> Any:
    """An event as plain JSON (its wire shape), whatever it holds."""
    if isinstance(event, BaseModel):
        event = event.model_dump(by_alias=True, warnings=False)
    return _plain(event)


def _call_json(call: ToolCall) -> Any:
    """A call in its wire shape (``argsText``), whatever its arguments or result hold."""
    return _plain(call.model_dump(by_alias=True, warnings=False))


def _dumps(value: Any, *, indent: int | None = None) -> str:
    """Strict, ASCII JSON of plain data (lone surrogates as ``\\uXXXX`` escapes)."""
    return json.dumps(value, ensure_ascii=True, indent=indent, allow_nan=False)


def _entry(entry: dict[str, Any], event: Any) -> str:
    """One compact entry, with ``event`` as its ``"event"``."""
    return _dumps({**entry, "event": _event_json(event)})


class JsonReport:
    """The ``--json`` document: file, format, counts, calls, end, ignored (and timeline)."""

    def __init__(self) -> None:
        self._ignored = Spool()
        self._timeline = Spool()

    def ignored(self, item: int | None, event: Any, reason: IgnoreReason) -> None:
        """Serialise an ignored event, for ``ignored``."""
        self._ignored.add(_entry({"item": item, "reason": reason.value}, event))

    def step(self, step: Step) -> None:
        """Serialise one timeline entry."""
        entry = {
            "item": step.item,
            "event": None,  # replaced by the event, in this place
            "ignored": None if step.ignored is None else step.ignored.value,
            "status": None if step.status is None else step.status.value,
        }
        self._timeline.add(_entry(entry, step.event))

    def write(self, replay: Replay, stream: IO[str], *, events: bool) -> None:
        """Write the document (``events``: with the ``timeline``)."""
        end = replay.end
        calls = replay.calls
        head: dict[str, Any] = {
            "file": replay.path,
            "format": replay.format,
            "detected": replay.detected,
            "container": replay.container,
            "items": replay.items,
            "events": replay.events,
            "ok": replay.ok,
            "calls": [_call_json(call) for call in calls],
            "end": {"ok": end.ok, "reason": end.reason},
        }
        text = _dumps(head, indent=2)
        write(stream, text[: -len("\n}")])
        _write_list(stream, "ignored", self._ignored)
        if events:
            _write_list(stream, "timeline", self._timeline)
        write(stream, "\n}\n")

    def close(self) -> None:
        """Release the spooled entries."""
        self._ignored.close()
        self._timeline.close()


def _write_list(stream: IO[str], key: str, entries: Iterable[str]) -> None:
    """``,\\n  "key": [`` then the entries, one per line, then ``]``."""
    write(stream, f',\n  "{key}": [')
    separator = "\n    "
    for entry in entries:
        write(stream, separator + entry)
        separator = ",\n    "
    write(stream, "\n  ]" if separator != "\n    " else "]")
